/**
 * The one place a TranscriptRecorded event's segments are read: events recorded before segments
 * existed carry none, and get those their text holds (`segmentsFromText`), so every reader (the
 * call's state, the transcript export, the analyser) sees the same segments for the same event.
 */
import { segmentsFromText, type TranscriptSegment } from '../transcript/transcript-segments.ts';
import type { TranscriptRecorded } from './call-events.ts';

export type RecordedTranscript = TranscriptRecorded['data'] & { segments: TranscriptSegment[] };

/** The event's segments, or those derived from its text when it has none. */
export const transcriptSegments = (data: TranscriptRecorded['data']): TranscriptSegment[] =>
  data.segments ?? segmentsFromText(data.text);

/** The event's data with its segments present. */
export const withSegments = (data: TranscriptRecorded['data']): RecordedTranscript =>
  data.segments ? (data as RecordedTranscript) : { ...data, segments: transcriptSegments(data) };
