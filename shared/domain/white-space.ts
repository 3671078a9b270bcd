/**
 * White space, as the whole service means it: what a blank field is and what trimming removes.
 *
 * The characters are those `String.prototype.trim` removes but U+FEFF: space, tab, line feed,
 * vertical tab, form feed, carriage return, U+00A0, U+1680, U+2000–U+200A, U+2028, U+2029, U+202F,
 * U+205F and U+3000 — all of them Unicode White_Space. U+FEFF (the byte order mark, a zero-width
 * no-break space) is not white space to Unicode, and the service keeps it exactly as sent, as it
 * keeps U+200B–U+200D and U+2060: `trim()` would strip it, so these helpers are used instead.
 * U+0085, a C1 control that Unicode also counts as White_Space, is kept like the other controls.
 *
 * Every character above is a single UTF-16 unit, so a string is scanned unit by unit; the scan
 * stops at the first character that is not white space, as `trim()` does.
 */

/** Whether the UTF-16 unit is white space (see the top of this file). */
export const isWhiteSpaceUnit = (unit: number): boolean =>
  unit <= 0x20
    ? unit === 0x20 || (unit >= 0x09 && unit <= 0x0d)
    : unit >= 0xa0 &&
      (unit === 0xa0 ||
        unit === 0x1680 ||
        (unit >= 0x2000 && unit <= 0x200a) ||
        unit === 0x2028 ||
        unit === 0x2029 ||
        unit === 0x202f ||
        unit === 0x205f ||
        unit === 0x3000);

/** Whether `text` is empty or white space only. */
export const isWhiteSpaceOnly = (text: string): boolean => {
  for (let i = 0; i < text.length; i++) if (!isWhiteSpaceUnit(text.charCodeAt(i))) return false;
  return true;
};

/** `text` without white space at either end; U+FEFF and every other character are kept. */
export const trimWhiteSpace = (text: string): string => {
  let start = 0;
  let end = text.length;
  while (start < end && isWhiteSpaceUnit(text.charCodeAt(start))) start++;
  while (end > start && isWhiteSpaceUnit(text.charCodeAt(end - 1))) end--;
  return start === 0 && end === text.length ? text : text.slice(start, end);
};
