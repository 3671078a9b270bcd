/**
 * A transcript's segments: who said what, and when. An engine that times its words gives them
 * (the OpenAI-compatible engine's `verbose_json` segments, pocketsphinx's utterances); otherwise
 * they are read from the text (`segmentsFromText`): one per WebVTT/SRT cue with the cue's times and
 * voice, else one per line with its `Speaker:` label and no times.
 *
 * Bounds (a segment is stored in the call's TranscriptRecorded event, so it is bounded like the
 * transcript itself): at most `SEGMENT_LIMITS.maxSegments`, their text together at most
 * `SEGMENT_LIMITS.maxTextBytes` of UTF-8 (the inline transcript's own cap), a speaker at most
 * `SEGMENT_LIMITS.maxSpeakerChars`; text past the byte bound is cut on a character boundary, never
 * in the middle of one. Past the count bound nothing is cut: the last segment holds the rest of
 * the transcript (`restSegment`, docs/decisions/0022-segments-past-the-bound.md), so every export
 * writes every line. Times are seconds from the start of the call, to the millisecond, or null.
 */
import { TRANSCRIPT_MAX_BYTES, truncateChars, truncateUtf8, utf8ByteLength } from '../submission/truncate-utf8.ts';
import { trimWhiteSpace } from '../white-space.ts';
import { cleanTranscript, type CueTimes } from './transcript-lines.ts';

export interface TranscriptSegment {
  /** Seconds from the start of the call; null when the transcript carries no times. */
  start: number | null;
  /** Seconds from the start of the call, ≥ start; null when the transcript carries no times. */
  end: number | null;
  /** The speaker's label as the transcript or engine gave it; null when not known. */
  speaker: string | null;
  /** What was said; several lines (a multi-line cue) are joined by `\n`. */
  text: string;
}

export const SEGMENT_LIMITS = {
  /**
   * A 4-hour call at one segment every ~1.5 s, or the most cues a 500 KB WebVTT file holds. The
   * count is what bounds the record: each segment adds its JSON keys to the event, and 512,000
   * one-character lines would be 256,000 segments, more than a Kafka record of the topics takes
   * (TOPIC_MAX_MESSAGE_BYTES in shared/adapters/event-log/kafka-event-log.ts).
   */
  maxSegments: 20_000,
  maxTextBytes: TRANSCRIPT_MAX_BYTES,
  maxSpeakerChars: 100,
} as const;

const time = (value: number | null | undefined): number | null =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value * 1000) / 1000 : null;

/**
 * A segment on its own made valid: times finite, non-negative and in order (an end before its
 * start becomes the start), text and speaker trimmed of white space (../white-space.ts: U+FEFF is
 * kept), a blank speaker null; undefined when the text is blank.
 */
const validSegment = (segment: TranscriptSegment): TranscriptSegment | undefined => {
  const text = trimWhiteSpace(segment.text);
  if (text === '') return undefined;
  const start = time(segment.start);
  const end = start === null ? null : Math.max(start, time(segment.end) ?? start);
  const name = segment.speaker === null ? '' : trimWhiteSpace(segment.speaker);
  const speaker = name === '' ? null : truncateChars(name, SEGMENT_LIMITS.maxSpeakerChars);
  return { start, end, speaker, text };
};

/**
 * The segments past the count bound as the last one, nothing left out: their texts a line each,
 * as a transcript is written, `Speaker: ` before a line whose speaker is not the previous line's.
 * Its speaker is theirs when they all have one, else null (the lines say who); its times run from
 * the first one's start to the latest end, when the first one is timed.
 */
const restSegment = (rest: readonly TranscriptSegment[]): TranscriptSegment => {
  const first = rest[0]!;
  const oneSpeaker = rest.every((s) => s.speaker === first.speaker);
  let previous: string | null = oneSpeaker ? first.speaker : null;
  const lines = rest.map((s) => {
    const label = s.speaker !== null && s.speaker !== previous ? `${s.speaker}: ` : '';
    if (s.speaker !== null) previous = s.speaker;
    return `${label}${s.text}`;
  });
  const start = first.start;
  // A loop, not Math.max(...ends): the rest may be 200,000 segments, too many arguments for a call.
  const end = start === null ? null : rest.reduce((latest, s) => Math.max(latest, s.end ?? latest), start);
  return { start, end, speaker: oneSpeaker ? first.speaker : null, text: lines.join('\n') };
};

/**
 * The segments within the bounds above: each made valid (`validSegment`, blank ones dropped); past
 * `maxSegments`, the last holds the rest (`restSegment`); then their text cut at `maxTextBytes`.
 */
export const boundSegments = (segments: readonly TranscriptSegment[]): TranscriptSegment[] => {
  const valid = segments.map(validSegment).filter((s) => s !== undefined);
  const { maxSegments } = SEGMENT_LIMITS;
  const counted =
    valid.length > maxSegments
      ? [...valid.slice(0, maxSegments - 1), restSegment(valid.slice(maxSegments - 1))]
      : valid;
  const bounded: TranscriptSegment[] = [];
  let budget: number = SEGMENT_LIMITS.maxTextBytes;
  for (const segment of counted) {
    if (budget <= 0) break;
    const text = truncateUtf8(segment.text, budget).text;
    if (text === '') break;
    budget -= utf8ByteLength(text);
    bounded.push({ ...segment, text });
  }
  return bounded;
};

/**
 * The segments a transcript's text holds: each WebVTT/SRT cue (a speaker change inside a cue
 * starts another segment with the same times), else each line, with the speaker its `<v Name>`
 * span or `Speaker:` label names (`transcript-lines.ts` says when a label counts). Bounded.
 */
export const segmentsFromText = (text: string): TranscriptSegment[] => {
  const segments: TranscriptSegment[] = [];
  let open: { segment: TranscriptSegment; cue: CueTimes } | undefined;
  for (const line of cleanTranscript(text).lines) {
    const speaker = line.speaker ?? null;
    if (open && line.cue === open.cue && speaker === open.segment.speaker) {
      open.segment.text += `\n${line.text}`;
      continue;
    }
    const segment: TranscriptSegment = {
      start: line.cue?.start ?? null,
      end: line.cue?.end ?? null,
      speaker,
      text: line.text,
    };
    segments.push(segment);
    open = line.cue ? { segment, cue: line.cue } : undefined;
  }
  return boundSegments(segments);
};

/** True when every segment has its times: the transcript can be written as SubRip or WebVTT. */
export const segmentsAreTimed = (segments: readonly TranscriptSegment[]): boolean =>
  segments.every((s) => s.start !== null && s.end !== null);
