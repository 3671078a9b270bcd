/**
 * Strict ISO 8601 dates for `callDate` and `dealDate` (docs/decisions/0007-dates.md).
 *
 * Accepted: `YYYY-MM-DD` (midnight UTC, as decision 0007 says for deal dates; we apply it to
 * callDate too so both fields read the same way) and `YYYY-MM-DDTHH:MM[:SS[.fraction]][offset]`
 * where the offset is `Z`, `±HH:MM`, `±HHMM` or `±HH`. `t` and `z` may be lower case (RFC 3339
 * allows it) and the fraction may follow a comma (ISO 8601's own decimal sign): neither can be
 * read two ways. The basic format (`20260101`) and a time of hours alone (`T10Z`) are refused,
 * with a message naming the forms taken: neither is in RFC 3339, and eight bare digits may as well
 * be an id (`17320608` would be a date in 1732). A date-time without an offset is read as UTC:
 * `Date.parse` would read it in the server's local zone, and the result must not depend on where
 * the service runs. Impossible calendar values (`2026-02-30`, `24:00`) are refused rather than
 * rolled over.
 */

const ISO =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?([Zz]|[+-]\d{2}(?::?\d{2})?)?)?$/;

/** What a refusal names: the forms above, in words a caller can match to what it sends. */
export const ISO_DATE_FORMS =
  'an ISO 8601 date such as 2026-01-01 or 2026-01-01T10:00:00Z: YYYY-MM-DD, optionally followed by T and hh:mm, hh:mm:ss or hh:mm:ss.fff and an offset (Z, ±hh:mm, ±hhmm or ±hh; without one, UTC); a real date and time, years 0001–9999';

const FOUR_CENTURIES_MS = 146_097 * 86_400_000;
/** 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z. */
const MIN_MS = Date.UTC(2001, 0, 1) - 5 * FOUR_CENTURIES_MS;
const MAX_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

const isLeap = (year: number): boolean => (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const daysInMonth = (year: number, month: number): number =>
  month === 2 && isLeap(year) ? 29 : (DAYS_IN_MONTH[month - 1] ?? 0);

const offsetMinutes = (offset: string | undefined): number | undefined => {
  if (offset === undefined || offset === 'Z' || offset === 'z') return 0;
  const sign = offset.startsWith('-') ? -1 : 1;
  const digits = offset.slice(1).replace(':', '');
  const hours = Number(digits.slice(0, 2));
  const minutes = digits.length > 2 ? Number(digits.slice(2, 4)) : 0;
  if (hours > 23 || minutes > 59) return undefined;
  return sign * (hours * 60 + minutes);
};

interface Parsed {
  ms: number;
  /** The canonical string when the input was already UTC (fast path: no Date formatting). */
  utc?: string;
}

const parse = (text: string): Parsed | undefined => {
  const m = ISO.exec(text);
  if (!m) return undefined;
  const [, y = '', mo = '', d = '', h = '00', mi = '00', s = '00', fraction = '', offset] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 59) return undefined;
  const shift = offsetMinutes(offset);
  if (shift === undefined) return undefined;
  const millis = fraction.padEnd(3, '0').slice(0, 3);
  // Date.UTC maps years 0–99 to 1900–1999; 400 Gregorian years later the calendar repeats exactly.
  const shifted = year < 100;
  const utcMs = Date.UTC(shifted ? year + 400 : year, month - 1, day, Number(h), Number(mi), Number(s), Number(millis));
  const ms = (shifted ? utcMs - FOUR_CENTURIES_MS : utcMs) - shift * 60_000;
  // The instant must stay within years 0001–9999 in UTC too: "9999-12-31T23:59:59-23:59" would
  // become year 10000, which ISO 8601 strings (and our event schemas) cannot carry.
  if (ms < MIN_MS || ms > MAX_MS) return undefined;
  return shift === 0 ? { ms, utc: `${y}-${mo}-${d}T${h}:${mi}:${s}.${millis}Z` } : { ms };
};

/**
 * Parses an ISO 8601 date or date-time to epoch milliseconds; `undefined` when the text is not
 * one (wrong shape, impossible date or time, offset out of range).
 */
export const parseIsoDate = (text: string): number | undefined => parse(text)?.ms;

/** The canonical form we store: a UTC instant, `2026-11-20T14:30:00.000Z`. */
export const canonicalIsoDate = (text: string): string | undefined => {
  const parsed = parse(text);
  return parsed === undefined ? undefined : (parsed.utc ?? new Date(parsed.ms).toISOString());
};
