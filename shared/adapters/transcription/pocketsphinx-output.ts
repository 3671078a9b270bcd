/**
 * The transcript in pocketsphinx's stdout. Both command-line programs print one line per utterance
 * (a stretch of speech between pauses) and log everything else to stderr:
 * - `pocketsphinx_continuous -infile x.wav` (5prealpha, Debian 12): the plain hypothesis,
 *   e.g. `hello this is a test`;
 * - `pocketsphinx live x.wav` (5.x): a JSON object, e.g.
 *   `{"b":0.000,"d":1.520,"p":0.981,"t":"hello this is a test","w":[…]}`, text in `t`.
 */

/** Markers the decoder may leave in a hypothesis: silence and noise words, alternate pronunciations. */
const FILLER = /^(?:<[^>]*>|\[[^\]]*\]|\+\+[^+]*\+\+)$/;
const ALTERNATE_PRONUNCIATION = /\(\d+\)$/;
/** A log line that went to stdout after all (some builds print a few). */
const LOG_LINE = /^(?:INFO|WARN(?:ING)?|ERROR|FATAL(?:_ERROR)?|SYSTEM_ERROR|DEBUG)\b[^:]*:/;

const cleanWords = (text: string): string[] =>
  text
    .split(/\s+/)
    .filter((word) => word !== '' && !FILLER.test(word))
    .map((word) => word.replace(ALTERNATE_PRONUNCIATION, ''))
    .filter(Boolean);

/** The text of one JSON line; pocketsphinx does not escape the hypothesis, so a broken line is read by pattern. */
const textOfJsonLine = (line: string): string | undefined => {
  try {
    const parsed: unknown = JSON.parse(line);
    if (typeof parsed === 'object' && parsed !== null && typeof (parsed as { t?: unknown }).t === 'string') return (parsed as { t: string }).t;
    return undefined;
  } catch {
    return /"t"\s*:\s*"([^"]*)"/.exec(line)?.[1];
  }
};

/** The utterances of one pocketsphinx run, in order, joined by single spaces; '' when none were heard. */
export const parsePocketsphinxOutput = (stdout: string): string =>
  stdout
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !LOG_LINE.test(line))
    .flatMap((line) => cleanWords(line.startsWith('{') ? (textOfJsonLine(line) ?? '') : line))
    .join(' ');
