/**
 * A transcript's segments: who said what, and when. An engine that times its words gives them
 * (the OpenAI-compatible engine's `verbose_json` segments, pocketsphinx's utterances); otherwise
 * they are read from the text (`segmentsFromText`): one per WebVTT/SRT cue with the cue's times and
 * voice, else one per line with its `Speaker:` label and no times.
 *
 * Bounds (a segment is stored in the call's TranscriptRecorded event, so it is bounded like the
 * transcript itself): at most `SEGMENT_LIMITS.maxSegments`, their text together at most
 * `SEGMENT_LIMITS.maxTextBytes` of UTF-8 (the inline transcript's own cap), a speaker at most
 * `SEGMENT_LIMITS.maxSpeakerChars`; what is past a bound is cut on a character boundary, never in
 * the middle of one. Times are seconds from the start of the call, to the millisecond, or null.
 */
import { TRANSCRIPT_MAX_BYTES, truncateChars, truncateUtf8, utf8ByteLength } from '../submission/truncate-utf8.ts';
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
  /** A 4-hour call at one segment every ~1.5 s, or the most cues a 500 KB WebVTT file holds. */
  maxSegments: 20_000,
  maxTextBytes: TRANSCRIPT_MAX_BYTES,
  maxSpeakerChars: 100,
} as const;

const time = (value: number | null | undefined): number | null =>
  typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.round(value * 1000) / 1000 : null;

/**
 * The segments within the bounds above: times made finite, non-negative and in order within a
 * segment (an end before its start becomes the start), text trimmed, empty segments dropped, a
 * blank speaker made null.
 */
export const boundSegments = (segments: readonly TranscriptSegment[]): TranscriptSegment[] => {
  const bounded: TranscriptSegment[] = [];
  let budget: number = SEGMENT_LIMITS.maxTextBytes;
  for (const segment of segments) {
    if (bounded.length >= SEGMENT_LIMITS.maxSegments || budget <= 0) break;
    const whole = segment.text.trim();
    if (whole === '') continue;
    const text = truncateUtf8(whole, budget).text;
    if (text === '') break;
    budget -= utf8ByteLength(text);
    const start = time(segment.start);
    const end = start === null ? null : Math.max(start, time(segment.end) ?? start);
    const speaker = segment.speaker?.trim()
      ? truncateChars(segment.speaker.trim(), SEGMENT_LIMITS.maxSpeakerChars)
      : null;
    bounded.push({ start, end, speaker, text });
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
