/**
 * The Call aggregate's event catalogue: category `call`, streams `call-{callId}`, and the shape of
 * each event as stored (docs/decisions/0016-event-catalogues-and-upcasting.md).
 *
 * Versions:
 * - TranscriptRecorded v1 (before segments existed) carries the text only; v2 carries `segments`,
 *   who said what and when. The upcaster derives v1's segments from its text, as the transcript
 *   export always did for such events, so the call's state, the history and a replay read one shape.
 * Every other type is at version 1.
 */
import { Type } from '@sinclair/typebox';
import { AnyKeyRecord } from '../any-key-record.ts';
import { DURATION_UNITS } from '../submission/duration.ts';
import { segmentsFromText } from '../transcript/transcript-segments.ts';
import { type Decoded, type EventCatalogue, eventCatalogue } from '../event-catalogue.ts';
import type { RecordedEvent } from '../../ports/event-store.ts';
import { withoutPersonal } from './personal-fields.ts';
import type { CallEvent } from './call-events.ts';
import { CallErasedSchema, CallRetriedSchema, TranscriptRecordedSchema } from './event-schemas.ts';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);
const Instant = Type.String({ format: 'date-time' });
const Minutes = Type.Object({ reservedMinutes: Type.Number(), autoRechargedMinutes: Type.Number() });

const DealSchema = Type.Object({
  dealSize: Type.Optional(Type.Number()),
  revenueCollected: Type.Optional(Type.Number()),
  dealDate: Type.Optional(Type.String()),
  notes: Type.Optional(Type.String()),
});

const SubmissionSchema = Type.Object({
  transcript: Type.Optional(
    Type.Object({ text: Type.String(), truncated: Type.Boolean(), originalBytes: Type.Number() }),
  ),
  audioUrl: Type.Optional(Type.String()),
  repName: Type.Optional(Type.String()),
  repEmail: Type.Optional(Type.String()),
  callTitle: Type.Optional(Type.String()),
  aiTitleEnabled: Type.Boolean(),
  callDate: Type.Optional(Type.String()),
  duration: Type.Optional(
    Type.Object({
      seconds: Type.Number(),
      unit: Type.Union(DURATION_UNITS.map((unit) => Type.Literal(unit))),
      basis: Type.Union(
        (['explicit', 'source', 'magnitude', 'audio', 'transcript'] as const).map((basis) => Type.Literal(basis)),
      ),
      raw: Type.Number(),
    }),
  ),
  tags: Type.Array(Type.String()),
  notes: Type.Optional(Type.String()),
  metadata: AnyKeyRecord(Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()])),
  deal: Type.Optional(DealSchema),
});

const AttributionSchema = Type.Union([
  Type.Object({ kind: Type.Literal('member'), memberId: Type.String(), email: Type.String(), name: Type.String() }),
  Type.Object({ kind: Type.Literal('owner'), email: Type.String(), name: Type.String() }),
]);

const CallSubmittedSchema = Type.Object({
  callId: Type.String({ minLength: 1 }),
  teamId: Type.String({ minLength: 1 }),
  keyId: Type.String(),
  submittedAt: Instant,
  submission: SubmissionSchema,
  attributedTo: AttributionSchema,
  capacity: Minutes,
  warnings: Type.Array(Type.String()),
});

const ScoreComponentSchema = Type.Object({
  name: Type.String(),
  value: Type.Number(),
  score: Type.Number(),
  weight: Type.Number(),
  explanation: Type.String(),
});

const InsightSchema = Type.Object({
  kind: Type.Union([Type.Literal('strength'), Type.Literal('improvement')]),
  code: Type.String(),
  message: Type.String(),
  evidence: Type.String(),
});

/** TranscriptRecorded v2: segments always there. */
const TranscriptRecordedV2Schema = Type.Composite([
  Type.Omit(TranscriptRecordedSchema, ['segments']),
  Type.Required(Type.Pick(TranscriptRecordedSchema, ['segments'])),
]);

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** TranscriptRecorded v1 → v2: the segments its text holds (an event that has some keeps them). */
const transcriptSegmentsFromText = (data: unknown): unknown =>
  isRecord(data) && data.segments === undefined && typeof data.text === 'string'
    ? { ...data, segments: segmentsFromText(data.text) }
    : data;

export const callEvents: EventCatalogue<CallEvent> = eventCatalogue<CallEvent>('call', {
  CallSubmitted: { schema: CallSubmittedSchema },
  ProcessingStarted: {
    schema: Type.Object({
      mode: Type.Union([Type.Literal('audio'), Type.Literal('transcript')]),
      deadline: Instant,
      at: Instant,
    }),
  },
  AudioFetched: { schema: Type.Object({ bytes: Type.Number(), contentType: Type.String(), at: Instant }) },
  TranscriptRecorded: {
    schema: TranscriptRecordedV2Schema,
    upcasters: [transcriptSegmentsFromText],
    // Version 1 has no segments; the relay publishes events as stored.
    everyVersion: TranscriptRecordedSchema,
  },
  CallAnalysed: {
    schema: Type.Object({
      title: Type.String(),
      summary: Type.String(),
      score: Type.Number(),
      components: Type.Array(ScoreComponentSchema),
      insights: Type.Array(InsightSchema),
      engine: Type.String(),
      at: Instant,
    }),
  },
  DealRecorded: { schema: Type.Object({ deal: DealSchema, at: Instant }) },
  CallCompleted: { schema: Type.Object({ durationSeconds: Nullable(Type.Number()), at: Instant }) },
  CallFailed: { schema: Type.Object({ code: Type.String(), reason: Type.String(), at: Instant }) },
  CallRetried: { schema: CallRetriedSchema },
  CallErased: { schema: CallErasedSchema },
});

/** The stream of one call: `call-{callId}`. */
export const callStreamId = callEvents.streamId;
/** The call id of a `call-{callId}` stream, or undefined for any other stream. */
export const callIdOfStream = callEvents.idOf;

/**
 * A stored call event decoded without opening its personal fields: sealed ones read as their
 * erased placeholders (docs/decisions/0014-erasure-crypto-shredding.md). For a reader of the store
 * underneath the sealing (the open-call tracker) that needs none of them. @throws EventDecodeError
 */
export const decodeWithoutPersonal = (event: RecordedEvent): Decoded<CallEvent> =>
  callEvents.decode({ ...event, data: withoutPersonal(event.type, event.data) });
