/**
 * Text every backend can store, checked once over the whole request body.
 *
 * Two things in a JSON string cannot be stored everywhere, so they are refused (400) wherever they
 * appear, in every string of the body — values and keys, known fields or not, at any depth:
 * - U+0000: PostgreSQL refuses it in `text` and in `jsonb` ("unsupported Unicode escape sequence").
 * - An unpaired surrogate (`"\ud800"`, or a pair written in the wrong order `"\udc00\ud800"`): it
 *   is half of a UTF-16 pair and encodes no character. PostgreSQL `jsonb` refuses it, `text`
 *   silently turns it into U+FFFD, and SQLite's FTS5 index is corrupted by it.
 * The ingress strips and replaces nothing: the caller learns which field to fix, and what is
 * stored is what was sent. Every other code point is stored and returned as sent — tab, newline
 * and the other control characters (C0 and C1), non-characters (U+FFFE, U+FFFF), zero-width and
 * bidirectional formatting characters — because every backend stores them unchanged.
 *
 * Nesting is bounded too: objects and arrays at most MAX_BODY_DEPTH deep (the contract's body is
 * at most three levels deep). A 10 MB body can nest five million levels, and recursive code such as
 * `JSON.stringify` runs out of stack at about ten thousand; the walk here keeps its own stack.
 *
 * Field names follow the normaliser's convention: the name as sent, `.key` into an object, `[i]`
 * into an array (`metadata.crm.note`, `call_tags[2]`). Indexes count code points from 0.
 */
import type { FieldError } from './submission-schema.ts';
import { truncateChars } from './truncate-utf8.ts';

/**
 * Objects and arrays nest at most this deep, the body itself being level 1
 * (docs/decisions/0026-bounds-the-spec-leaves-open.md).
 */
export const MAX_BODY_DEPTH = 32;
/** Unstorable strings listed in one answer at most; the rest are counted in one more entry. */
const MAX_LISTED = 100;
/** A key is named in an error by at most this many characters. */
const MAX_KEY_CHARS = 100;

// In a `u` regex a well-formed pair is one code point, so the class matches only a lone half.
// U+0000 is exactly what this rule looks for.
// eslint-disable-next-line no-control-regex
const UNSTORABLE = /[\u0000\ud800-\udfff]/u;
// eslint-disable-next-line no-control-regex
const UNSTORABLE_ALL = /[\u0000\ud800-\udfff]/gu;

/** The first code point of `text` no backend can store, and its index in code points. */
export interface Unstorable {
  codePoint: number;
  index: number;
}

const isHigh = (unit: number): boolean => unit >= 0xd800 && unit <= 0xdbff;

/** Where `text` first holds U+0000 or an unpaired surrogate; undefined when every backend can store it. */
export const findUnstorable = (text: string): Unstorable | undefined => {
  const at = text.search(UNSTORABLE);
  if (at < 0) return undefined;
  let index = 0;
  for (let i = 0; i < at; i++, index++) if (isHigh(text.charCodeAt(i))) i++; // everything before `at` is well formed
  return { codePoint: text.charCodeAt(at), index };
};

const hex = (codePoint: number): string => `U+${codePoint.toString(16).toUpperCase().padStart(4, '0')}`;

/** The rule a string breaks: "contains U+0000 at index 1; …". */
export const unstorableMessage = ({ codePoint, index }: Unstorable, what = 'contains'): string =>
  `${what} ${codePoint === 0 ? hex(0) : `an unpaired surrogate ${hex(codePoint)}`} at index ${index}; text may not contain U+0000 or unpaired surrogates`;

/** True when every backend can store `text`. */
export const isStorable = (text: string): boolean => !UNSTORABLE.test(text);

/**
 * `text` with each U+0000 and unpaired surrogate replaced by U+FFFD. For copies derived from text
 * that did not come through the ingress (a remote analyser's title, events stored before this
 * rule), where a search index must never be handed either.
 */
export const toStorable = (text: string): string => (isStorable(text) ? text : text.replace(UNSTORABLE_ALL, '\ufffd'));

/** A key as it can be shown in a field name: unstorable code points escaped (`\u0000`), cut to 100 characters. */
const shownKey = (key: string): string => {
  const safe = isStorable(key)
    ? key
    : key.replace(UNSTORABLE_ALL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  const cut = truncateChars(safe, MAX_KEY_CHARS);
  return cut === safe ? safe : `${cut}…`;
};

/** The field-name part of an object key: the key itself at the top level, `.key` below it. */
const keySegment = (key: string, depth: number): string => (depth === 1 ? shownKey(key) : `.${shownKey(key)}`);

type Container = readonly unknown[] | Readonly<Record<string, unknown>>;

interface Frame {
  node: Container;
  /** The object's keys; undefined for an array. */
  keys: readonly string[] | undefined;
  next: number;
  /** This container's part of a field name: `metadata`, `.crm`, `[2]`. */
  segment: string;
}

/**
 * Every string of `body` (keys included) that holds U+0000 or an unpaired surrogate, and the first
 * place where objects and arrays nest deeper than MAX_BODY_DEPTH, as field errors.
 */
export const unstorableTextErrors = (body: Readonly<Record<string, unknown>>): FieldError[] => {
  const errors: FieldError[] = [];
  let unlisted = 0;
  let tooDeep = false;
  const frames: Frame[] = [{ node: body, keys: Object.keys(body), next: 0, segment: '' }];
  const fieldOf = (segment: string): string => {
    let path = '';
    for (let i = 1; i < frames.length; i++) path += frames[i]!.segment;
    return path + segment;
  };
  const report = (segment: string, message: () => string): void => {
    if (errors.length < MAX_LISTED) errors.push({ field: fieldOf(segment), message: message() });
    else unlisted++;
  };

  while (frames.length > 0) {
    const frame = frames[frames.length - 1]!;
    const { node, keys } = frame;
    const size = keys ? keys.length : (node as readonly unknown[]).length;
    // Children in a tight loop; a container child is entered (and this frame resumed after it).
    let entered = false;
    while (!entered && frame.next < size) {
      const i = frame.next++;
      let value: unknown;
      let key: string | undefined;
      if (keys) {
        key = keys[i]!;
        value = (node as Readonly<Record<string, unknown>>)[key];
        const bad = findUnstorable(key);
        if (bad) report(keySegment(key, frames.length), () => unstorableMessage(bad, 'the key contains'));
      } else {
        value = (node as readonly unknown[])[i];
      }
      if (typeof value === 'string') {
        if (isStorable(value)) continue;
        const bad = findUnstorable(value)!;
        report(key === undefined ? `[${i}]` : keySegment(key, frames.length), () => unstorableMessage(bad));
      } else if (typeof value === 'object' && value !== null) {
        const segment = key === undefined ? `[${i}]` : keySegment(key, frames.length);
        if (frames.length < MAX_BODY_DEPTH) {
          frames.push({
            node: value as Container,
            keys: Array.isArray(value) ? undefined : Object.keys(value),
            next: 0,
            segment,
          });
          entered = true;
        } else if (!tooDeep) {
          tooDeep = true;
          report(
            segment,
            () =>
              `nested too deep: objects and arrays may nest at most ${MAX_BODY_DEPTH} levels, the body being the first`,
          );
        }
      }
    }
    if (!entered) frames.pop();
  }
  if (unlisted > 0)
    errors.push({ field: 'body', message: `${unlisted} more strings with U+0000 or an unpaired surrogate not listed` });
  return errors;
};
