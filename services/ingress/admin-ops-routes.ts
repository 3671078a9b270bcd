/**
 * Admin operations (bearer ADMIN_TOKEN): read any topic of the event log (so the embedded default
 * can be inspected without Kafka tools), rebuild a projection while the service runs, and let a
 * projection stopped on one event go past it.
 */
import type { adminGuard } from './admin-routes.ts';
import { Type } from '@sinclair/typebox';
import { AnyKeyRecord } from '../../shared/domain/any-key-record.ts';
import { Readable } from 'node:stream';
import { type EventLog, UnknownTopicError } from '../../shared/ports/event-log.ts';
import { allTopics, deploymentTopic, TOPICS, topicPrefix, type Topics } from '../../shared/topics.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import type { ReadModels } from '../../shared/ports/read-models.ts';
import { projectionStatuses } from '../projections/projection-status.ts';
import { isReplayable, REPLAYABLE, replayProjection } from '../projections/replay.ts';
import { isSkippable, SKIPPABLE, SKIPPED_EVENTS_STREAM, skipEvent } from '../projections/skipped-events.ts';
import type { Health } from '../runtime/health.ts';
import { ProblemError } from './errors.ts';
import type { TypedApp } from './typed-app.ts';
import { problemResponses } from './problem-responses.ts';

export interface AdminOpsDeps {
  eventLog: EventLog;
  eventStore: EventStore;
  /** The events as stored (personal fields sealed): a skip names an event whose fields may not open. */
  storedEvents?: EventStore;
  readModels?: ReadModels;
  /** This process's parts: a projection that runs here and stopped is known before its stop is recorded. */
  health?: Health;
  requireAdmin: ReturnType<typeof adminGuard>;
  /** This deployment's topics (TOPIC_PREFIX applied): the only ones the reader reads. */
  topics?: Topics;
}

/**
 * A record's value as shown: parsed when it is JSON that writes back to the very same text (every
 * value the service writes), otherwise the text as stored. A dead letter is shown as received, not
 * as a parse rewrites it (a 20-digit number rounded, a repeated key dropped, -0 made 0).
 */
const shownValue = (text: string): { value: unknown; valueFormat: 'json' | 'text' } => {
  try {
    const parsed: unknown = JSON.parse(text);
    if (JSON.stringify(parsed) === text) return { value: parsed, valueFormat: 'json' };
  } catch {
    // Not JSON: shown as the text it is.
  }
  return { value: text, valueFormat: 'text' };
};

export const registerAdminOpsRoutes = (app: TypedApp, deps: AdminOpsDeps): void => {
  const security = [{ adminToken: [] }];
  const topics = deps.topics ?? TOPICS;
  const problems = problemResponses(400, 401, 404);

  app.get(
    '/api/admin/topics/:topic/messages',
    {
      onRequest: deps.requireAdmin,
      schema: {
        tags: ['Admin'],
        summary: "Read messages of one of this deployment's topics",
        description:
          `The topic is one of ${allTopics(topics).join(', ')}` +
          (topicPrefix(topics) ? `, named with or without its prefix ${topicPrefix(topics)}` : '') +
          "; another name is a 404 (on a shared Kafka cluster it would be another deployment's topic). " +
          'Messages in (partition, offset) order, at most `limit`, and no more than fit in 16 MiB of keys, values and headers (one at least): a record may be as large as a call. Read on from the last offset in its partition.',
        security,
        params: Type.Object({ topic: Type.String({ minLength: 1, maxLength: 249 }) }),
        querystring: Type.Object(
          {
            fromOffset: Type.Optional(
              Type.Integer({
                minimum: 0,
                maximum: Number.MAX_SAFE_INTEGER,
                default: 0,
                description: 'First offset to read, in each partition.',
              }),
            ),
            limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
            partition: Type.Optional(
              Type.Integer({ minimum: 0, maximum: 1_000_000, description: 'Only this partition; default all.' }),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            messages: Type.Array(
              Type.Object({
                partition: Type.Integer(),
                offset: Type.String({ description: 'Offsets are 64-bit: a decimal string.' }),
                key: Type.String(),
                headers: AnyKeyRecord(Type.String()),
                value: Type.Unknown({
                  description:
                    'Parsed when the stored value is JSON that writes back to the same text (valueFormat json), else the text exactly as stored (valueFormat text).',
                }),
                valueFormat: Type.Union([Type.Literal('json'), Type.Literal('text')]),
                timestamp: Type.String(),
              }),
            ),
          }),
          ...problems,
        },
      },
    },
    async (request) => {
      const asked = request.params.topic;
      const { fromOffset = 0, limit = 100, partition } = request.query;
      const topic = deploymentTopic(topics, asked);
      if (topic === undefined)
        throw new ProblemError('NOT_FOUND', `No topic ${asked} in this deployment.`, {
          errors: [{ field: 'topic', message: `must be one of ${allTopics(topics).join(', ')}` }],
        });
      try {
        const records = await deps.eventLog.read(topic, {
          fromOffset: BigInt(fromOffset),
          limit,
          ...(partition === undefined ? {} : { partition }),
        });
        return {
          messages: records.map((r) => ({
            partition: r.partition,
            offset: r.offset.toString(),
            key: r.key,
            headers: r.headers,
            ...shownValue(r.value),
            timestamp: r.timestamp.toISOString(),
          })),
        };
      } catch (error) {
        // One of ours that nothing has created yet (a Kafka cluster that creates topics on first use): it holds nothing.
        if (error instanceof UnknownTopicError) return { messages: [] };
        throw error;
      }
    },
  );

  app.post(
    '/api/admin/projections/:projection/replay',
    {
      onRequest: deps.requireAdmin,
      schema: {
        tags: ['Admin'],
        summary: 'Rebuild a projection from the event store while the service runs, then switch reads to it',
        description: `Streams progress as newline-delimited JSON. Replayable: ${REPLAYABLE.join(', ')}.`,
        security,
        params: Type.Object({ projection: Type.String() }),
        response: { 200: Type.Unknown({ description: 'application/x-ndjson progress lines' }), ...problems },
      },
    },
    async (request, reply) => {
      const { projection } = request.params;
      if (!isReplayable(projection) || !deps.readModels) {
        throw new ProblemError(
          'NOT_FOUND',
          `No replayable projection ${projection}; replayable: ${REPLAYABLE.join(', ')}.`,
          { errors: [{ field: 'projection', message: `must be one of ${REPLAYABLE.join(', ')}` }] },
        );
      }
      const readModels = deps.readModels;
      const lines = async function* () {
        try {
          for await (const progress of replayProjection(projection, { eventStore: deps.eventStore, readModels }))
            yield `${JSON.stringify(progress)}\n`;
        } catch (error) {
          request.log.error({ err: error, projection }, 'replay failed');
          yield `${JSON.stringify({ projection, phase: 'failed', error: 'the replay failed; the current version keeps serving reads (see the service log)' })}\n`;
        }
      };
      return reply.type('application/x-ndjson').send(Readable.from(lines()));
    },
  );

  app.post(
    '/api/admin/projections/:projection/skip',
    {
      onRequest: deps.requireAdmin,
      schema: {
        tags: ['Admin'],
        summary: 'Skip the one event a projection stopped or got stuck on',
        description: `A projection that cannot project an event stops, names the event's position in its log line, in GET /readyz and in GET /api/admin/projections, and waits; one that keeps failing on an event with an error that proves nothing against it is reported stuck on it the same way, and keeps retrying. This records a ProjectionEventSkipped event (stream ${SKIPPED_EVENTS_STREAM}); the projection resumes after it within seconds. Only the event the projection is stopped or stuck on can be skipped (409 otherwise): a skip is permanent, and replays honour it too. Skippable: ${SKIPPABLE.join(', ')}.`,
        security,
        params: Type.Object({ projection: Type.String() }),
        body: Type.Object(
          {
            position: Type.String({
              pattern: '^[0-9]{1,20}$',
              description: 'Global position of the event, as the log line and /readyz show it',
            }),
            reason: Type.String({
              minLength: 1,
              maxLength: 1000,
              description: 'Why it is skipped (kept with the skip)',
            }),
          },
          { additionalProperties: false },
        ),
        response: {
          201: Type.Object({
            projection: Type.String(),
            position: Type.String(),
            reason: Type.String(),
            skippedAt: Type.String(),
          }),
          ...problemResponses(400, 401, 404, 409),
        },
      },
    },
    async (request, reply) => {
      const { projection } = request.params;
      if (!isSkippable(projection))
        throw new ProblemError(
          'NOT_FOUND',
          `No skippable projection ${projection}; skippable: ${SKIPPABLE.join(', ')}.`,
          { errors: [{ field: 'projection', message: `must be one of ${SKIPPABLE.join(', ')}` }] },
        );
      const [event] = await (deps.storedEvents ?? deps.eventStore).readAll({
        after: BigInt(request.body.position) - 1n,
        maxCount: 1,
      });
      if (!event || event.position !== BigInt(request.body.position)) {
        throw new ProblemError('NOT_FOUND', `No event at position ${request.body.position}.`, {
          errors: [{ field: 'position', message: 'must be the position of an event in the event store' }],
        });
      }
      // A skip is permanent (replays honour it too): an event the projection is not stopped on
      // would be left out of it for good, silently. Its stop is recorded in the store, so any
      // process can tell, and a projection that runs here is known stopped before it is recorded.
      const status = (
        await projectionStatuses({ eventStore: deps.eventStore, readModels: deps.readModels, health: deps.health })
      ).find((p) => p.name === projection);
      if (status?.stoppedOn === undefined || BigInt(status.stoppedOn.position) !== event.position) {
        const held = status?.state === 'stuck' ? 'stuck' : 'stopped';
        const now = status?.stoppedOn
          ? `it is ${held} on position ${status.stoppedOn.position}`
          : status?.state === 'running'
            ? 'it is running'
            : 'it is not stopped or stuck on any event';
        const rule = `${projection} is not ${held} on position ${event.position}; ${now}`;
        throw new ProblemError(
          'CONFLICT',
          `${rule}. Only the event a projection stopped or got stuck on can be skipped (see GET /api/admin/projections).`,
          { errors: [{ field: 'position', message: rule }] },
        );
      }
      const skipped = await skipEvent(deps.eventStore, {
        projection,
        position: request.body.position,
        reason: request.body.reason,
      });
      request.log.warn(
        {
          projection,
          position: skipped.position,
          streamId: event.streamId,
          eventType: event.type,
          reason: skipped.reason,
        },
        'projection event skipped by an operator',
      );
      return reply.code(201).send(skipped);
    },
  );
};
