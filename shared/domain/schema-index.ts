/**
 * The index of the JSON Schemas the service serves, /docs/events/index.json
 * (docs/decisions/0024-every-published-message-has-a-schema.md): each topic it publishes to, with
 * the `ce_type`s it carries, what its headers hold and the schema of each type; and every served
 * document with its topics, `ce_type` and form. A consumer finds there the document of any
 * message it reads, or of any webhook body it receives.
 */
import type { Topics } from '../topics.ts';
import { EVENT_SCHEMA_LIST, type EventSchemaForm } from './call/event-schemas.ts';
import { messageHeaders, TOPIC_MESSAGES } from './call/topic-messages.ts';
import { WEBHOOK_SCHEMA_LIST } from './webhook/webhook-bodies.ts';

export const eventSchemaUrl = (name: string) => `/docs/events/${name}.json`;
export const webhookSchemaUrl = (type: string) => `/docs/webhooks/${type}.json`;

/** One served document: what it describes and where. */
export type SchemaIndexEntry =
  | {
      name: string;
      url: string;
      ceType: string;
      /** topic: the value as it is on its topics; opened: the same payload with its personal fields open. */
      form: EventSchemaForm;
      topics: string[];
      /** The personal fields (dotted paths) that travel encrypted in `sealed`. */
      sealedFields: string[];
    }
  | { name: string; url: string; webhookType: string; form: 'webhook' };

export interface SchemaIndex {
  description: string;
  topics: Array<{
    topic: string;
    description: string;
    /** The message key. */
    key: string;
    ceSource: string | null;
    headers: Record<string, string>;
    /** Each `ce_type` and its documents; empty for a topic of records as received. */
    messages: Array<{ ceType: string; schema: string; opened: string | null }>;
  }>;
  schemas: SchemaIndexEntry[];
}

const urlOf = (ceType: string, form: EventSchemaForm): string | null => {
  const entry = EVENT_SCHEMA_LIST.find((schema) => schema.ceType === ceType && schema.form === form);
  return entry ? eventSchemaUrl(entry.name) : null;
};

/** The index, naming the topics as this deployment does (`topics`: TOPIC_PREFIX applied). */
export const schemaIndex = (topics: Topics): SchemaIndex => ({
  description:
    'The JSON Schemas (draft 2020-12) of every message the service publishes on its topics and of every webhook ' +
    'body it sends. Topic messages are CloudEvents 1.0 in binary mode: the ce_* attributes are headers and the ' +
    'value is the JSON the schema describes; a message about a call carries its personal fields encrypted in ' +
    'sealed (form topic); form opened is the same payload with them open.',
  topics: (Object.keys(TOPIC_MESSAGES) as Array<keyof Topics>).map((key) => {
    const published = TOPIC_MESSAGES[key];
    const asReceived = published.ceSource === undefined;
    return {
      topic: topics[key],
      description: published.description,
      key: asReceived ? 'as received' : 'the call id',
      ceSource: published.ceSource ?? null,
      headers: asReceived ? { ...published.headers } : messageHeaders(published),
      messages: published.ceTypes.map((ceType) => {
        const schema = urlOf(ceType, 'topic');
        // Every type a topic carries has its document: the index is not built without.
        if (schema === null) throw new Error(`${ceType} on ${topics[key]} has no served schema`);
        return { ceType, schema, opened: urlOf(ceType, 'opened') };
      }),
    };
  }),
  schemas: [
    ...EVENT_SCHEMA_LIST.map((schema): SchemaIndexEntry => ({
      name: schema.name,
      url: eventSchemaUrl(schema.name),
      ceType: schema.ceType,
      form: schema.form,
      topics: schema.topics.map((key) => topics[key]),
      sealedFields: [...schema.sealedFields],
    })),
    ...WEBHOOK_SCHEMA_LIST.map(({ type }): SchemaIndexEntry => ({
      name: type,
      url: webhookSchemaUrl(type),
      webhookType: type,
      form: 'webhook',
    })),
  ],
});
