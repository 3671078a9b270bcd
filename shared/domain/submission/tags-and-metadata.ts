/**
 * Readers for the two collection fields: `tags` (≤ 20 strings of ≤ 50 characters) and `metadata`
 * (a flat object of ≤ 20 keys). Element errors stop after MAX_ELEMENT_ERRORS per field: the count
 * error already says the whole value is refused, and a 10 MB body of bad elements must not become
 * a response of millions of errors.
 */
import type { FieldError } from './submission-schema.ts';
import { SUBMISSION_LIMITS } from './submission-schema.ts';
import { ABSENT, isBlank, isPlainObject, longerThan, ok, type Read, type Reader } from './field-readers.ts';
import { isWhiteSpaceOnly, trimWhiteSpace } from '../white-space.ts';

const MAX_ELEMENT_ERRORS = 20;

/** A metadata value: flat, so no object or array. */
export type MetadataValue = string | number | boolean | null;

const limited = (errors: FieldError[]): FieldError[] => errors.slice(0, MAX_ELEMENT_ERRORS);

/**
 * Tags: an array of non-blank strings, each trimmed of white space (U+FEFF is kept and is not
 * blank: ../white-space.ts). Tags equal once trimmed are one tag, kept where it first appears:
 * tags filter call history as a set. The count limit applies to those tags, the length limit to
 * the trimmed tag. A blank value
 * (`""`, white space only) is not sent, as for every field (field-readers.ts): a template fills
 * an empty list with "".
 */
export const readTags: Reader<string[]> = (value, field) => {
  if (isBlank(value)) return ABSENT;
  if (!Array.isArray(value))
    return { kind: 'invalid', errors: [{ field, message: `${field} must be an array of strings` }] };
  const { maxTags, maxTagChars } = SUBMISSION_LIMITS;
  const errors: FieldError[] = [];
  // Counted as the call keeps them: entries equal once trimmed are one tag.
  const distinct = new Set(value.map((tag: unknown) => (typeof tag === 'string' ? trimWhiteSpace(tag) : tag))).size;
  if (distinct > maxTags) errors.push({ field, message: `at most ${maxTags} tags (got ${distinct})` });
  const elementErrors: FieldError[] = [];
  value.forEach((tag: unknown, i) => {
    const at = `${field}[${i}]`;
    if (typeof tag !== 'string') elementErrors.push({ field: at, message: 'each tag must be a string' });
    else if (isWhiteSpaceOnly(tag)) elementErrors.push({ field: at, message: 'each tag must be non-empty' });
    else if (longerThan(trimWhiteSpace(tag), maxTagChars))
      elementErrors.push({ field: at, message: `each tag at most ${maxTagChars} characters` });
  });
  errors.push(...limited(elementErrors));
  if (errors.length > 0) return { kind: 'invalid', errors };
  return ok([...new Set((value as string[]).map(trimWhiteSpace))]);
};

/** Two tag lists are the same when they hold the same tags in the same order. */
export const sameTags = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && a.every((tag, i) => tag === b[i]);

/**
 * Metadata: a flat object of at most 20 keys; values are strings, numbers, booleans or null. A
 * number must be finite and, when it is an integer, a safe one (|n| ≤ 2^53 − 1): identifiers beyond
 * that are sent as strings. A fraction is kept as the double it parsed to. A blank value is not sent.
 */
export const readMetadata: Reader<Record<string, MetadataValue>> = (
  value,
  field,
): Read<Record<string, MetadataValue>> => {
  if (isBlank(value)) return ABSENT;
  if (!isPlainObject(value))
    return { kind: 'invalid', errors: [{ field, message: `${field} must be a flat object of key/value pairs` }] };
  const { maxMetadataKeys } = SUBMISSION_LIMITS;
  const keys = Object.keys(value);
  const errors: FieldError[] = [];
  if (keys.length > maxMetadataKeys)
    errors.push({ field, message: `${field} at most ${maxMetadataKeys} keys (got ${keys.length})` });
  const { maxMetadataKeyChars, maxMetadataValueChars } = SUBMISSION_LIMITS;
  const elementErrors: FieldError[] = [];
  for (const key of keys) {
    if (elementErrors.length >= MAX_ELEMENT_ERRORS) break;
    const v = value[key];
    const longKey = longerThan(key, maxMetadataKeyChars);
    const at = `${field}.${longKey ? `${[...key].slice(0, maxMetadataKeyChars).join('')}…` : key}`;
    if (longKey) elementErrors.push({ field: at, message: `${field} keys at most ${maxMetadataKeyChars} characters` });
    if (typeof v === 'string' && longerThan(v, maxMetadataValueChars)) {
      elementErrors.push({ field: at, message: `${field} values at most ${maxMetadataValueChars} characters` });
    } else if (typeof v === 'number' && !Number.isFinite(v)) {
      // 1e999 in the JSON parses to Infinity, which JSON cannot write back: it would be stored as null.
      elementErrors.push({
        field: at,
        message: `${field} numbers must be finite (within ±1.79e308); this one is ${v > 0 ? 'larger' : 'smaller'}`,
      });
    } else if (typeof v === 'number' && Number.isInteger(v) && !Number.isSafeInteger(v)) {
      // A CRM's call id above 2^53 (12345678901234567891) parses to the nearest double
      // (12345678901234567000): stored, it would name another call. Past 2^53 a double cannot tell
      // neighbouring integers apart, so any integer there may not be what was sent.
      elementErrors.push({
        field: at,
        message: `${field} integers must be within ±${Number.MAX_SAFE_INTEGER} (2^53 − 1): this one cannot be kept exactly; send it as a string`,
      });
    } else if (typeof v === 'object' && v !== null) {
      elementErrors.push({
        field: at,
        message: `${field} must be flat: values are strings, numbers, booleans or null, not objects or arrays`,
      });
    }
  }
  errors.push(...elementErrors);
  if (errors.length > 0) return { kind: 'invalid', errors };
  // The parsed body's own object: JSON.parse makes "__proto__" an own, plain key, never a prototype.
  return ok(value as Record<string, MetadataValue>);
};
