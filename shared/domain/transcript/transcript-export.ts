/**
 * A transcript's segments written as plain text, SubRip (SRT) or WebVTT. Pure.
 *
 * - Text: one segment a line (a multi-line segment keeps its line breaks), `Speaker: ` before it
 *   when the speaker is known.
 * - SubRip: numbered cues `1`, `00:01:02,500 --> 00:01:04,000`, the text; SubRip has no speaker
 *   markup, so a known speaker is written `Speaker: text`, as captions do.
 * - WebVTT: `WEBVTT`, then cues `00:01:02.500 --> 00:01:04.000` with the speaker as a voice span,
 *   `<v Speaker>text`; `&`, `<` and `>` are written as entities so no text is read as markup.
 * Both timed formats need every segment's times (`segmentsAreTimed`); a blank line inside a
 * segment would end its cue, so cue text has none. Their cues are in order of start, and each ends
 * at least a millisecond after it starts (a cue of equal or reversed times, which a transcript may
 * hold, is no valid WebVTT cue). SubRip cannot escape, so `-->` in its text is written `-- >`:
 * a reader would take the line for a cue's timing.
 */
import { isWhiteSpaceOnly } from '../white-space.ts';
import type { TranscriptSegment } from './transcript-segments.ts';

export const TRANSCRIPT_FORMATS = ['json', 'txt', 'srt', 'vtt'] as const;
export type TranscriptFormat = (typeof TRANSCRIPT_FORMATS)[number];

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/** `HH:MM:SS<sep>mmm`, hours of at least two digits. */
const timestamp = (seconds: number, separator: ',' | '.'): string => {
  const ms = Math.round(seconds * 1000);
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = Math.floor((ms % 60_000) / 1000);
  return `${pad(h)}:${pad(m)}:${pad(s)}${separator}${pad(ms % 1000, 3)}`;
};

/**
 * The text's lines without blank ones (a blank line ends a cue). Blank as the segments mean it
 * (../white-space.ts): a line of U+FEFF alone is text, as it is a segment's text.
 */
const cueLines = (text: string): string[] => text.split(/\r\n|\r|\n/).filter((line) => !isWhiteSpaceOnly(line));

const timesOf = (segment: TranscriptSegment): { start: number; end: number } => {
  if (segment.start === null || segment.end === null)
    throw new RangeError('a timed format needs every segment to have its times');
  return { start: segment.start, end: Math.max(segment.end, segment.start + 0.001) };
};

/** The segments as cues: every one timed, in order of start (the same start: as they came). */
const cuesOf = (segments: readonly TranscriptSegment[]) =>
  segments.map((segment) => ({ segment, ...timesOf(segment) })).sort((a, b) => a.start - b.start);

/** Plain text: `Speaker: text` a line, or the text alone; ends with a line break unless empty. */
export const renderText = (segments: readonly TranscriptSegment[]): string =>
  segments.map((s) => (s.speaker === null ? s.text : `${s.speaker}: ${s.text}`)).join('\n') +
  (segments.length > 0 ? '\n' : '');

/** SubRip. @throws RangeError when a segment has no times. */
export const renderSrt = (segments: readonly TranscriptSegment[]): string =>
  cuesOf(segments)
    .map(({ segment, start, end }, i) => {
      const lines = cueLines(segment.text);
      if (segment.speaker !== null) lines[0] = `${segment.speaker}: ${lines[0]}`;
      const text = lines.map((line) => line.replaceAll('-->', '-- >'));
      return `${i + 1}\n${timestamp(start, ',')} --> ${timestamp(end, ',')}\n${text.join('\n')}\n`;
    })
    .join('\n');

const escapeVtt = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** WebVTT. @throws RangeError when a segment has no times. */
export const renderVtt = (segments: readonly TranscriptSegment[]): string => {
  const cues = cuesOf(segments).map(({ segment, start, end }) => {
    const lines = cueLines(segment.text).map(escapeVtt);
    // A name ending in '-' would close its tag as `-->`, which ends no tag but starts a timing:
    // a space before `>` keeps the voice's name (WebVTT strips it).
    if (segment.speaker !== null) {
      const voice = escapeVtt(segment.speaker);
      lines[0] = `<v ${voice}${voice.endsWith('-') ? ' ' : ''}>${lines[0]}`;
    }
    return `${timestamp(start, '.')} --> ${timestamp(end, '.')}\n${lines.join('\n')}\n`;
  });
  return ['WEBVTT\n', ...cues].join('\n');
};
