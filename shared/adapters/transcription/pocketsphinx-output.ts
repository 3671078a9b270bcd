/**
 * The transcript in pocketsphinx's stdout. Both command-line programs print one utterance (a
 * stretch of speech between pauses) at a time and log everything else to stderr:
 * - `pocketsphinx_continuous -infile x.wav -time yes` (5prealpha, Debian 12): the plain hypothesis,
 *   e.g. `hello this is a test`, then one line per word with its start and end in seconds and its
 *   posterior probability, e.g. `hello 0.030 0.390 0.237600` (silence words `<s>`, `<sil>`, `</s>` too);
 * - `pocketsphinx live x.wav` (5.x): a JSON object, e.g.
 *   `{"b":0.000,"d":1.520,"p":0.981,"t":"hello this is a test","w":[{"b":0.000,"d":0.400,"p":0.990,"t":"<sil>"},…]}`,
 *   text in `t`, each word's start in `b` and duration in `d`.
 * Each utterance becomes one segment, from its first word's start to its last word's end (silence
 * and noise words aside); without word times it has none.
 */
import type { TranscriptSegment } from '../../domain/transcript/transcript-segments.ts';

/** Markers the decoder may leave in a hypothesis: silence and noise words, alternate pronunciations. */
const FILLER = /^(?:<[^>]*>|\[[^\]]*\]|\+\+[^+]*\+\+)$/;
const ALTERNATE_PRONUNCIATION = /\(\d+\)$/;
/** A log line that went to stdout after all (some builds print a few). */
const LOG_LINE = /^(?:INFO|WARN(?:ING)?|ERROR|FATAL(?:_ERROR)?|SYSTEM_ERROR|DEBUG)\b[^:]*:/;
/** A word time line of `-time yes`: word, start, end, posterior probability. Hypotheses hold no digits. */
const WORD_LINE = /^(\S+)\s+(\d+(?:\.\d+)?)\s+(\d+(?:\.\d+)?)\s+-?\d+(?:\.\d+)?(?:e[-+]?\d+)?$/i;

const cleanWords = (text: string): string[] =>
  text
    .split(/\s+/)
    .filter((word) => word !== '' && !FILLER.test(word))
    .map((word) => word.replace(ALTERNATE_PRONUNCIATION, ''))
    .filter(Boolean);

interface WordTime {
  word: string;
  start: number;
  end: number;
}

interface Utterance {
  words: string[];
  start: number | null;
  end: number | null;
}

const wordTimesOfJson = (w: unknown): WordTime[] =>
  Array.isArray(w)
    ? w.flatMap((entry: unknown) => {
        const { t, b, d } = (typeof entry === 'object' && entry !== null ? entry : {}) as {
          t?: unknown;
          b?: unknown;
          d?: unknown;
        };
        return typeof t === 'string' && typeof b === 'number' && typeof d === 'number'
          ? [{ word: t, start: b, end: b + d }]
          : [];
      })
    : [];

/** The text and word times of one JSON line; pocketsphinx does not escape the hypothesis, so a broken line is read by pattern (text only). */
const readJsonLine = (line: string): { text: string; words: WordTime[] } => {
  try {
    const parsed: unknown = JSON.parse(line);
    if (typeof parsed === 'object' && parsed !== null && typeof (parsed as { t?: unknown }).t === 'string') {
      return { text: (parsed as { t: string }).t, words: wordTimesOfJson((parsed as { w?: unknown }).w) };
    }
    return { text: '', words: [] };
  } catch {
    return { text: /"t"\s*:\s*"([^"]*)"/.exec(line)?.[1] ?? '', words: [] };
  }
};

/** Stretches the utterance over a spoken word's time (silence and noise words do not count). */
const addWordTime = (utterance: Utterance, { word, start, end }: WordTime): void => {
  if (FILLER.test(word)) return;
  if (utterance.start === null) utterance.start = start;
  utterance.end = Math.max(utterance.end ?? end, end);
};

/** The utterances of one pocketsphinx run, in order: the text (joined by single spaces, '' when none was heard) and one segment each. */
export const readPocketsphinxOutput = (stdout: string): { text: string; segments: TranscriptSegment[] } => {
  const utterances: Utterance[] = [];
  for (const raw of stdout.split(/\r?\n/)) {
    const line = raw.trim();
    if (line === '' || LOG_LINE.test(line)) continue;
    const word = WORD_LINE.exec(line);
    if (word) {
      const current = utterances.at(-1);
      if (current) addWordTime(current, { word: word[1]!, start: Number(word[2]), end: Number(word[3]) });
      continue;
    }
    if (line.startsWith('{')) {
      const { text, words } = readJsonLine(line);
      const utterance: Utterance = { words: cleanWords(text), start: null, end: null };
      for (const w of words) addWordTime(utterance, w);
      utterances.push(utterance);
      continue;
    }
    utterances.push({ words: cleanWords(line), start: null, end: null });
  }
  const heard = utterances.filter((u) => u.words.length > 0);
  return {
    text: heard.map((u) => u.words.join(' ')).join(' '),
    segments: heard.map((u) => ({ start: u.start, end: u.end, speaker: null, text: u.words.join(' ') })),
  };
};

/** The utterances of one pocketsphinx run, in order, joined by single spaces; '' when none were heard. */
export const parsePocketsphinxOutput = (stdout: string): string => readPocketsphinxOutput(stdout).text;
