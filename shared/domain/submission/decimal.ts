/**
 * Numbers that may arrive as strings. docs/decisions/0009-values-sent-as-strings.md: "Numbers sent as strings: accepted when
 * unambiguous ("1200.50"); anything else is a 400 naming the field."
 *
 * Unambiguous means plain decimal notation: an optional minus, digits, optionally a dot and more
 * digits. Refused: thousands separators ("1,200.50" — the comma could be a decimal comma),
 * exponents ("1e3"), surrounding spaces, a leading "+" or ".", hex, "Infinity", "".
 */
const DECIMAL = /^-?\d+(?:\.\d+)?$/;

/**
 * Whether `value` is written as a number: a JSON number, or a string in plain decimal notation,
 * whatever its size. `toDecimal` answers `undefined` for one too large for a double ("9" × 400):
 * this tells that apart from a value in another notation.
 */
export const isDecimalNotation = (value: unknown): value is number | string =>
  typeof value === 'number' || (typeof value === 'string' && DECIMAL.test(value));

/** The number a JSON number or an unambiguous decimal string denotes; `undefined` otherwise. */
export const toDecimal = (value: unknown): number | undefined => {
  const n =
    typeof value === 'number' ? value : typeof value === 'string' && DECIMAL.test(value) ? Number(value) : undefined;
  // 400 nines overflow to Infinity. -0 is read as 0: it is the same amount, and it must compare
  // equal to 0 when two aliases carry it.
  if (n === undefined || !Number.isFinite(n)) return undefined;
  return n === 0 ? 0 : n;
};
