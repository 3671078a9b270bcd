/**
 * Turns the raw JSON body of a Push API request into a `Submission`, or into every field error it
 * has (not only the first), each naming the field as the caller sent it and the rule it breaks.
 *
 * Rules beyond the per-field ones (see field-readers.ts for the shared conventions):
 * - At least one of `transcript` and `audioUrl` must be non-empty (spec rule 1).
 * - A camelCase and a snake_case alias with equal values are fine; different values are a 400
 *   naming both. `useAiCallTitle` is the inverse of `disableAiTitleGeneration`: contradicting it is
 *   a 400 too.
 * - A transcript over 512,000 UTF-8 bytes is truncated on a character boundary, with a warning.
 * - Unknown fields are ignored and listed in `warnings` (at most 20 named).
 * - No string anywhere in the body, keys included, may hold U+0000 or an unpaired surrogate, and
 *   the body nests at most 32 levels (storable-text.ts): what is accepted, every backend can store.
 */
import { SUBMISSION_FIELDS, SUBMISSION_LIMITS, type FieldError } from './submission-schema.ts';
import type { Submission } from './submission.ts';
import { TRANSCRIPT_MAX_BYTES, truncateChars, truncateUtf8 } from './truncate-utf8.ts';
import { unstorableTextErrors } from './storable-text.ts';
import {
  isDurationUnit,
  normaliseDuration,
  DURATION_UNITS,
  type DurationUnit,
  type NormalisedDuration,
} from './duration.ts';
import { readDeal } from './deal.ts';
import { readMetadata, readTags, sameTags } from './tags-and-metadata.ts';
import {
  ABSENT,
  invalid,
  isBlank,
  isPlainObject,
  ok,
  readBoolean,
  readEmail,
  readHttpUrl,
  readIsoDate,
  readLimitedText,
  readLimitedTrimmed,
  readText,
  readTrimmed,
  resolveAliases,
  sourcesOf,
  type Read,
  type Reader,
  type Resolved,
} from './field-readers.ts';

export type NormaliseResult =
  { ok: true; submission: Submission; warnings: string[] } | { ok: false; errors: FieldError[] };

/** Errors listed in one response at most; the rest are summarised in one more entry. */
export const MAX_LISTED_ERRORS = 100;
const MAX_LISTED_UNKNOWN = 20;

// Unknown fields that deserve more than "ignored": the caller probably expects them to work.
const UNKNOWN_FIELD_HINTS: Readonly<Record<string, string>> = {
  apiKey: 'apiKey in the body does not authenticate and is ignored; send the key in the X-API-Key header',
  api_key: 'api_key in the body does not authenticate and is ignored; send the key in the X-API-Key header',
  teamId: 'teamId is ignored: the team is inferred from the API key',
  team_id: 'team_id is ignored: the team is inferred from the API key',
};

const readDurationUnit: Reader<DurationUnit> = (value, field) => {
  const read = readTrimmed(value, field);
  if (read.kind !== 'ok') return read;
  return isDurationUnit(read.value)
    ? ok(read.value)
    : invalid(field, `${field} must be one of ${DURATION_UNITS.join(', ')}`);
};

// `duration` has no alias; its hints are durationUnit and metadata.source (see duration.ts).
const readDuration = (value: unknown, unit: DurationUnit | undefined, source: unknown): Read<NormalisedDuration> => {
  if (isBlank(value)) return ABSENT;
  const result = normaliseDuration(value, {
    ...(unit ? { unit } : {}),
    ...(typeof source === 'string' ? { source } : {}),
  });
  return result.ok ? ok(result.duration) : invalid('duration', result.message);
};

const unknownFieldWarnings = (body: Readonly<Record<string, unknown>>): string[] => {
  const unknown = Object.keys(body).filter((name) => !SUBMISSION_FIELDS.has(name));
  const plain = unknown.filter((name) => !Object.hasOwn(UNKNOWN_FIELD_HINTS, name));
  const hinted = unknown.flatMap((name) =>
    Object.hasOwn(UNKNOWN_FIELD_HINTS, name) ? [UNKNOWN_FIELD_HINTS[name] ?? ''] : [],
  );
  const listed = plain
    .slice(0, MAX_LISTED_UNKNOWN)
    .map((name) => `unknown field ${JSON.stringify(truncateChars(name, 100))} ignored`);
  const more =
    plain.length > MAX_LISTED_UNKNOWN ? [`${plain.length - MAX_LISTED_UNKNOWN} more unknown fields ignored`] : [];
  return [...hinted, ...listed, ...more];
};

const capErrors = (errors: FieldError[]): FieldError[] =>
  errors.length <= MAX_LISTED_ERRORS
    ? errors
    : [
        ...errors.slice(0, MAX_LISTED_ERRORS - 1),
        { field: 'body', message: `${errors.length - MAX_LISTED_ERRORS + 1} more errors not listed` },
      ];

// Reads one field under all its aliases, collecting its errors. Built once per request (not one
// closure per field): this runs on every ingest request.
const fieldOf =
  (body: Readonly<Record<string, unknown>>, errors: FieldError[]) =>
  <T>(names: readonly string[], reader: Reader<T>, equals?: (a: T, b: T) => boolean): Resolved<T> => {
    const resolved = resolveAliases(sourcesOf(body, names), reader, equals);
    for (const error of resolved.errors) errors.push(error);
    return resolved;
  };

const readNotes = readLimitedText(SUBMISSION_LIMITS.maxNotesChars);
const readRepName = readLimitedTrimmed(SUBMISSION_LIMITS.maxRepNameChars);
const readCallTitle = readLimitedTrimmed(SUBMISSION_LIMITS.maxCallTitleChars);

/** Normalises a Push API request body; see the top of this file for the rules. */
export const normaliseSubmission = (body: unknown): NormaliseResult => {
  if (!isPlainObject(body))
    return { ok: false, errors: [{ field: 'body', message: 'the request body must be a JSON object' }] };
  // U+0000, unpaired surrogates and over-deep nesting, anywhere in the body (storable-text.ts).
  const textErrors = unstorableTextErrors(body);
  const errors: FieldError[] = [];
  const warnings: string[] = [];
  const field = fieldOf(body, errors);

  const transcript = field(['transcript'], readText);
  const audioUrl = field(['audioUrl', 'audio_url'], readHttpUrl);
  if (transcript.value === undefined && audioUrl.value === undefined && errors.length === 0) {
    errors.push({ field: 'transcript', message: 'send at least one of transcript or audioUrl, non-empty' });
  }
  const repName = field(['repName', 'rep_name'], readRepName);
  const repEmail = field(['repEmail', 'rep_email'], readEmail);
  const callTitle = field(['callTitle', 'call_title'], readCallTitle);
  const disableAi = field(['disableAiTitleGeneration', 'disable_ai_title_generation'], readBoolean);
  const useAi = field(['useAiCallTitle', 'use_ai_call_title'], readBoolean);
  if (disableAi.value !== undefined && useAi.value !== undefined && disableAi.value === useAi.value) {
    errors.push({
      field: disableAi.field ?? 'disableAiTitleGeneration',
      message: `${disableAi.field} and ${useAi.field} contradict each other (${useAi.field} is the inverse of ${disableAi.field}); send one`,
    });
  }
  const callDate = field(['callDate', 'call_date'], readIsoDate);
  const tags = field(['tags', 'callTags', 'call_tags'], readTags, sameTags);
  const notes = field(['notes', 'callNotes', 'call_notes'], readNotes);
  const metadata = field(['metadata'], readMetadata);
  const durationUnit = field(['durationUnit', 'duration_unit'], readDurationUnit);
  const duration = readDuration(body.duration, durationUnit.value, metadata.value?.source);
  if (duration.kind === 'invalid') for (const error of duration.errors) errors.push(error);
  const deal = readDeal(body);
  for (const error of deal.errors) errors.push(error);

  if (textErrors.length > 0 || errors.length > 0) return { ok: false, errors: capErrors([...textErrors, ...errors]) };

  for (const warning of [...unknownFieldWarnings(body), ...deal.warnings]) warnings.push(warning);
  const submission: Submission = {
    aiTitleEnabled: disableAi.value !== undefined ? !disableAi.value : (useAi.value ?? true),
    tags: tags.value ?? [],
    metadata: metadata.value ?? {},
  };
  if (transcript.value !== undefined) {
    const cut = truncateUtf8(transcript.value, TRANSCRIPT_MAX_BYTES);
    submission.transcript = cut;
    if (cut.truncated) {
      warnings.push(
        `transcript truncated from ${cut.originalBytes} to ${TRANSCRIPT_MAX_BYTES} bytes or fewer: the inline transcript limit is 500 KB (512,000 bytes)`,
      );
    }
  }
  if (audioUrl.value !== undefined) submission.audioUrl = audioUrl.value;
  if (repName.value !== undefined) submission.repName = repName.value;
  if (repEmail.value !== undefined) submission.repEmail = repEmail.value;
  if (callTitle.value !== undefined) submission.callTitle = callTitle.value;
  if (callDate.value !== undefined) submission.callDate = callDate.value;
  if (duration.kind === 'ok') submission.duration = duration.value;
  if (notes.value !== undefined) submission.notes = notes.value;
  if (deal.deal !== undefined) submission.deal = deal.deal;
  return { ok: true, submission, warnings };
};
