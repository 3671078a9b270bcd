/**
 * Reads a transcript into speaker turns. Pure: no clock, no I/O.
 *
 * Lines: `cleanTranscript` (`shared/domain/transcript/transcript-lines.ts`) cleans the text of cue
 * scaffolding and markers and reads speaker labels; the transcript counts as speaker-labelled only
 * when it names at least two distinct speakers. When the call's segments carry speakers (an engine
 * that tells speakers apart, WebVTT `<v Name>` cues), they are the lines instead, under the same
 * rule. Consecutive lines of one speaker merge into one turn; in an unlabelled transcript every
 * line is its own turn with no speaker.
 *
 * The rep, in order: the label matching `repName` (full name, else first name, else a label whose
 * first word is the rep's first name; case- and accent-insensitive), then the same with the local
 * part of `repEmail` (`dana.reyes@…`); then a role label (`Rep`, `Agent`, `Sales…`, `Seller`,
 * `AE`, `SDR`, `BDR`, `Account Executive`); otherwise, by convention, the first speaker who is not
 * labelled as a customer role — the rep usually opens a sales call. Other speakers are prospects,
 * except other rep-role labels (a colleague on the call), whose role is `unknown`.
 */

import {
  cleanTranscript,
  displayName,
  isGenericOrRoleLabel,
  speakerKey,
  type TranscriptLine,
} from '../../domain/transcript/transcript-lines.ts';
import type { TranscriptSegment } from '../../domain/transcript/transcript-segments.ts';

export { cleanTranscript };
export type { TranscriptLine };

export type SpeakerRole = 'rep' | 'prospect' | 'unknown';
export type RepIdentifiedBy = 'rep_name' | 'rep_email' | 'role_label' | 'first_speaker';

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

const REP_ROLE = /^(?:rep|sales\b.*|seller|agent|ae|sdr|bdr|account executive)$/i;
const CUSTOMER_ROLE = /^(?:customer|prospect|client|caller|buyer|lead)$/i;
const key = speakerKey;
const fold = (text: string): string => key(text).normalize('NFKD').replace(/\p{M}/gu, '');

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

const nameTokens = (text: string): string[] =>
  fold(text)
    .split(/[\s._+-]+/)
    .filter(Boolean);

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

/** The segments as lines (each line of a segment's text one line), when some segment names its speaker. */
const segmentLines = (
  segments: readonly TranscriptSegment[],
): { lines: TranscriptLine[]; labelled: boolean } | undefined => {
  if (!segments.some((s) => s.speaker !== null)) return undefined;
  const lines: TranscriptLine[] = [];
  const speaking = new Set<string>();
  for (const segment of segments) {
    for (const part of segment.text.split('\n')) {
      const text = part.trim();
      if (text === '') continue;
      if (segment.speaker === null) lines.push({ text });
      else {
        lines.push({ speaker: segment.speaker, text });
        speaking.add(speakerKey(segment.speaker));
      }
    }
  }
  return { lines, labelled: speaking.size >= 2 };
};

/**
 * Cleans the transcript, splits it into turns and identifies the rep (rules at the top of this
 * file). `segments`, when some name their speaker, are read instead of the text's lines.
 */
export const parseTranscript = (
  raw: string,
  hints: { repName?: string | undefined; repEmail?: string | undefined } = {},
  segments: readonly TranscriptSegment[] = [],
): ParsedTranscript => {
  const { lines, labelled } = segmentLines(segments) ?? cleanTranscript(raw);
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
      const info: SpeakerInfo = {
        key: keyOf(line.speaker),
        name,
        role: 'prospect',
        isPersonName: !isGenericOrRoleLabel(name),
        words: 0,
      };
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
