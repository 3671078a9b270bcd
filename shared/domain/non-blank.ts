/**
 * `text` as written when it holds anything but white space; undefined when it is missing or blank.
 * Callers decide the rest: a title trims it (`nonBlank(name)?.trim()`), a stored row keeps it as
 * sent and writes null for blank (`nonBlank(name) ?? null`).
 */
export const nonBlank = (text: string | undefined): string | undefined =>
  text !== undefined && text.trim() !== '' ? text : undefined;
