import { type ObjectOptions, type TSchema, Type } from '@sinclair/typebox';

/**
 * A key pattern every string matches. `Type.Record(Type.String(), …)` writes its keys as `^(.*)$`,
 * and `.` matches no line terminator (\n, \r, U+2028, U+2029): the response serialiser dropped such
 * a key without a word, and a schema check passed its value unchecked. A metadata key is the
 * caller's text, and may hold any of them.
 */
const ANY_KEY = '^[\\s\\S]*$';

/** A JSON object whose every key, whatever characters it holds, maps to a `value`. */
export const AnyKeyRecord = <T extends TSchema>(value: T, options?: ObjectOptions) =>
  Type.Record(Type.String({ pattern: ANY_KEY }), value, options);
