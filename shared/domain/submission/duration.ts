/**
 * Duration normalisation. The spec: "duration — number — Minutes, seconds or milliseconds.
 * Normalised automatically." Callers send whatever their platform uses: seconds (dialers),
 * minutes (video meetings), milliseconds (CRMs). We store seconds, with the unit we assumed and why.
 *
 * The rule, first match wins:
 *   1. Explicit unit. The body may carry `durationUnit` (`duration_unit`): `seconds`, `minutes` or
 *      `milliseconds`. It is trusted as sent and never corrected later.
 *   2. Source hint. `metadata.source` (lower-cased) names the platform; its category gives the unit:
 *        dialers → seconds:       aircall, dialpad, ringcentral, justcall, kixie, orum, five9,
 *                                 talkdesk, twilio, nooks, cloudtalk, aloware
 *        meeting tools → minutes: zoom, teams, msteams, microsoft-teams, google-meet, meet, webex,
 *                                 gotomeeting, whereby
 *        CRMs → milliseconds:     hubspot, salesforce, pipedrive, zoho, dynamics
 *      The hint is used only when it gives a plausible call (0, or 1 s to 24 h); otherwise rule 3
 *      decides, so a platform that breaks its category's habit is not read as a 0.3 s call.
 *   3. Magnitude.
 *        0                                    → 0 seconds
 *        ≥ 36,000                             → milliseconds (36,000 s would be a 10-hour call)
 *        not a whole number and < 600         → minutes (dialers and CRMs send whole numbers;
 *                                               12.5 reads as 12½ minutes)
 *        anything else                        → seconds
 *      So 45 → 45 s, 600 → 10 min, 3600 → 1 h, 90,000 → 90 s, 1.5 → 90 s.
 *   Negative values, non-numbers and strings that are not plain decimals ("1,5", "1e3", "5m")
 *   are refused (400), and so is a length over 7 days once read in its unit (MAX_DURATION_SECONDS). Decimal strings ("300") are read as numbers, as for deal amounts.
 *
 * Correction. Once the real length is known — the audio's length after download, or failing that
 * an estimate from the transcript at 150 spoken words per minute — a rule-2 or rule-3 unit is
 * replaced by the candidate unit (seconds, minutes, milliseconds) whose reading of the raw value
 * is nearest the evidence, nearness measured as a ratio (|ln(candidate / evidence)|): the
 * candidates are 60× and 1000× apart, so even a rough word-count estimate picks the right one. A
 * candidate longer than 7 days (MAX_DURATION_SECONDS) is never picked, as it would be refused sent.
 */
import { toDecimal } from './decimal.ts';
import { isWhiteSpaceUnit } from '../white-space.ts';

export const DURATION_UNITS = ['seconds', 'minutes', 'milliseconds'] as const;
export type DurationUnit = (typeof DURATION_UNITS)[number];

/** Why the unit was chosen: the body said so, the platform, the size of the number, or evidence. */
export type DurationBasis = 'explicit' | 'source' | 'magnitude' | 'audio' | 'transcript';

export interface NormalisedDuration {
  /** Length of the call in seconds (millisecond precision). */
  seconds: number;
  /** The unit the raw value was read in. */
  unit: DurationUnit;
  basis: DurationBasis;
  /** The value as sent (a decimal string already read as a number). */
  raw: number;
}

export interface DurationHints {
  /** `durationUnit` from the body, when sent. */
  unit?: DurationUnit;
  /** `metadata.source`, when sent: a platform name. */
  source?: string;
}

export type DurationResult = { ok: true; duration: NormalisedDuration } | { ok: false; message: string };

/** Evidence of the real length: the audio's length, or the transcript's word count. */
export type DurationEvidence = { audioSeconds: number } | { transcriptWords: number };

/** Speaking rate used to estimate a call's length from its transcript. */
export const SPOKEN_WORDS_PER_MINUTE = 150;

const SECONDS_PER: Record<DurationUnit, number> = { seconds: 1, minutes: 60, milliseconds: 0.001 };

const SOURCES: Record<DurationUnit, readonly string[]> = {
  seconds: [
    'aircall',
    'dialpad',
    'ringcentral',
    'justcall',
    'kixie',
    'orum',
    'five9',
    'talkdesk',
    'twilio',
    'nooks',
    'cloudtalk',
    'aloware',
  ],
  minutes: ['zoom', 'teams', 'msteams', 'microsoft-teams', 'google-meet', 'meet', 'webex', 'gotomeeting', 'whereby'],
  milliseconds: ['hubspot', 'salesforce', 'pipedrive', 'zoho', 'dynamics'],
};

/** Platform name (lower case) → the unit its durations come in. */
export const SOURCE_DURATION_UNITS: ReadonlyMap<string, DurationUnit> = new Map(
  DURATION_UNITS.flatMap((unit) => SOURCES[unit].map((source) => [source, unit] as const)),
);

/**
 * The longest duration accepted, 7 days. A call's length reserves and settles capacity: an absurd
 * one (1e308 minutes overflows to Infinity, which JSON cannot carry) would wipe out the team's
 * balance in floating point, so it is a 400 rather than a reservation
 * (docs/decisions/0026-bounds-the-spec-leaves-open.md).
 */
export const MAX_DURATION_SECONDS = 7 * 24 * 3600;

const MILLISECONDS_FROM = 36_000;
const FRACTIONAL_MINUTES_BELOW = 600;
const PLAUSIBLE_SECONDS = { min: 1, max: 24 * 3600 };

const toSeconds = (raw: number, unit: DurationUnit): number => Math.round(raw * SECONDS_PER[unit] * 1000) / 1000;

const read = (raw: number, unit: DurationUnit, basis: DurationBasis): NormalisedDuration => ({
  seconds: toSeconds(raw, unit),
  unit,
  basis,
  raw,
});

const plausible = (seconds: number): boolean =>
  seconds === 0 || (seconds >= PLAUSIBLE_SECONDS.min && seconds <= PLAUSIBLE_SECONDS.max);

const byMagnitude = (raw: number): DurationUnit => {
  if (raw >= MILLISECONDS_FROM) return 'milliseconds';
  if (!Number.isInteger(raw) && raw < FRACTIONAL_MINUTES_BELOW) return 'minutes';
  return 'seconds';
};

/** True when `value` names a duration unit. */
export const isDurationUnit = (value: unknown): value is DurationUnit =>
  typeof value === 'string' && (DURATION_UNITS as readonly string[]).includes(value);

/** Reads `duration` to seconds by the rule at the top of this file. */
export const normaliseDuration = (raw: unknown, hints: DurationHints = {}): DurationResult => {
  const value = toDecimal(raw);
  if (value === undefined || value < 0) {
    return { ok: false, message: 'duration must be a number ≥ 0 (a plain decimal string like "90" is accepted)' };
  }
  const sourceUnit =
    hints.source === undefined ? undefined : SOURCE_DURATION_UNITS.get(hints.source.trim().toLowerCase());
  const duration = hints.unit
    ? read(value, hints.unit, 'explicit')
    : sourceUnit && plausible(toSeconds(value, sourceUnit))
      ? read(value, sourceUnit, 'source')
      : read(value, byMagnitude(value), 'magnitude');
  if (duration.seconds > MAX_DURATION_SECONDS) {
    return {
      ok: false,
      message: `duration must be at most 7 days (${MAX_DURATION_SECONDS} seconds); ${value} read as ${duration.unit} is longer`,
    };
  }
  return { ok: true, duration };
};

/**
 * Whether a UTF-16 code unit is white space as `\s` reads it (so as `split(/\s+/u)` splits words):
 * the service's white space and the byte order mark, which `\s` also counts. None of them is a
 * surrogate, so a code unit at a time reads as a code point at a time would.
 */
const isWhiteSpace = (unit: number): boolean => isWhiteSpaceUnit(unit) || unit === 0xfeff;

/**
 * Words in a transcript, for the length estimate: the runs of characters between white space
 * (what `text.split(/\s+/u)` leaves non-empty), counted without making them.
 */
export const countWords = (text: string): number => {
  let words = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const space = isWhiteSpace(text.charCodeAt(i));
    if (!space && !inWord) words += 1;
    inWord = !space;
  }
  return words;
};

/** Seconds a transcript of this many words takes to speak at SPOKEN_WORDS_PER_MINUTE. */
export const estimateSpokenSeconds = (words: number): number => (words / SPOKEN_WORDS_PER_MINUTE) * 60;

/**
 * Re-reads the raw value in the unit nearest the evidence (see the top of this file), among the
 * units whose reading is within MAX_DURATION_SECONDS: the cap holds for a corrected length as for
 * a sent one, or a long transcript would turn 12,000 into 12,000 minutes (8⅓ days, capacity
 * charged for all of them) where 12,000 sent as minutes is a 400. An explicit unit, a zero
 * duration, empty evidence, and a value no unit reads within the cap leave the duration as it is.
 */
export const correctDuration = (duration: NormalisedDuration, evidence: DurationEvidence): NormalisedDuration => {
  const [basis, evidenceSeconds] =
    'audioSeconds' in evidence
      ? (['audio', evidence.audioSeconds] as const)
      : (['transcript', estimateSpokenSeconds(evidence.transcriptWords)] as const);
  if (duration.basis === 'explicit' || duration.raw <= 0 || !(evidenceSeconds > 0) || !Number.isFinite(evidenceSeconds))
    return duration;
  const distance = (unit: DurationUnit): number => Math.abs(Math.log(toSeconds(duration.raw, unit) / evidenceSeconds));
  const withinCap = DURATION_UNITS.filter((unit) => toSeconds(duration.raw, unit) <= MAX_DURATION_SECONDS);
  if (withinCap.length === 0) return duration;
  const nearest = withinCap.reduce((best, unit) => (distance(unit) < distance(best) ? unit : best));
  return read(duration.raw, nearest, basis);
};
