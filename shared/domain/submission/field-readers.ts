/**
 * Readers for single submission fields, and alias resolution.
 *
 * Conventions the whole normaliser follows:
 * - `null`, `""` and white-space-only strings mean "not sent". Integrations built from templates
 *   send empty values for missing data; refusing them would push every caller to special-case.
 * - Short identity fields (URL, e-mail, rep name, title, dates, duration unit, tags) are trimmed;
 *   free text (transcript, notes, deal notes) and metadata are kept verbatim.
 * - White space is what ../white-space.ts says: what `trim()` removes but U+FEFF, which is kept
 *   (and is not blank) like the other zero-width characters.
 * - "Characters" are Unicode code points, for every limit (tags, notes, names, the URL, metadata):
 *   an emoji of one code point (😀) is one character; a flag (🇫🇷, two regional indicators), a
 *   skin-toned emoji (👍🏽, two) or a family joined by U+200D (👩‍👩‍👧, five) is two or more, though a
 *   person sees one. Counting what a person sees (grapheme clusters, Intl.Segmenter) costs about
 *   18× as much on a 2000-character field, on every request.
 * - Error fields are the names the caller sent (`rep_email`, `call_tags[3]`, `deal.dealSize`).
 */
import { type FieldError, SUBMISSION_LIMITS } from './submission-schema.ts';
import { canonicalIsoDate, ISO_DATE_FORMS } from './iso-date.ts';
import { isDecimalNotation, toDecimal } from './decimal.ts';
import { isWhiteSpaceOnly, trimWhiteSpace } from '../white-space.ts';

/** What reading one field gave: nothing sent, a value, or the errors it breaks. */
export type Read<T> = { kind: 'absent' } | { kind: 'ok'; value: T } | { kind: 'invalid'; errors: FieldError[] };
export type Reader<T> = (value: unknown, field: string) => Read<T>;

export const ABSENT = { kind: 'absent' } as const;
export const ok = <T>(value: T): Read<T> => ({ kind: 'ok', value });
export const invalid = (field: string, message: string): Read<never> => ({
  kind: 'invalid',
  errors: [{ field, message }],
});

/** `null`, `undefined`, `""` or white space only (U+FEFF is not white space). */
export const isBlank = (value: unknown): boolean =>
  value === undefined || value === null || (typeof value === 'string' && isWhiteSpaceOnly(value));

/** Code points in `text`, counting no further than `stopAfter` + 1 (enough to say "too long"). */
export const characterCount = (text: string, stopAfter = Number.POSITIVE_INFINITY): number => {
  let count = 0;
  for (const _ of text) if (++count > stopAfter) break;
  return count;
};

/**
 * Whether `text` has more than `max` characters (code points). A text of at most `max` UTF-16
 * units has at most `max` code points, so only a longer one is counted.
 */
export const longerThan = (text: string, max: number): boolean => text.length > max && characterCount(text, max) > max;

/** A string, kept verbatim; blank means not sent. */
export const readText: Reader<string> = (value, field) => {
  if (isBlank(value)) return ABSENT;
  return typeof value === 'string' ? ok(value) : invalid(field, `${field} must be a string`);
};

/** A string, trimmed of white space (U+FEFF is kept); blank means not sent. */
export const readTrimmed: Reader<string> = (value, field) => {
  const read = readText(value, field);
  return read.kind === 'ok' ? ok(trimWhiteSpace(read.value)) : read;
};

/** A trimmed string of at most `max` characters (counted after trimming). */
export const readLimitedTrimmed =
  (max: number): Reader<string> =>
  (value, field) => {
    const read = readTrimmed(value, field);
    if (read.kind !== 'ok') return read;
    return longerThan(read.value, max) ? invalid(field, `${field} at most ${max} characters`) : read;
  };

/** Free text of at most `max` characters, kept verbatim. */
export const readLimitedText =
  (max: number): Reader<string> =>
  (value, field) => {
    const read = readText(value, field);
    if (read.kind !== 'ok') return read;
    return longerThan(read.value, max) ? invalid(field, `${field} at most ${max} characters`) : read;
  };

/**
 * A real boolean. The exact strings "true" and "false" are accepted too: workflow tools (the spec's
 * `syncMethod: workflow`) often can only send strings, and those two are unambiguous — the same
 * reasoning docs/decisions/0009-values-sent-as-strings.md applies to numbers. "yes", "1", "TRUE" and numbers are refused.
 */
export const readBoolean: Reader<boolean> = (value, field) => {
  if (isBlank(value)) return ABSENT;
  if (typeof value === 'boolean') return ok(value);
  if (value === 'true' || value === 'false') return ok(value === 'true');
  return invalid(field, `${field} must be a boolean (true or false)`);
};

/** An absolute http:// or https:// URL with a host. */
export const readHttpUrl: Reader<string> = (value, field) => {
  const read = readTrimmed(value, field);
  if (read.kind !== 'ok') return read;
  if (longerThan(read.value, SUBMISSION_LIMITS.maxAudioUrlChars))
    return invalid(field, `${field} at most ${SUBMISSION_LIMITS.maxAudioUrlChars} characters`);
  let url: URL;
  try {
    url = new URL(read.value);
  } catch {
    return invalid(field, `${field} must be an absolute http(s) URL`);
  }
  const web = (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  if (!web) return invalid(field, `${field} must be an absolute http(s) URL`);
  // The fetcher refuses such a URL (credentials in a URL leak into logs and the call's page): the
  // call would be accepted only to fail, with the password stored in its submission.
  if (url.username !== '' || url.password !== '')
    return invalid(field, `${field} must not carry a user name or password`);
  return read;
};

// The WHATWG "valid e-mail address" (what browsers accept in <input type=email>), at most 254 characters.
const EMAIL =
  /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/;

/** An e-mail address, trimmed; case kept as sent (matching lower-cases it). */
export const readEmail: Reader<string> = (value, field) => {
  const read = readTrimmed(value, field);
  if (read.kind !== 'ok') return read;
  return read.value.length <= 254 && EMAIL.test(read.value)
    ? read
    : invalid(field, `${field} must be an e-mail address`);
};

/** An ISO 8601 date or date-time, returned as a canonical UTC instant (see iso-date.ts). */
export const readIsoDate: Reader<string> = (value, field) => {
  const read = readTrimmed(value, field);
  if (read.kind !== 'ok') return read;
  const canonical = canonicalIsoDate(read.value);
  return canonical === undefined ? invalid(field, `${field} must be ${ISO_DATE_FORMS}`) : ok(canonical);
};

/**
 * A money amount: ≥ 0 and at most 2^53 − 1, as a number or a plain decimal string (see
 * decimal.ts; docs/decisions/0008-deal-fields.md). Past 2^53 a double cannot tell neighbouring
 * whole amounts apart: "9007199254740993" would be stored as 9007199254740992, so, as for a
 * metadata integer, it is a 400 rather than another amount. One too large for a double at all
 * ("9" × 400, or 1e999 in the JSON) is refused for its size, not for its notation.
 */
export const readAmount: Reader<number> = (value, field) => {
  if (isBlank(value)) return ABSENT;
  const n = toDecimal(value);
  const negative = typeof value === 'number' ? value < 0 : typeof value === 'string' && value.startsWith('-');
  if (n === undefined && !isDecimalNotation(value))
    return invalid(field, `${field} must be a number or a plain decimal string like "1200.50"`);
  if (negative && n !== 0) return invalid(field, `${field} must be ≥ 0`);
  if (n === undefined || n > Number.MAX_SAFE_INTEGER)
    return invalid(
      field,
      `${field} must be at most ${Number.MAX_SAFE_INTEGER} (2^53 − 1): a larger amount cannot be kept exactly`,
    );
  return ok(n);
};

/** One place a value may come from: the field name as sent, and its value. */
export interface Source {
  field: string;
  value: unknown;
}

export interface Resolved<T> {
  /** The value, when some alias carried a valid one. */
  value?: T;
  /** The alias it came from. */
  field?: string;
  errors: FieldError[];
}

/**
 * Reads every alias that was sent. Invalid ones report their own errors. Valid ones must agree
 * (by `equals`); if two differ the error names both: "repName and rep_name differ; send one".
 */
export const resolveAliases = <T>(
  sources: readonly Source[],
  reader: Reader<T>,
  equals: (a: T, b: T) => boolean = Object.is,
): Resolved<T> => {
  const errors: FieldError[] = [];
  let first: { field: string; value: T } | undefined;
  for (const { field, value } of sources) {
    const read = reader(value, field);
    if (read.kind === 'invalid') errors.push(...read.errors);
    if (read.kind !== 'ok') continue;
    if (first === undefined) first = { field, value: read.value };
    else if (!equals(first.value, read.value))
      errors.push({ field: first.field, message: `${first.field} and ${field} differ; send one` });
  }
  return errors.length > 0 || first === undefined ? { errors } : { value: first.value, field: first.field, errors };
};

/** The sources for these names that `object` actually carries, `prefix` added to each field name. */
export const sourcesOf = (object: Readonly<Record<string, unknown>>, names: readonly string[], prefix = ''): Source[] =>
  names
    .filter((name) => Object.hasOwn(object, name))
    .map((name) => ({ field: `${prefix}${name}`, value: object[name] }));

/** A JSON object (not an array, not null). */
export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
