/**
 * A list query checked and made ready for SQL: limits, folded search term and tags, and the opaque
 * page cursor (the last row's createdAt and callId).
 */
import { type CallHistoryRow, CALL_HISTORY_STATUSES, type CallHistoryStatus, searchTerm, tagKey } from '../../domain/call/call-history.ts';
import { CALL_HISTORY_LIMITS, type CallHistoryQuery, InvalidQueryError } from '../../ports/read-models.ts';
import { createdAtMs, type IndexedColumns } from './history-rows.ts';

/** A validated list query. */
export interface ListPlan {
  /** Folded search term, or undefined for no search. */
  term?: string;
  /** Number of characters (code points) of `term`: trigram indexes need 3. */
  termLength: number;
  tags: string[];
  status?: CallHistoryStatus;
  limit: number;
  /** Rows strictly after this (createdAt desc, callId desc). */
  after?: { createdAt: number; callId: string };
}

const MAX_SEARCH_CHARS = 500;
const MAX_TAGS = 20;

/** Position of a row in the order, as an opaque string. */
export const encodeCursor = (row: Pick<IndexedColumns, 'createdAt' | 'callId'>): string =>
  Buffer.from(JSON.stringify([row.createdAt, row.callId]), 'utf8').toString('base64url');

const decodeCursor = (cursor: string): { createdAt: number; callId: string } => {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(value) && value.length === 2 && Number.isSafeInteger(value[0]) && typeof value[1] === 'string') {
      return { createdAt: value[0] as number, callId: value[1] };
    }
  } catch {
    // fall through
  }
  throw new InvalidQueryError('cursor', 'cursor is not one this service issued');
};

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
  const tags = [...new Set((query.tags ?? []).map(tagKey).filter((t) => t !== ''))];
  if (tags.length > MAX_TAGS) throw new InvalidQueryError('tags', `at most ${MAX_TAGS} tags`);
  const term = searchTerm(query.search);
  return {
    ...(term !== undefined ? { term } : {}),
    termLength: term === undefined ? 0 : [...term].length,
    tags,
    ...(query.status !== undefined ? { status: query.status } : {}),
    limit,
    ...(query.cursor !== undefined ? { after: decodeCursor(query.cursor) } : {}),
  };
};

/** `%`, `_` and `\` of a search term escaped for `LIKE … ESCAPE '\'`. */
export const escapeLike = (term: string): string => term.replace(/[\\%_]/g, (c) => `\\${c}`);

/**
 * Most bytes of rows in one page: a page ends early (with a cursor) once its rows pass this, so a
 * list answer stays about a megabyte whatever the rows hold. The first row always fits.
 */
export const LIST_PAGE_MAX_BYTES = 1_000_000;

/** A page from `limit + 1` fetched rows, cut short at LIST_PAGE_MAX_BYTES. */
export const pageOf = (rows: CallHistoryRow[], limit: number, maxBytes = LIST_PAGE_MAX_BYTES): { calls: CallHistoryRow[]; nextCursor: string | null } => {
  let end = Math.min(rows.length, limit);
  let bytes = 0;
  for (let i = 0; i < end; i++) {
    bytes += Buffer.byteLength(JSON.stringify(rows[i]));
    if (bytes > maxBytes && i > 0) end = i;
  }
  if (end === rows.length) return { calls: rows, nextCursor: null };
  const calls = rows.slice(0, end);
  const last = calls[calls.length - 1]!;
  return { calls, nextCursor: encodeCursor({ createdAt: createdAtMs(last), callId: last.callId }) };
};
