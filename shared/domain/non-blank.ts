import { isWhiteSpaceOnly } from './white-space.ts';

/**
 * `text` as written when it holds anything but white space (white-space.ts: U+FEFF is not white
 * space); undefined when it is missing or blank. Callers decide the rest: a title trims it (title.ts),
 * a stored row keeps it as sent and writes null for blank
 * (`nonBlank(name) ?? null`).
 */
export const nonBlank = (text: string | undefined): string | undefined =>
  text !== undefined && !isWhiteSpaceOnly(text) ? text : undefined;
