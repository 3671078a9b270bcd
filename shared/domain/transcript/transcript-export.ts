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
 * segment would end its cue, so cue text has none.
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
  return { start: segment.start, end: segment.end };
};

/** Plain text: `Speaker: text` a line, or the text alone; ends with a line break unless empty. */
export const renderText = (segments: readonly TranscriptSegment[]): string =>
  segments.map((s) => (s.speaker === null ? s.text : `${s.speaker}: ${s.text}`)).join('\n') +
  (segments.length > 0 ? '\n' : '');

/** SubRip. @throws RangeError when a segment has no times. */
export const renderSrt = (segments: readonly TranscriptSegment[]): string =>
  segments
    .map((segment, i) => {
      const { start, end } = timesOf(segment);
      const lines = cueLines(segment.text);
      if (segment.speaker !== null) lines[0] = `${segment.speaker}: ${lines[0]}`;
      return `${i + 1}\n${timestamp(start, ',')} --> ${timestamp(end, ',')}\n${lines.join('\n')}\n`;
    })
    .join('\n');

const escapeVtt = (text: string): string => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** WebVTT. @throws RangeError when a segment has no times. */
export const renderVtt = (segments: readonly TranscriptSegment[]): string => {
  const cues = segments.map((segment) => {
    const { start, end } = timesOf(segment);
    const lines = cueLines(segment.text).map(escapeVtt);
    if (segment.speaker !== null) lines[0] = `<v ${escapeVtt(segment.speaker)}>${lines[0]}`;
    return `${timestamp(start, '.')} --> ${timestamp(end, '.')}\n${lines.join('\n')}\n`;
  });
  return ['WEBVTT\n', ...cues].join('\n');
};
