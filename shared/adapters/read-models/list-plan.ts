/**
 * A list query checked and made ready for SQL: limits, folded search term and tags, the call-date
 * range, rep e-mail and updatedSince filters as the stored forms compare, and the opaque page
 * cursor (the last row's createdAt and callId, or its updatedAt and callId for `updated_asc`).
 *
 * Stored dates are canonical UTC instants (`2026-11-20T14:30:00.000Z`, years 0001–9999), so a
 * filter compares them as text: bounds are made canonical the same way.
 */
import {
  type CallHistoryRow,
  CALL_HISTORY_STATUSES,
  type CallHistoryStatus,
  searchTerm,
  tagKey,
} from '../../domain/call/call-history.ts';
import { callListItemView, type CallListRow } from '../../domain/call/call-view.ts';
import { canonicalIsoDate, parseIsoDate } from '../../domain/submission/iso-date.ts';
import { isWhiteSpaceOnly, trimWhiteSpace } from '../../domain/white-space.ts';
import {
  CALL_HISTORY_LIMITS,
  CALL_HISTORY_ORDERS,
  type CallHistoryOrder,
  type CallHistoryQuery,
  InvalidQueryError,
} from '../../ports/read-models.ts';
import { createdAtMs, type IndexedColumns } from './history-rows.ts';

/** A validated list query. */
export interface ListPlan {
  /** Folded search term, or undefined for no search. */
  term?: string;
  /** Number of characters (code points) of `term`: trigram indexes need 3. */
  termLength: number;
  tags: string[];
  status?: CallHistoryStatus;
  /** callDate bounds, inclusive, canonical. */
  callDateFrom?: string;
  callDateTo?: string;
  /** The rep e-mail, ASCII letters lower-cased (compare with the stored one lower-cased the same way). */
  repEmail?: string;
  /** updatedAt at or after this, canonical. */
  updatedSince?: string;
  order: CallHistoryOrder;
  limit: number;
  /** `created_desc`: rows strictly after this (createdAt desc, callId desc). */
  after?: { createdAt: number; callId: string };
  /** `updated_asc`: rows strictly after this (updatedAt asc, callId asc). */
  afterUpdated?: { updatedAt: string; callId: string };
}

const MAX_SEARCH_CHARS = 500;
const MAX_TAGS = 20;

/** Position of a row in the order, as an opaque string. */
export const encodeCursor = (row: Pick<IndexedColumns, 'createdAt' | 'callId'>): string =>
  Buffer.from(JSON.stringify([row.createdAt, row.callId]), 'utf8').toString('base64url');

/** Position of a row in the `updated_asc` order. */
const encodeUpdatedCursor = (row: Pick<CallHistoryRow, 'updatedAt' | 'callId'>): string =>
  Buffer.from(JSON.stringify(['u', row.updatedAt, row.callId]), 'utf8').toString('base64url');

const notIssued = (order: CallHistoryOrder) =>
  new InvalidQueryError('cursor', `cursor is not one this service issued for order=${order}`);

/**
 * The ids the service gives calls: lowercase UUIDs (random ones before version 7, the time-ordered
 * ones of docs/decisions/0019-time-ordered-call-ids.md, and the name-based ones of early
 * Idempotency-Key claims).
 */
const CALL_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** Whether `ms` is a createdAt this service can have stored: an instant of years 0001–9999, in whole milliseconds. */
const isStoredInstantMs = (ms: unknown): ms is number =>
  Number.isSafeInteger(ms) &&
  Math.abs(ms as number) <= 8.64e15 &&
  parseIsoDate(new Date(ms as number).toISOString()) === ms;

/** Whether `text` is an updatedAt as stored: a canonical UTC instant (`2026-11-20T14:30:00.000Z`). */
const isStoredInstant = (text: unknown): text is string => typeof text === 'string' && canonicalIsoDate(text) === text;

/**
 * The position a cursor holds, only when this service could have issued it: the shape `encodeCursor`
 * writes for the order, values a stored row can have (a call id, instants as stored), and the exact
 * text encoding them gives. Anything else, however it decodes, is refused: a tampered cursor must
 * not reach SQL (PostgreSQL refuses U+0000 in a parameter; SQLite would silently answer nothing).
 */
const decodeCursor = (cursor: string, order: CallHistoryOrder): Pick<ListPlan, 'after' | 'afterUpdated'> => {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw notIssued(order);
  }
  if (!Array.isArray(value)) throw notIssued(order);
  if (order === 'created_desc' && value.length === 2) {
    const [createdAt, callId] = value as unknown[];
    if (isStoredInstantMs(createdAt) && typeof callId === 'string' && CALL_ID.test(callId)) {
      const after = { createdAt, callId };
      if (encodeCursor(after) === cursor) return { after };
    }
  }
  if (order === 'updated_asc' && value.length === 3 && value[0] === 'u') {
    const [, updatedAt, callId] = value as unknown[];
    if (isStoredInstant(updatedAt) && typeof callId === 'string' && CALL_ID.test(callId)) {
      const afterUpdated = { updatedAt, callId };
      if (encodeUpdatedCursor(afterUpdated) === cursor) return { afterUpdated };
    }
  }
  throw notIssued(order);
};

const BARE_DATE = /^\d{4}-\d{2}-\d{2}$/;
const DAY_MS = 86_400_000;

/** A bound as a canonical instant; a bare date `to` runs through the end of its day. */
const dateBound = (field: 'from' | 'to' | 'updatedSince', text: string | undefined): string | undefined => {
  if (text === undefined) return undefined;
  const trimmed = trimWhiteSpace(text);
  const canonical = canonicalIsoDate(trimmed);
  if (canonical === undefined) {
    throw new InvalidQueryError(
      field,
      `${field} must be an ISO 8601 date (2026-11-20) or date-time (2026-11-20T14:30:00Z) between years 0001 and 9999`,
    );
  }
  if (field === 'to' && BARE_DATE.test(trimmed)) return new Date(parseIsoDate(trimmed)! + DAY_MS - 1).toISOString();
  return canonical;
};

/** ASCII letters lower-cased, the rest as is: the same fold SQLite's lower() and PostgreSQL's lower(… COLLATE "C") make. */
export const asciiLower = (text: string): string => text.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());

const MAX_EMAIL_CHARS = 320;

export const planList = (query: CallHistoryQuery = {}): ListPlan => {
  const limit = query.limit ?? CALL_HISTORY_LIMITS.defaultLimit;
  if (!Number.isInteger(limit) || limit < 1 || limit > CALL_HISTORY_LIMITS.maxLimit) {
    throw new InvalidQueryError('limit', `limit must be an integer from 1 to ${CALL_HISTORY_LIMITS.maxLimit}`);
  }
  if (query.status !== undefined && !CALL_HISTORY_STATUSES.includes(query.status)) {
    throw new InvalidQueryError('status', `status must be one of ${CALL_HISTORY_STATUSES.join(', ')}`);
  }
  if (query.search !== undefined && [...query.search].length > MAX_SEARCH_CHARS) {
    throw new InvalidQueryError('search', `search is at most ${MAX_SEARCH_CHARS} characters`);
  }
  // A blank tag is refused, as the ingest refuses one: it names no tag, and dropping it would list every call.
  if (query.tags?.some(isWhiteSpaceOnly))
    throw new InvalidQueryError('tags', 'a tag must not be blank (empty or white space only)');
  const tags = [...new Set((query.tags ?? []).map(tagKey))];
  if (tags.length > MAX_TAGS) throw new InvalidQueryError('tags', `at most ${MAX_TAGS} tags`);
  const order = query.order ?? 'created_desc';
  if (!CALL_HISTORY_ORDERS.includes(order))
    throw new InvalidQueryError('order', `order must be one of ${CALL_HISTORY_ORDERS.join(', ')}`);
  const callDateFrom = dateBound('from', query.from);
  const callDateTo = dateBound('to', query.to);
  if (callDateFrom !== undefined && callDateTo !== undefined && callDateFrom > callDateTo) {
    throw new InvalidQueryError('to', `to (${query.to}) is before from (${query.from})`);
  }
  const repEmail = query.repEmail === undefined ? undefined : trimWhiteSpace(query.repEmail);
  if (repEmail !== undefined && (repEmail === '' || [...repEmail].length > MAX_EMAIL_CHARS)) {
    throw new InvalidQueryError('repEmail', `repEmail must be an e-mail address of 1 to ${MAX_EMAIL_CHARS} characters`);
  }
  const updatedSince = dateBound('updatedSince', query.updatedSince);
  const term = searchTerm(query.search);
  return {
    ...(term !== undefined ? { term } : {}),
    termLength: term === undefined ? 0 : [...term].length,
    tags,
    ...(query.status !== undefined ? { status: query.status } : {}),
    ...(callDateFrom !== undefined ? { callDateFrom } : {}),
    ...(callDateTo !== undefined ? { callDateTo } : {}),
    ...(repEmail !== undefined ? { repEmail: asciiLower(repEmail) } : {}),
    ...(updatedSince !== undefined ? { updatedSince } : {}),
    order,
    limit,
    ...(query.cursor !== undefined ? decodeCursor(query.cursor, order) : {}),
  };
};

/** `%`, `_` and `\` of a search term escaped for `LIKE … ESCAPE '\'`. */
export const escapeLike = (term: string): string => term.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * Most bytes of list items in one page (callListItemView as JSON, what the answer carries of each
 * call): a page ends early (with a cursor) once its items pass this, so a list answer stays about a
 * megabyte whatever the calls hold. The first row always fits.
 */
export const LIST_PAGE_MAX_BYTES = 1_000_000;

/** A page from `limit + 1` fetched rows in the plan's order, cut short at LIST_PAGE_MAX_BYTES. */
export const pageOf = (
  rows: CallListRow[],
  { limit, order }: Pick<ListPlan, 'limit' | 'order'>,
  maxBytes = LIST_PAGE_MAX_BYTES,
): { calls: CallListRow[]; nextCursor: string | null } => {
  let end = Math.min(rows.length, limit);
  let bytes = 0;
  for (let i = 0; i < end; i++) {
    bytes += Buffer.byteLength(JSON.stringify(callListItemView(rows[i]!)));
    if (bytes > maxBytes && i > 0) end = i;
  }
  if (end === rows.length) return { calls: rows, nextCursor: null };
  const calls = rows.slice(0, end);
  const last = calls[calls.length - 1]!;
  return {
    calls,
    nextCursor:
      order === 'updated_asc'
        ? encodeUpdatedCursor(last)
        : encodeCursor({ createdAt: createdAtMs(last), callId: last.callId }),
  };
};
