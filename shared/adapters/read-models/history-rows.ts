/**
 * How call history rows travel between the feed and storage, the same for every adapter: a batch
 * grouped by call, folded into the rows it touches (loaded or held), and the columns a row is
 * stored with. No driver code here.
 */
import {
  type CallHistoryRow,
  type CallHistoryStatus,
  evolveHistoryRow,
  HISTORY_ROW_FOLDED_FIELDS,
  type RecordedCallEvent,
  searchText,
  tagKey,
} from '../../domain/call/call-history.ts';
import { callEvents } from '../../domain/call/call-catalogue.ts';
import { toStorable } from '../../domain/submission/storable-text.ts';
import type { RecordedEvent } from '../../ports/event-store.ts';

/**
 * The events of a batch grouped by call, in first-touched order, decoded through the call
 * catalogue; other streams dropped. @throws EventDecodeError for a call event that does not decode,
 * which stops the projection on it (docs/decisions/0016-event-catalogues-and-upcasting.md).
 */
export const eventsByCall = (events: readonly RecordedEvent[]): Map<string, RecordedCallEvent[]> => {
  const byCall = new Map<string, RecordedCallEvent[]>();
  for (const event of events) {
    const callId = callEvents.idOf(event.streamId);
    if (callId === undefined) continue;
    const decoded = callEvents.decode(event);
    const list = byCall.get(callId);
    if (list) list.push(decoded);
    else byCall.set(callId, [decoded]);
  }
  return byCall;
};

/** Folds one call's events of a batch into its row. */
export const foldRow = (
  row: CallHistoryRow | undefined,
  events: readonly RecordedCallEvent[],
): CallHistoryRow | undefined => events.reduce<CallHistoryRow | undefined>(evolveHistoryRow, row);

/** A call whose batch starts with its CallSubmitted needs no stored row: the fold starts from nothing. */
export const startsWithSubmission = (events: readonly RecordedCallEvent[]): boolean =>
  events[0]?.type === 'CallSubmitted';

/** A row as loaded from storage (its doc, so without the transcript) with its stored folded texts. */
export interface LoadedRow {
  row: CallHistoryRow;
  titleFolded: string;
  repFolded: string;
}

/** A row being folded: as stored (`before`, undefined when not stored or not loaded) and now. */
export interface PendingRow<L extends LoadedRow> {
  before: L | undefined;
  current: CallHistoryRow | undefined;
  /** What a rebuild counts the row as holding (see RebuildBuffer); unset until counted. */
  bytes?: number;
  /** The row `bytes` counted (undefined: no row, or not counted). */
  counted?: CallHistoryRow;
}

/** A row to write: `before` is what storage holds (undefined: insert, or upsert guarded by position). */
export interface RowChange<L extends LoadedRow> {
  before: L | undefined;
  after: CallHistoryRow;
  /** What a rebuild counted `after` as (see RebuildBuffer), when it did. */
  bytes?: number;
}

/**
 * Folds a batch (grouped by call) into `pending`, starting calls not yet there from `loaded`;
 * `folded` is called with each entry as soon as it is folded (while its rows are still in cache).
 */
export const foldInto = <L extends LoadedRow>(
  pending: Map<string, PendingRow<L>>,
  byCall: Map<string, RecordedCallEvent[]>,
  loaded: Map<string, L>,
  folded?: (entry: PendingRow<L>) => void,
): void => {
  for (const [callId, list] of byCall) {
    let entry = pending.get(callId);
    if (!entry) {
      const before = loaded.get(callId);
      entry = { before, current: before?.row };
      pending.set(callId, entry);
    }
    entry.current = foldRow(entry.current, list);
    folded?.(entry);
  }
};

/**
 * About the bytes `value` takes as JSON held in UTF-16 (2 per code unit; quotes and separators
 * counted, escapes not), found by walking it instead of making the JSON. A row's metadata, notes
 * and tags can make ~100 KB of it, and its doc holds them twice (in the row and its submission).
 * A property whose value is undefined is left out, as JSON leaves it out.
 */
export const jsonBytes = (value: unknown): number => {
  if (typeof value === 'string') return 2 * (value.length + 2);
  if (value === null || typeof value !== 'object') return 16;
  let bytes = 4;
  if (Array.isArray(value)) {
    for (const item of value as unknown[]) bytes += 2 + jsonBytes(item);
    return bytes;
  }
  for (const key in value) bytes += propertyBytes(key, (value as Record<string, unknown>)[key]);
  return bytes;
};

/** What jsonBytes counts for property `key` of an object holding `value`. */
const propertyBytes = (key: string, value: unknown): number =>
  value === undefined ? 0 : 2 * (key.length + 4) + jsonBytes(value);

/**
 * jsonBytes(`next`), counted from `previousBytes`, what jsonBytes(`previous`) came to, where `next`
 * is `previous` folded further (evolveHistoryRow) or as stored (docRow). Only the fields folding
 * can change (HISTORY_ROW_FOLDED_FIELDS) are looked at, and only those not holding the same value
 * as before are walked: an event costs the few fields it changed (status, steps, updatedAt, …),
 * where walking the row would cost all of it (its submission, metadata and tags, twice).
 */
export const rowBytesAfter = (previous: CallHistoryRow, previousBytes: number, next: CallHistoryRow): number => {
  if (next === previous) return previousBytes;
  // Field by field rather than a loop over the list: read by name, a row's fields cost about half as much.
  const p = previous;
  const n = next;
  return (
    previousBytes +
    changedBytes('title', p.title, n.title) +
    changedBytes('status', p.status, n.status) +
    changedBytes('stage', p.stage, n.stage) +
    changedBytes('statusReason', p.statusReason, n.statusReason) +
    changedBytes('processingError', p.processingError, n.processingError) +
    changedBytes('durationSeconds', p.durationSeconds, n.durationSeconds) +
    changedBytes('transcript', p.transcript, n.transcript) +
    changedBytes('analysis', p.analysis, n.analysis) +
    changedBytes('deal', p.deal, n.deal) +
    changedBytes('score', p.score, n.score) +
    changedBytes('updatedAt', p.updatedAt, n.updatedAt) +
    changedBytes('lastPosition', p.lastPosition, n.lastPosition) +
    changedBytes('steps', p.steps, n.steps)
  );
};

/** What property `key` adds to jsonBytes holding `after` instead of `before`. */
const changedBytes = (key: (typeof HISTORY_ROW_FOLDED_FIELDS)[number], before: unknown, after: unknown): number =>
  after === before ? 0 : propertyBytes(key, after) - propertyBytes(key, before);

/** The rows that changed. */
export const changesOf = <L extends LoadedRow>(pending: Map<string, PendingRow<L>>): RowChange<L>[] => {
  const changes: RowChange<L>[] = [];
  for (const { before, current } of pending.values())
    if (current !== undefined && current !== before?.row) changes.push({ before, after: current });
  return changes;
};

/**
 * How a history row is stored: indexed columns, the row as JSON without its transcript (`doc`,
 * rewritten on every change, so kept small) and the transcript as JSON in a table of its own,
 * written once when it is recorded.
 */
export interface IndexedColumns {
  callId: string;
  teamId: string;
  /** `createdAt` in epoch milliseconds (the sort key). */
  createdAt: number;
  status: CallHistoryStatus;
  titleFolded: string;
  repFolded: string;
  lastPosition: bigint;
}

/** `createdAt` in epoch milliseconds: with `callId`, the order of history (newest first). */
export const createdAtMs = (row: Pick<CallHistoryRow, 'createdAt'>): number => {
  const ms = Date.parse(row.createdAt);
  return Number.isNaN(ms) ? 0 : ms;
};

/** The indexed columns of `row`; `previous` (a stored row and its folded texts) saves folding again. */
export const indexedColumns = (row: CallHistoryRow, previous?: LoadedRow): IndexedColumns => {
  const folded =
    previous && previous.row.title === row.title && previous.row.repName === row.repName
      ? { title: previous.titleFolded, repName: previous.repFolded }
      : storableSearchText(row);
  return {
    callId: row.callId,
    teamId: row.teamId,
    createdAt: createdAtMs(row),
    status: row.status,
    titleFolded: folded.title,
    repFolded: folded.repName,
    lastPosition: BigInt(row.lastPosition),
  };
};

/** A row as its `doc` holds it: without the transcript (null), which is stored apart. */
export const docRow = (row: CallHistoryRow): CallHistoryRow =>
  row.transcript === null ? row : { ...row, transcript: null };

/** What a change writes as JSON: its row's doc, and its transcript when the change recorded it (else null). */
export const changeJson = <L extends LoadedRow>({
  before,
  after,
}: RowChange<L>): { doc: string; transcript: string | null } => ({
  doc: JSON.stringify(docRow(after)),
  transcript: transcriptRecorded(before?.row, after) ? JSON.stringify(after.transcript) : null,
});

/** A stored row: its doc with the transcript put back. */
export const storedRow = (doc: CallHistoryRow, transcript: CallHistoryRow['transcript'] | null): CallHistoryRow => ({
  ...doc,
  transcript: transcript ?? null,
});

/** Whether folding a loaded row (whose transcript is left out as null) recorded the transcript. */
export const transcriptRecorded = (before: CallHistoryRow | undefined, after: CallHistoryRow): boolean =>
  after.transcript !== null && after.transcript !== before?.transcript;

/** Distinct folded tag keys of a row. */
export const rowTagKeys = (row: CallHistoryRow): string[] => [
  ...new Set(row.tags.map((tag) => toStorable(tagKey(tag))).filter((t) => t !== '')),
];

/** A stored row's folded texts and tag keys as the current fold makes them: what a refold writes. */
export interface Refolded {
  titleFolded: string;
  repFolded: string;
  tags: string[];
}

/** `row`'s folded texts and tag keys under the current fold (SEARCH_FOLD_REVISION). */
export const refolded = (row: CallHistoryRow): Refolded => {
  const { title, repName } = storableSearchText(row);
  return { titleFolded: title, repFolded: repName, tags: rowTagKeys(row) };
};

/**
 * The folded title and rep name as indexed. The ingress refuses U+0000 and unpaired surrogates, but
 * a title can come from a remote analyser and old events predate the rule: the index gets U+FFFD in
 * their place, since SQLite's FTS5 is corrupted by an unpaired surrogate and PostgreSQL `text`
 * refuses U+0000. The row itself (its doc) keeps the text as recorded.
 */
const storableSearchText = (row: CallHistoryRow): { title: string; repName: string } => {
  const { title, repName } = searchText(row);
  return { title: toStorable(title), repName: toStorable(repName) };
};
