/**
 * The JSON Schemas downstream systems validate what they receive with, and generate types from
 * (docs/decisions/0024-every-published-message-has-a-schema.md): one or two per message type on
 * the topics (/docs/events/{name}.json), one per webhook body (/docs/webhooks/{type}.json), and
 * the index listing them all with their topics, ce_type and form (/docs/events/index.json).
 */
import { Type } from '@sinclair/typebox';
import { EVENT_SCHEMAS } from '../../shared/domain/call/event-schemas.ts';
import type { JsonSchemaDocument } from '../../shared/domain/json-schema-document.ts';
import { schemaIndex } from '../../shared/domain/schema-index.ts';
import { WEBHOOK_SCHEMAS } from '../../shared/domain/webhook/webhook-bodies.ts';
import type { Topics } from '../../shared/topics.ts';
import { ProblemError } from './errors.ts';
import { problemResponses } from './problem-responses.ts';
import type { TypedApp } from './typed-app.ts';

export const SCHEMA_INDEX_PATH = '/docs/events/index.json';

/** The document named `name`; own keys only: "constructor" or "__proto__" name no schema. */
const documentOf = (documents: Readonly<Record<string, JsonSchemaDocument>>, name: string, where: string) => {
  if (Object.hasOwn(documents, name)) return documents[name]!;
  throw new ProblemError(
    'NOT_FOUND',
    `No schema ${name} in ${where}; known: ${Object.keys(documents).join(', ')} (all listed at ${SCHEMA_INDEX_PATH}).`,
    { errors: [{ field: 'name', message: `must name a schema listed at ${SCHEMA_INDEX_PATH}` }] },
  );
};

export const registerSchemaRoutes = (app: TypedApp, topics: Topics): void => {
  const index = schemaIndex(topics);
  const tags = ['Operations'];
  const params = Type.Object({ name: Type.String() });
  // A served document as it is: the response schema lets every keyword through.
  const document = (description: string) => ({
    200: {
      description,
      content: { 'application/schema+json': { schema: Type.Object({}, { additionalProperties: true }) } },
    },
    ...problemResponses(404),
  });

  app.get(
    SCHEMA_INDEX_PATH,
    {
      schema: {
        tags,
        summary: 'Every served JSON Schema, by topic, ce_type and form',
        description:
          'topics: each topic the service publishes to (named with TOPIC_PREFIX), its ce_types with the URL of each ' +
          "one's schema, and what its headers hold. schemas: every document under /docs/events/ and /docs/webhooks/ " +
          'with its ce_type (or webhook type), its topics and its form: topic (the value as on the topic, personal ' +
          'fields sealed), opened (the same payload with them open) or webhook (a webhook request body).',
        response: { 200: Type.Object({}, { additionalProperties: true, description: 'The index' }) },
      },
    },
    async () => index,
  );

  app.get(
    '/docs/events/:name.json',
    {
      schema: {
        tags,
        summary: 'JSON Schema of a message downstream systems consume',
        // Two documents for a message with personal fields (docs/decisions/0014-erasure-crypto-shredding.md).
        description:
          `Names: ${Object.keys(EVENT_SCHEMAS).join(', ')}. A type's own name is its message as it is on its ` +
          'topic, its personal fields sealed; `.opened` is the same payload with them open. One for every ce_type ' +
          `published; ${SCHEMA_INDEX_PATH} lists each with its topics.`,
        params,
        response: document('The JSON Schema (2020-12) of the message'),
      },
    },
    async (request, reply) =>
      reply.type('application/schema+json').send(documentOf(EVENT_SCHEMAS, request.params.name, '/docs/events/')),
  );

  app.get(
    '/docs/webhooks/:name.json',
    {
      schema: {
        tags,
        summary: 'JSON Schema of a webhook request body',
        description:
          `Types: ${Object.keys(WEBHOOK_SCHEMAS).join(', ')}. The whole body, {type, timestamp, data}, with ` +
          'its personal fields open.',
        params,
        response: document('The JSON Schema (2020-12) of the webhook body'),
      },
    },
    async (request, reply) =>
      reply.type('application/schema+json').send(documentOf(WEBHOOK_SCHEMAS, request.params.name, '/docs/webhooks/')),
  );
};
