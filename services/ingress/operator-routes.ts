/**
 * Operator controls (bearer ADMIN_TOKEN): how each projection is doing, sending dead letters back
 * to their source topic, and retrying a failed call.
 */
import { Type } from '@sinclair/typebox';
import { AnyKeyRecord } from '../../shared/domain/any-key-record.ts';
import { RETRIABLE_FAILURE_CODES } from '../../shared/domain/call/retriable-failures.ts';
import { CallRetriedSchema } from '../../shared/domain/call/call-event-data.ts';
import type { EventLog } from '../../shared/ports/event-log.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import type { ReadModels } from '../../shared/ports/read-models.ts';
import { deploymentTopic, TOPICS, type Topics } from '../../shared/topics.ts';
import { PROJECTION_STATUS_STREAM, projectionStatuses } from '../projections/projection-status.ts';
import type { Health } from '../runtime/health.ts';
import type { adminGuard } from './admin-routes.ts';
import { createCallRetry } from './call-retry.ts';
import { REDRIVEN_FROM_HEADER, redriveDeadLetters } from './dead-letter-redrive.ts';
import { ProblemError } from './errors.ts';
import type { TeamService } from './teams/team-service.ts';
import type { TypedApp } from './typed-app.ts';
import { problemResponses } from './problem-responses.ts';

export interface OperatorDeps {
  eventLog: EventLog;
  eventStore: EventStore;
  teams: TeamService;
  readModels?: ReadModels;
  /** This process's parts: the live state of projections that run here. */
  health?: Health;
  topics?: Topics;
  now?: () => Date;
  requireAdmin: ReturnType<typeof adminGuard>;
}

const security = [{ adminToken: [] }];
const Position = Type.String({
  pattern: '^[0-9]+$',
  description: 'A global position of the event store (64-bit: a decimal string).',
});

const ProjectionStatusSchema = Type.Object({
  name: Type.String({ description: 'call-history, deals or call-events-relay' }),
  checkpoint: Position,
  head: Position,
  lag: Type.Integer({ minimum: 0, description: 'head − checkpoint: events not yet applied.' }),
  version: Type.Union([Type.Integer(), Type.Null()], {
    description: 'The read-model version reads use (a replay activates a new one); null for the relay.',
  }),
  state: Type.Union(
    [Type.Literal('running'), Type.Literal('stopped'), Type.Literal('stuck'), Type.Literal('unknown')],
    {
      description:
        'stopped on an event it cannot project (recorded in the store, so every process says so); stuck on an event it keeps failing on with an error that proves nothing against it, still retrying it (recorded the same way); running as reported by this process, which runs it; unknown when another process runs it (the lag shows whether it moves).',
    },
  ),
  stoppedOn: Type.Optional(
    Type.Object(
      {
        position: Position,
        streamId: Type.String(),
        eventType: Type.String(),
        error: Type.String(),
        at: Type.Optional(Type.String()),
      },
      {
        description:
          'The event it stopped or is stuck on and why; skip it with POST /api/admin/projections/:projection/skip.',
      },
    ),
  ),
  thisProcess: Type.Optional(
    AnyKeyRecord(Type.Unknown(), {
      description: "This process's live report of the projection (as in /readyz).",
    }),
  ),
});

export const registerOperatorRoutes = (app: TypedApp, deps: OperatorDeps): void => {
  const topics = deps.topics ?? TOPICS;
  const retryCall = createCallRetry({ eventStore: deps.eventStore, teams: deps.teams, now: deps.now });

  app.get(
    '/api/admin/projections',
    {
      onRequest: deps.requireAdmin,
      schema: {
        tags: ['Admin'],
        summary: 'Each projection: checkpoint, head of the event store, lag, version and state',
        description: `Checkpoints, the head and stops (stream ${PROJECTION_STATUS_STREAM}) are read from the store, so any process answers the same; the running state is known only where the projection runs.`,
        security,
        response: {
          200: Type.Object({ head: Position, projections: Type.Array(ProjectionStatusSchema) }),
          ...problemResponses(401, 503),
        },
      },
    },
    async () => {
      const projections = await projectionStatuses({
        eventStore: deps.eventStore,
        readModels: deps.readModels,
        health: deps.health,
      });
      return { head: projections[0]?.head ?? '0', projections };
    },
  );

  app.post(
    '/api/admin/topics/:topic/redrive',
    {
      onRequest: deps.requireAdmin,
      schema: {
        tags: ['Admin'],
        summary: 'Send dead letters back to their source topic',
        description:
          `Only the dead-letter topic (${topics.deadLetter}, named with or without TOPIC_PREFIX) can be redriven. Each record goes back to its dlq_source_topic with its original key, value and headers, ` +
          `plus ${REDRIVEN_FROM_HEADER}: topic/partition/offset of the dead letter. A copy that fails again is dead-lettered again, once; nothing is redriven automatically.`,
        security,
        params: Type.Object({ topic: Type.String({ minLength: 1, maxLength: 249 }) }),
        body: Type.Object(
          {
            partition: Type.Optional(
              Type.Integer({
                minimum: 0,
                maximum: 1_000_000,
                description: 'Only this partition of the dead-letter topic; default all.',
              }),
            ),
            fromOffset: Type.Optional(
              Type.Integer({
                minimum: 0,
                maximum: Number.MAX_SAFE_INTEGER,
                description:
                  'First offset to redrive, in each partition read that fromOffsets does not name; default 0.',
              }),
            ),
            fromOffsets: Type.Optional(
              AnyKeyRecord(Type.String({ pattern: '^[0-9]{1,16}$' }), {
                description:
                  'First offset to redrive per partition ({"0": "12", "1": "7"}): send back the nextOffsets of the last answer to page on; a partition it does not name starts at fromOffset.',
              }),
            ),
            limit: Type.Integer({ minimum: 1, maximum: 1000, description: 'Most dead letters to read.' }),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({
            redriven: Type.Integer(),
            records: Type.Array(
              Type.Object({
                partition: Type.Integer(),
                offset: Type.String(),
                sourceTopic: Type.String(),
                sourcePartition: Type.Union([Type.String(), Type.Null()]),
                sourceOffset: Type.Union([Type.String(), Type.Null()]),
                redrivenTo: Type.Object({ partition: Type.Integer(), offset: Type.String() }),
              }),
            ),
            skipped: Type.Array(
              Type.Object({ partition: Type.Integer(), offset: Type.String(), reason: Type.String() }),
            ),
            nextOffsets: AnyKeyRecord(Type.String(), {
              description:
                'Where to continue, per partition: the offset after the last dead letter read, or where its read began. Without partition it names every partition: send it back as fromOffsets until nothing is redriven or skipped.',
            }),
            nextOffset: Type.Union([Type.String(), Type.Null()], {
              description: 'The same for the partition asked for; null without one.',
            }),
          }),
          ...problemResponses(400, 401, 503),
        },
      },
    },
    async (request) => {
      const { topic } = request.params;
      // Behind a TOPIC_PREFIX, named with it or without it, as the topic reader takes it.
      if (deploymentTopic(topics, topic) !== topics.deadLetter) {
        throw new ProblemError('VALIDATION_FAILED', `Only the dead-letter topic can be redriven; ${topic} is not it.`, {
          errors: [
            {
              field: 'topic',
              message: `must be the dead-letter topic ${topics.deadLetter}: only dead letters go back to the topic they came from`,
            },
          ],
        });
      }
      const { partition, fromOffset = 0, fromOffsets = {}, limit } = request.body;
      const notPartitions = Object.keys(fromOffsets).filter((key) => !/^(0|[1-9][0-9]{0,6})$/.test(key));
      if (notPartitions.length > 0)
        throw new ProblemError('VALIDATION_FAILED', 'fromOffsets is keyed by partition numbers.', {
          errors: notPartitions.map((key) => ({
            field: `fromOffsets.${key}`,
            message: 'must be keyed by a partition number (0, 1, …), as nextOffsets is',
          })),
        });
      const result = await redriveDeadLetters(deps.eventLog, topics, {
        partition,
        fromOffset: BigInt(fromOffset),
        fromOffsets: new Map(Object.entries(fromOffsets).map(([key, offset]) => [Number(key), BigInt(offset)])),
        limit,
      });
      request.log.warn(
        { topic, partition, fromOffset, redriven: result.redriven, skipped: result.skipped.length },
        'dead letters redriven by an operator',
      );
      return result;
    },
  );

  app.post(
    '/api/admin/calls/:callId/retry',
    {
      onRequest: deps.requireAdmin,
      schema: {
        tags: ['Admin'],
        summary: 'Retry a failed call from its last good step',
        description:
          `Only a failed call whose failure trying again can change: ${RETRIABLE_FAILURE_CODES.join(', ')}. Capacity is reserved again as at ingest (402 when none is left), ` +
          'a CallRetried event is recorded (calls.events.v1: call.retried) and the processor resumes the call with a deadline of PROCESSING_TIMEOUT_MS from now.',
        security,
        params: Type.Object({ callId: Type.String({ minLength: 1, maxLength: 200 }) }),
        response: {
          202: Type.Composite(
            [
              Type.Object({ callId: Type.String(), teamId: Type.String(), status: Type.Literal('pending') }),
              CallRetriedSchema,
            ],
            { additionalProperties: false },
          ),
          ...problemResponses(401, 402, 404, 409, 503),
        },
      },
    },
    async (request, reply) => reply.code(202).send(await retryCall(request.params.callId, request.log)),
  );
};
