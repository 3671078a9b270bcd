/**
 * The Call aggregate's event catalogue: category `call`, streams `call-{callId}`, and the shape of
 * each event as stored (docs/decisions/0016-event-catalogues-and-upcasting.md).
 *
 * Versions:
 * - TranscriptRecorded v1 (before segments existed) carries the text only; v2 carries `segments`,
 *   who said what and when. The upcaster derives v1's segments from its text, as the transcript
 *   export always did for such events, so the call's state, the history and a replay read one shape.
 * Every other type is at version 1.
 *
 * The shapes themselves, with what each field means, are in call-event-data.ts; the JSON Schemas
 * served for the topics derive from this catalogue (event-schemas.ts).
 */
import { type Decoded, type EventCatalogue, eventCatalogue } from '../event-catalogue.ts';
import { segmentsFromText } from '../transcript/transcript-segments.ts';
import type { RecordedEvent } from '../../ports/event-store.ts';
import { withoutPersonal } from './personal-fields.ts';
import type { CallEvent } from './call-events.ts';
import {
  AudioFetchedSchema,
  CallAnalysedSchema,
  CallCompletedSchema,
  CallErasedSchema,
  CallFailedSchema,
  CallRetriedSchema,
  CallSubmittedSchema,
  DealRecordedSchema,
  ProcessingStartedSchema,
  TranscriptRecordedSchema,
  TranscriptRecordedV2Schema,
} from './call-event-data.ts';

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** TranscriptRecorded v1 → v2: the segments its text holds (an event that has some keeps them). */
const transcriptSegmentsFromText = (data: unknown): unknown =>
  isRecord(data) && data.segments === undefined && typeof data.text === 'string'
    ? { ...data, segments: segmentsFromText(data.text) }
    : data;

export const callEvents: EventCatalogue<CallEvent> = eventCatalogue<CallEvent>('call', {
  CallSubmitted: { schema: CallSubmittedSchema },
  ProcessingStarted: { schema: ProcessingStartedSchema },
  AudioFetched: { schema: AudioFetchedSchema },
  TranscriptRecorded: {
    schema: TranscriptRecordedV2Schema,
    upcasters: [transcriptSegmentsFromText],
    // Version 1 has no segments; the relay publishes events as stored.
    everyVersion: TranscriptRecordedSchema,
  },
  CallAnalysed: { schema: CallAnalysedSchema },
  DealRecorded: { schema: DealRecordedSchema },
  CallCompleted: { schema: CallCompletedSchema },
  CallFailed: { schema: CallFailedSchema },
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
