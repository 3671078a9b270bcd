/**
 * Reads a transcript into speaker turns. Pure: no clock, no I/O.
 *
 * Cleaning (spec: transcripts should arrive stripped of timestamps, but may still carry cues):
 * - WebVTT: the `WEBVTT` header block and `NOTE`/`STYLE`/`REGION` blocks are dropped; cue timing
 *   lines (`00:00:01.000 --> 00:00:04.000 align:start`) and the cue identifier above them go;
 *   `<v Dana>` names the speaker of the cue; other cue tags (`<c>`, `<i>`, `<00:00:01.000>`…) and
 *   the entities `&amp; &lt; &gt; &nbsp;` are removed or decoded (SRT's `<i>`, `<b>`, `<font>` too).
 * - SRT: the numeric index and the `00:00:01,000 --> …` timing line of each block go.
 * - Bracketed timestamps anywhere (`[00:01:02]`, `(01:02)`), a leading `00:01:02 ` timestamp, and
 *   caption speaker-change marks (`>>`, `- `) at the start of a line go.
 *
 * Speakers: a line `Label: text` names its speaker, where the label is a name of 1–4 capitalised
 * words (`Dana`, `Dana Reyes`, `DANA`), a generic label (`Speaker 1`, `SPEAKER_01`) or a role
 * (`Rep`, `Agent`, `Customer`…); a line holding only a name and a timestamp (`Dana Reyes  0:03`,
 * Otter style) names the speaker of the lines below it. A line without a label continues the
 * current speaker; consecutive lines of one speaker merge into one turn. Common words that end in a
 * colon in prose (`Note:`, `Next steps:`, weekdays…) are not labels.
 *
 * The transcript counts as speaker-labelled only when it names at least two distinct speakers;
 * otherwise every line is its own turn with no speaker (one label alone, e.g. `Note:`, says nothing
 * about who spoke).
 *
 * The rep, in order: the label matching `repName` (full name, else first name, else a label whose
 * first word is the rep's first name; case- and accent-insensitive), then the same with the local
 * part of `repEmail` (`dana.reyes@…`); then a role label (`Rep`, `Agent`, `Sales…`, `Seller`,
 * `AE`, `SDR`, `BDR`, `Account Executive`); otherwise, by convention, the first speaker who is not
 * labelled as a customer role — the rep usually opens a sales call. Other speakers are prospects,
 * except other rep-role labels (a colleague on the call), whose role is `unknown`.
 */

export type SpeakerRole = 'rep' | 'prospect' | 'unknown';
export type RepIdentifiedBy = 'rep_name' | 'rep_email' | 'role_label' | 'first_speaker';

/** One cleaned line: `text` is a verbatim slice of the original line, without label and markers. */
export interface TranscriptLine {
  speaker?: string;
  text: string;
}

export interface Utterance {
  /** Speaker key (see `SpeakerInfo.key`); absent in an unlabelled transcript. */
  speaker?: string;
  /** The cleaned source lines of this turn, each verbatim from the transcript. */
  lines: string[];
  /** Sentences of `lines`, each a verbatim slice of one line. */
  sentences: string[];
  /** The lines joined by a space. */
  text: string;
  words: number;
}

export interface SpeakerInfo {
  /** Normalised label (lower case, single spaces): how turns refer to the speaker. */
  key: string;
  /** The label as first written; an ALL-CAPS name is shown in Title Case. */
  name: string;
  role: SpeakerRole;
  /** False for generic and role labels (`Speaker 2`, `Customer`): not a person's name. */
  isPersonName: boolean;
  words: number;
}

export interface ParsedTranscript {
  utterances: Utterance[];
  /** True when at least two distinct speakers are labelled. */
  speakersKnown: boolean;
  /** In order of first appearance; empty when speakers are not known. */
  speakers: SpeakerInfo[];
  /** Key of the rep, when speakers are known. */
  rep?: string;
  repIdentifiedBy?: RepIdentifiedBy;
  totalWords: number;
}

const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u;
/** ASCII by char code; anything else by Unicode class (surrogate pairs count as letters: rare, harmless). */
const isWordChar = (text: string, i: number): boolean => {
  const code = text.charCodeAt(i);
  if (code < 128) return (code >= 97 && code <= 122) || (code >= 65 && code <= 90) || (code >= 48 && code <= 57);
  return (code >= 0xd800 && code <= 0xdfff) || LETTER_OR_DIGIT.test(text[i]!);
};

/** Words: runs of letters and digits; an apostrophe between two of them (`don't`) joins them. */
export const countWords = (text: string): number => {
  let n = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (isWordChar(text, i)) {
      if (!inWord) n++;
      inWord = true;
    } else if (inWord && (code === 39 || code === 0x2019) && i + 1 < text.length && isWordChar(text, i + 1)) {
      // an apostrophe inside a word: the word goes on
    } else {
      inWord = false;
    }
  }
  return n;
};

/** Sentences, each a trimmed verbatim slice; a full stop between digits (`1.5`) does not end one. */
const LETTER_OR_DIGIT_ANYWHERE = /[\p{L}\p{N}]/u;
const SENTENCE = /[^.!?…]+(?:(?<=\d)\.(?=\d)[^.!?…]*)*[.!?…]*["'”’)\]]*|[.!?…]+/g;
export const splitSentences = (line: string): string[] => {
  const out: string[] = [];
  for (const match of line.match(SENTENCE) ?? []) {
    const sentence = match.trim();
    if (LETTER_OR_DIGIT_ANYWHERE.test(sentence)) out.push(sentence);
  }
  return out;
};

const TIME = String.raw`(?:\d{1,2}:)?\d{1,2}:\d{2}(?:[.,]\d{1,3})?`;
const CUE_TIMING = new RegExp(String.raw`^\s*${TIME}\s*-->\s*${TIME}`);
const BRACKETED_TIME = new RegExp(String.raw` ?[\[(]\s*${TIME}\s*[\])]`, 'g');
/** `00:01:02 ` or `01:02.500 ` opens a line; a bare `10:30 ` only when a label follows. */
const LEADING_TIME_STRICT = /^(?:\d{1,2}:\d{2}:\d{2}(?:[.,]\d{1,3})?|\d{1,2}:\d{2}[.,]\d{1,3})\s+(?:-\s+)?/;
const LEADING_TIME_LOOSE = /^\d{1,2}:\d{2}\s+(?:-\s+)?/;
// Tag contents are bounded ({0,100}) so an unclosed `<v <v <v…` cannot make matching quadratic.
const VOICE = /<v(?:\.[\w.-]{1,50})?\s+([^>]{1,100})>/;
const CUE_TAGS = /<\/?(?:v|c|i|b|u|ruby|rt|lang|font)(?:[.\s][^>]{0,100})?>|<\d{1,2}:\d{2}(?::\d{2})?[.,]\d{1,3}>/g;
const ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&nbsp;': ' ', '&lrm;': '', '&rlm;': '' };
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
const REP_ROLE = /^(?:rep|sales\b.*|seller|agent|ae|sdr|bdr|account executive)$/i;
const CUSTOMER_ROLE = /^(?:customer|prospect|client|caller|buyer|lead)$/i;
/** Capitalised words that end in a colon in prose: never a speaker label. */
const NOT_LABELS = new Set(
  `note notes next step steps summary agenda action question answer re fyi ps subject date time title update
  also so well yes no okay ok important example reminder warning tip http https mailto
  monday tuesday wednesday thursday friday saturday sunday today tomorrow`.split(/\s+/),
);
/** First words that make a capitalised phrase prose (`The Problem:`), not a name. */
const FUNCTION_WORDS = new Set('the a an and but or our my your their his her its this that these those we i it if in on at for to of'.split(' '));
const isLabel = (label: string): boolean => {
  const first = label.trimStart().split(/\s/, 1)[0]!.toLowerCase();
  return !NOT_LABELS.has(first) && !FUNCTION_WORDS.has(first);
};

const key = (label: string): string => label.trim().replace(/\s+/g, ' ').toLowerCase();
const fold = (text: string): string => key(text).normalize('NFKD').replace(/\p{M}/gu, '');
const displayName = (label: string): string => {
  const name = label.trim().replace(/\s+/g, ' ');
  if (/\p{Ll}/u.test(name) || GENERIC_OR_ROLE.test(name) || !/\p{Lu}.*\p{Lu}/u.test(name)) return name;
  return name.toLowerCase().replace(/(^|[\s'’.-])(\p{L})/gu, (_, sep: string, c: string) => sep + c.toUpperCase());
};

/** Drops the WebVTT header and NOTE/STYLE/REGION blocks, cue timings and cue ids / SRT indices. */
const withoutCueScaffolding = (raw: string): string[] => {
  const lines = raw.replace(/^\uFEFF/, '').split(/\r\n|\r|\n/);
  const firstContent = lines.findIndex((l) => l.trim() !== '');
  const vtt = firstContent >= 0 && /^WEBVTT(?:\s|$)/.test(lines[firstContent]!.trim());
  const kept: string[] = [];
  let skippingBlock = false;
  let blockStart = true;
  lines.forEach((line, i) => {
    const trimmed = line.trim();
    if (trimmed === '') {
      skippingBlock = false;
      blockStart = true;
      kept.push('');
      return;
    }
    const startsBlock = blockStart;
    blockStart = false;
    if (skippingBlock) return;
    if (vtt && startsBlock && (i === firstContent || /^(?:NOTE|STYLE|REGION)(?:\s|$)/.test(trimmed))) {
      skippingBlock = true;
      return;
    }
    if (CUE_TIMING.test(trimmed)) {
      const previous = kept.at(-1);
      const previousStartedBlock = i > 0 && (i === 1 || (lines[i - 2] ?? '').trim() === '');
      if (previous !== undefined && previous !== '' && (previousStartedBlock || /^\d+$/.test(previous.trim()))) kept.pop();
      kept.push('');
      return;
    }
    kept.push(line);
  });
  return kept;
};

interface RawLine {
  /** Label as written, when the line names a speaker. */
  label?: string;
  /** The line without markers and without its label. */
  text: string;
  /** The line without markers, label included: what an unlabelled transcript shows. */
  whole: string;
}

const cleanLine = (line: string): RawLine | undefined => {
  let text = line;
  // The checks on '<', '&', ':' and a final digit skip regular expressions most lines cannot match.
  const voice = text.includes('<') ? VOICE.exec(text)?.[1]?.trim() : undefined;
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
  if (voice) return text === '' ? { label: voice, text: '', whole: '' } : { label: voice, text, whole: text };
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

/**
 * The transcript's content lines, cleaned, with the speaker each belongs to (its label, or the
 * label above it). `labelled` is false, and no line has a speaker, unless two speakers say something.
 */
export const cleanTranscript = (raw: string): { lines: TranscriptLine[]; labelled: boolean } => {
  const rawLines: RawLine[] = [];
  for (const line of withoutCueScaffolding(raw)) {
    const cleaned = line.trim() === '' ? undefined : cleanLine(line);
    if (cleaned) rawLines.push(cleaned);
  }
  const lines: TranscriptLine[] = [];
  const speaking = new Set<string>();
  let current: string | undefined;
  for (const line of rawLines) {
    if (line.label) current = line.label;
    if (line.text === '') continue;
    if (current === undefined) lines.push({ text: line.text });
    else {
      lines.push({ speaker: current, text: line.text });
      if (speaking.size < 2) speaking.add(key(current));
    }
  }
  if (speaking.size >= 2) return { lines, labelled: true };
  return { lines: rawLines.filter((l) => l.whole !== '').map((l) => ({ text: l.whole })), labelled: false };
};

/** The cleaned transcript as text, one `Label: text` line per turn: what a remote model is sent. */
export const renderTranscript = (parsed: ParsedTranscript): string => {
  const names = new Map(parsed.speakers.map((s) => [s.key, s.name]));
  return parsed.utterances
    .map((u) => (u.speaker === undefined ? u.text : `${names.get(u.speaker) ?? u.speaker}: ${u.text}`))
    .join('\n');
};

const toUtterance = (speaker: string | undefined, lines: string[]): Utterance => {
  const text = lines.length === 1 ? lines[0]! : lines.join(' ');
  const sentences = lines.length === 1 ? splitSentences(text) : lines.flatMap(splitSentences);
  const utterance: Utterance = { lines, sentences, text, words: countWords(text) };
  if (speaker !== undefined) utterance.speaker = speaker;
  return utterance;
};

const nameTokens = (text: string): string[] => fold(text).split(/[\s._+-]+/).filter(Boolean);

/** The speaker matching a name: full name, then first name, then first word of the label. */
const matchName = (speakers: SpeakerInfo[], tokens: string[]): SpeakerInfo | undefined => {
  const first = tokens[0];
  if (first === undefined) return undefined;
  const full = tokens.join(' ');
  const folded = speakers.map((s) => ({ s, name: fold(s.name).replace(/[.]/g, '') }));
  return (
    folded.find((f) => f.name === full)?.s ??
    folded.find((f) => f.name === first)?.s ??
    folded.find((f) => f.name.split(' ')[0] === first)?.s
  );
};

const identifyRep = (
  speakers: SpeakerInfo[],
  hints: { repName?: string | undefined; repEmail?: string | undefined },
): { rep: SpeakerInfo; by: RepIdentifiedBy } | undefined => {
  const byName = hints.repName ? matchName(speakers, nameTokens(hints.repName)) : undefined;
  if (byName) return { rep: byName, by: 'rep_name' };
  const local = hints.repEmail?.split('@')[0];
  const byEmail = local ? matchName(speakers, nameTokens(local)) : undefined;
  if (byEmail) return { rep: byEmail, by: 'rep_email' };
  const byRole = speakers.find((s) => REP_ROLE.test(s.name));
  if (byRole) return { rep: byRole, by: 'role_label' };
  const first = speakers.find((s) => !CUSTOMER_ROLE.test(s.name)) ?? speakers[0];
  return first ? { rep: first, by: 'first_speaker' } : undefined;
};

/** Cleans the transcript, splits it into turns and identifies the rep (rules at the top of this file). */
export const parseTranscript = (
  raw: string,
  hints: { repName?: string | undefined; repEmail?: string | undefined } = {},
): ParsedTranscript => {
  const { lines, labelled } = cleanTranscript(raw);
  const keys = new Map<string, string>();
  const keyOf = (label: string): string => {
    let k = keys.get(label);
    if (k === undefined) keys.set(label, (k = key(label)));
    return k;
  };
  const utterances: Utterance[] = [];
  if (!labelled) {
    for (const line of lines) utterances.push(toUtterance(undefined, [line.text]));
  } else {
    let speaker: string | undefined;
    let pending: string[] = [];
    const flush = () => {
      if (pending.length > 0) utterances.push(toUtterance(speaker, pending));
      pending = [];
    };
    for (const line of lines) {
      const lineKey = line.speaker === undefined ? undefined : keyOf(line.speaker);
      if (lineKey !== speaker) flush();
      speaker = lineKey;
      pending.push(line.text);
    }
    flush();
  }

  const speakers: SpeakerInfo[] = [];
  if (labelled) {
    const byKey = new Map<string, SpeakerInfo>();
    for (const line of lines) {
      if (line.speaker === undefined || byKey.has(keyOf(line.speaker))) continue;
      const name = displayName(line.speaker);
      const info: SpeakerInfo = { key: keyOf(line.speaker), name, role: 'prospect', isPersonName: !GENERIC_OR_ROLE.test(name), words: 0 };
      byKey.set(info.key, info);
      speakers.push(info);
    }
    for (const u of utterances) if (u.speaker !== undefined) byKey.get(u.speaker)!.words += u.words;
  }
  const totalWords = utterances.reduce((sum, u) => sum + u.words, 0);
  const found = identifyRep(speakers, hints);
  if (!found) return { utterances, speakersKnown: false, speakers: [], totalWords };
  for (const s of speakers) s.role = s === found.rep ? 'rep' : REP_ROLE.test(s.name) ? 'unknown' : 'prospect';
  return { utterances, speakersKnown: true, speakers, rep: found.rep.key, repIdentifiedBy: found.by, totalWords };
};
