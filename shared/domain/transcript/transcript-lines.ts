/**
 * Reads a transcript's text into content lines, each with its speaker and, inside a WebVTT or SRT
 * cue, the cue's times. Pure: no clock, no I/O. The analyser turns these lines into speaker turns;
 * `segmentsFromText` turns them into a transcript's segments.
 *
 * Cleaning (spec: transcripts should arrive stripped of timestamps, but may still carry cues):
 * - WebVTT: the `WEBVTT` header block and `NOTE`/`STYLE`/`REGION` blocks are dropped; cue timing
 *   lines (`00:00:01.000 --> 00:00:04.000 align:start`, hours optional) and the cue identifier
 *   above them go, their times kept for the cue's lines; `<v Dana>` names the speaker of the cue;
 *   other cue tags (`<c>`, `<i>`, `<00:00:01.000>`…) and the entities `&amp; &lt; &gt; &nbsp;` are
 *   removed or decoded (SRT's `<i>`, `<b>`, `<font>` too).
 * - SRT: the numeric index and the `00:00:01,000 --> …` timing line of each block go, the times
 *   kept as for WebVTT.
 * - Bracketed timestamps anywhere (`[00:01:02]`, `(01:02)`), a leading `00:01:02 ` timestamp, and
 *   caption speaker-change marks (`>>`, `- `) at the start of a line go.
 *
 * Speakers: a line `Label: text` names its speaker, where the label is a name of 1–4 capitalised
 * words (`Dana`, `Dana Reyes`, `DANA`), a generic label (`Speaker 1`, `SPEAKER_01`) or a role
 * (`Rep`, `Agent`, `Customer`…); a line holding only a name and a timestamp (`Dana Reyes  0:03`,
 * Otter style) names the speaker of the lines below it. A line without a label continues the
 * current speaker. Common words that end in a colon in prose (`Note:`, `Next steps:`,
 * weekdays…) are not labels.
 *
 * The transcript counts as speaker-labelled only when it names at least two distinct speakers;
 * otherwise lines carry no speaker (one label alone, e.g. `Note:`, says nothing about who spoke),
 * except the lines of a WebVTT cue with a `<v Name>` span: that markup names its speaker outright.
 */

/** A cue's times in seconds; the lines of one cue share one object. */
export interface CueTimes {
  start: number;
  end: number;
}

/** One cleaned line: `text` is a verbatim slice of the original line, without label and markers. */
export interface TranscriptLine {
  speaker?: string;
  text: string;
  /** The WebVTT/SRT cue the line belongs to. */
  cue?: CueTimes;
}

const TIME = String.raw`(?:\d{1,2}:)?\d{1,2}:\d{2}(?:[.,]\d{1,3})?`;
/** WebVTT allows hours of more than two digits and leaves them out below an hour; SRT always has them. */
const CUE_TIME = String.raw`(?:\d{1,4}:)?\d{1,2}:\d{2}(?:[.,]\d{1,3})?`;
const CUE_TIMING = new RegExp(String.raw`^\s*(${CUE_TIME})\s*-->\s*(${CUE_TIME})`);
const BRACKETED_TIME = new RegExp(String.raw` ?[\[(]\s*${TIME}\s*[\])]`, 'g');
/** `00:01:02 ` or `01:02.500 ` opens a line; a bare `10:30 ` only when a label follows. */
const LEADING_TIME_STRICT = /^(?:\d{1,2}:\d{2}:\d{2}(?:[.,]\d{1,3})?|\d{1,2}:\d{2}[.,]\d{1,3})\s+(?:-\s+)?/;
const LEADING_TIME_LOOSE = /^\d{1,2}:\d{2}\s+(?:-\s+)?/;
// Tag contents are bounded ({0,100}) so an unclosed `<v <v <v…` cannot make matching quadratic.
const VOICE = /<v(?:\.[\w.-]{1,50})?\s+([^>]{1,100})>/;
const CUE_TAGS = /<\/?(?:v|c|i|b|u|ruby|rt|lang|font)(?:[.\s][^>]{0,100})?>|<\d{1,2}:\d{2}(?::\d{2})?[.,]\d{1,3}>/g;
const ENTITIES: Record<string, string> = {
  '&amp;': '&',
  '&lt;': '<',
  '&gt;': '>',
  '&nbsp;': ' ',
  '&lrm;': '',
  '&rlm;': '',
};
const ENTITY = /&(?:amp|lt|gt|nbsp|lrm|rlm);/g;
const CAPTION_MARK = /^(?:>>|-)\s+/;
/** A label with a bracketed company, e.g. `Dana Reyes (Acme Corporation):`, fits. */
const MAX_LABEL_CHARS = 90;

const NAME_WORD = String.raw`\p{Lu}[\p{L}\p{M}'’.\-]*`;
const NAME = String.raw`${NAME_WORD}(?: (?:(?:de|da|di|du|del|der|van|von|la|le|bin|al) )?${NAME_WORD}){0,3}`;
const NAME_LABEL = new RegExp(String.raw`^(${NAME})\s*(?:\([^)]{0,40}\))?\s*:\s*(?!\/\/)(.*)$`, 'u');
const GENERIC = String.raw`(?:speaker|spk|participant|guest|person)[ _-]?(?:\d{1,3}|[a-z])`;
const ROLES = String.raw`rep|sales ?rep(?:resentative)?|sales(?:person|man|woman)?|sales [a-z]+(?: [a-z]+)?|seller|agent|ae|sdr|bdr|account executive|customer|prospect|client|caller|buyer|lead|interviewer|host`;
const OTHER_LABEL = new RegExp(String.raw`^(${GENERIC}|${ROLES})\s*:\s*(.*)$`, 'i');
const GENERIC_OR_ROLE = new RegExp(String.raw`^(?:${GENERIC}|${ROLES})$`, 'i');
const HEADER_TIME = String.raw`\s+[\[(]?${TIME}[\])]?$`;
const NAME_HEADER = new RegExp(String.raw`^(${NAME})${HEADER_TIME}`, 'u');
const GENERIC_HEADER = new RegExp(String.raw`^(${GENERIC})${HEADER_TIME}`, 'i');
/** Capitalised words that end in a colon in prose: never a speaker label. */
const NOT_LABELS = new Set(
  `note notes next step steps summary agenda action question answer re fyi ps subject date time title update
  also so well yes no okay ok important example reminder warning tip http https mailto
  monday tuesday wednesday thursday friday saturday sunday today tomorrow`.split(/\s+/),
);
/** First words that make a capitalised phrase prose (`The Problem:`), not a name. */
const FUNCTION_WORDS = new Set(
  'the a an and but or our my your their his her its this that these those we i it if in on at for to of'.split(' '),
);
const isLabel = (label: string): boolean => {
  const first = label.trimStart().split(/\s/, 1)[0]!.toLowerCase();
  return !NOT_LABELS.has(first) && !FUNCTION_WORDS.has(first);
};

/** A generic label (`Speaker 2`) or a role (`Customer`): not a person's name. */
export const isGenericOrRoleLabel = (label: string): boolean => GENERIC_OR_ROLE.test(label);

/** Normalised label (lower case, single spaces): two labels naming one speaker have one key. */
export const speakerKey = (label: string): string => label.trim().replace(/\s+/g, ' ').toLowerCase();

/** The label as first written; an ALL-CAPS name is shown in Title Case. */
export const displayName = (label: string): string => {
  const name = label.trim().replace(/\s+/g, ' ');
  if (/\p{Ll}/u.test(name) || GENERIC_OR_ROLE.test(name) || !/\p{Lu}.*\p{Lu}/u.test(name)) return name;
  return name.toLowerCase().replace(/(^|[\s'’.-])(\p{L})/gu, (_, sep: string, c: string) => sep + c.toUpperCase());
};

/** Seconds of a cue timestamp: `01:02:03.500`, `02:03.500` (WebVTT), `01:02:03,500` (SRT). */
export const cueSeconds = (stamp: string): number => {
  const [clock, fraction = ''] = stamp.split(/[.,]/);
  const parts = clock!.split(':').map(Number);
  const seconds = parts.reduce((total, part) => total * 60 + part, 0);
  return fraction === '' ? seconds : seconds + Number(`0.${fraction}`);
};

interface KeptLine {
  line: string;
  cue?: CueTimes;
}

/** Drops the WebVTT header and NOTE/STYLE/REGION blocks, cue timings and cue ids / SRT indices; the lines of a cue keep its times. */
const withoutCueScaffolding = (raw: string): KeptLine[] => {
  const lines = raw.replace(/^\uFEFF/, '').split(/\r\n|\r|\n/);
  const firstContent = lines.findIndex((l) => l.trim() !== '');
  const vtt = firstContent >= 0 && /^WEBVTT(?:\s|$)/.test(lines[firstContent]!.trim());
  const kept: KeptLine[] = [];
  let skippingBlock = false;
  let blockStart = true;
  let cue: CueTimes | undefined;
  lines.forEach((line, i) => {
    const trimmed = line.trim();
    // Only an empty line (spaces and tabs at most) ends a cue, as in WebVTT and SubRip: a line of
    // U+00A0 or U+2028 alone is no text, but its cue goes on.
    if (/^[ \t]*$/.test(line)) {
      skippingBlock = false;
      blockStart = true;
      cue = undefined;
      kept.push({ line: '' });
      return;
    }
    const startsBlock = blockStart;
    blockStart = false;
    if (skippingBlock) return;
    if (vtt && startsBlock && (i === firstContent || /^(?:NOTE|STYLE|REGION)(?:\s|$)/.test(trimmed))) {
      skippingBlock = true;
      return;
    }
    const timing = CUE_TIMING.exec(trimmed);
    if (timing) {
      const previous = kept.at(-1)?.line;
      const previousStartedBlock = i > 0 && (i === 1 || (lines[i - 2] ?? '').trim() === '');
      if (previous !== undefined && previous !== '' && (previousStartedBlock || /^\d+$/.test(previous.trim())))
        kept.pop();
      kept.push({ line: '' });
      cue = { start: cueSeconds(timing[1]!), end: cueSeconds(timing[2]!) };
      return;
    }
    kept.push(cue ? { line, cue } : { line });
  });
  return kept;
};

interface RawLine {
  /** Label as written, when the line names a speaker. */
  label?: string;
  /** True when the label is a WebVTT `<v Name>` span. */
  voiced?: boolean;
  /** The line without markers and without its label. */
  text: string;
  /** The line without markers, label included: what an unlabelled transcript shows. */
  whole: string;
  cue?: CueTimes;
}

const cleanLine = (line: string): RawLine | undefined => {
  let text = line;
  // The checks on '<', '&', ':' and a final digit skip regular expressions most lines cannot match.
  const named = text.includes('<') ? VOICE.exec(text)?.[1]?.trim() : undefined;
  const voice = named?.includes('&') ? named.replace(ENTITY, (e) => ENTITIES[e] ?? e) : named;
  if (text.includes('<')) text = text.replace(CUE_TAGS, '');
  if (text.includes('&')) text = text.replace(ENTITY, (e) => ENTITIES[e] ?? e);
  const timed = text.includes(':');
  if (timed) text = text.replace(BRACKETED_TIME, '');
  text = text.trim().replace(CAPTION_MARK, '');
  if (timed) {
    text = text.replace(LEADING_TIME_STRICT, '');
    const loose = text.replace(LEADING_TIME_LOOSE, '');
    if (loose !== text && (NAME_LABEL.test(loose) || OTHER_LABEL.test(loose))) text = loose;
  }
  text = text.trim();
  if (voice) return { label: voice, voiced: true, text, whole: text };
  if (timed && /\d[\])]?\s*$/.test(line)) {
    const bare = line.trim().replace(CAPTION_MARK, '');
    const header = NAME_HEADER.exec(bare) ?? GENERIC_HEADER.exec(bare);
    if (header?.[1] && isLabel(header[1])) return { label: header[1], text: '', whole: '' };
  }
  if (text === '') return undefined;
  const colon = text.indexOf(':');
  const labelled = colon > 0 && colon <= MAX_LABEL_CHARS ? (NAME_LABEL.exec(text) ?? OTHER_LABEL.exec(text)) : null;
  if (labelled?.[1] && isLabel(labelled[1])) {
    return { label: labelled[1], text: (labelled[2] ?? '').trim(), whole: text };
  }
  return { text, whole: text };
};

const withCue = (line: TranscriptLine, cue: CueTimes | undefined): TranscriptLine => (cue ? { ...line, cue } : line);

/**
 * The transcript's content lines, cleaned, with the speaker each belongs to (its label, or the
 * label above it) and the cue times of WebVTT/SRT lines. `labelled` is false unless two speakers
 * say something; then only `<v Name>` cues name a speaker.
 */
export const cleanTranscript = (raw: string): { lines: TranscriptLine[]; labelled: boolean } => {
  const rawLines: RawLine[] = [];
  for (const { line, cue } of withoutCueScaffolding(raw)) {
    const cleaned = line.trim() === '' ? undefined : cleanLine(line);
    if (cleaned) rawLines.push(cue ? { ...cleaned, cue } : cleaned);
  }
  const lines: TranscriptLine[] = [];
  const speaking = new Set<string>();
  let current: string | undefined;
  for (const line of rawLines) {
    if (line.label) current = line.label;
    if (line.text === '') continue;
    if (current === undefined) lines.push(withCue({ text: line.text }, line.cue));
    else {
      lines.push(withCue({ speaker: current, text: line.text }, line.cue));
      if (speaking.size < 2) speaking.add(speakerKey(current));
    }
  }
  if (speaking.size >= 2) return { lines, labelled: true };
  // Unlabelled: a `<v Name>` span still names the speaker of its cue, to the cue's end.
  const unlabelled: TranscriptLine[] = [];
  let voice: { name: string; cue: CueTimes | undefined } | undefined;
  for (const line of rawLines) {
    if (line.voiced) voice = { name: line.label!, cue: line.cue };
    else if (voice && (line.cue === undefined || line.cue !== voice.cue)) voice = undefined;
    if (line.whole === '') continue;
    unlabelled.push(withCue(voice ? { speaker: voice.name, text: line.whole } : { text: line.whole }, line.cue));
  }
  return { lines: unlabelled, labelled: false };
};
