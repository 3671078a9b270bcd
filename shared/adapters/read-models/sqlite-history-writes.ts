/**
 * How changes to call history rows become SQLite statements: the same lists for a live apply,
 * which runs them on the shared connection, and for a rebuild, whose worker runs them on its own
 * (sqlite-worker-writer.ts). Every row's seq is chosen before its insert, so the lists are plain
 * data and nothing needs to come back from them.
 */
import {
  changeJson,
  type IndexedColumns,
  indexedColumns,
  type LoadedRow,
  type RowChange,
  rowTagKeys,
} from './history-rows.ts';
import type { StatementRuns } from './sqlite-worker-writer.ts';

/** A stored row with its seq (the rowid its transcript, tags and search entry point at). */
export interface SeqRow extends LoadedRow {
  seq: number;
}

/** The statements that write version v's rows. */
const writeSql = (v: number) => ({
  insert: `INSERT INTO call_history_v${v} (seq, call_id, team_id, created_at, status, title_folded, rep_folded, last_position, doc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  update: `UPDATE call_history_v${v} SET status = ?, title_folded = ?, rep_folded = ?, last_position = ?, doc = ? WHERE seq = ?`,
  // A contentless FTS5 table forgets a row given the exact values it was indexed with.
  ftsDelete: `INSERT INTO call_search_v${v} (call_search_v${v}, rowid, title_folded, rep_folded) VALUES ('delete', ?, ?, ?)`,
  ftsInsert: `INSERT INTO call_search_v${v} (rowid, title_folded, rep_folded) VALUES (?, ?, ?)`,
  tag: `INSERT OR IGNORE INTO call_tags_v${v} (team_id, tag, created_at, call_id, seq) VALUES (?, ?, ?, ?, ?)`,
  transcript: `INSERT OR REPLACE INTO call_transcripts_v${v} (seq, transcript) VALUES (?, ?)`,
});

/** A statement with its parameters, one run per placeholder count of them. */
export const runsOf = (sql: string, params: StatementRuns['params']): StatementRuns => ({
  sql,
  arity: sql.split('?').length - 1,
  params,
});

/** What one change writes: the row's seq (a new row's is chosen before the insert), the change, its indexed columns and, for a new row, its tags. */
export interface RowWrite {
  seq: number;
  change: RowChange<SeqRow>;
  columns: IndexedColumns;
  tags: string[];
}

/** The writes of `changes`; `nextSeq` numbers new rows. Their JSON is made by statementRuns. */
export const rowWrites = (changes: readonly RowChange<SeqRow>[], nextSeq: () => number): RowWrite[] =>
  changes.map((change) => ({
    seq: change.before?.seq ?? nextSeq(),
    change,
    columns: indexedColumns(change.after, change.before),
    tags: change.before ? [] : rowTagKeys(change.after),
  }));

/** The statements that store `writes` in version v, in the order they run (an FTS row is deleted before it is inserted again). */
export const statementRuns = (v: number, writes: readonly RowWrite[]): StatementRuns[] => {
  const sql = writeSql(v);
  const inserts: StatementRuns['params'] = [];
  const updates: StatementRuns['params'] = [];
  const ftsDeletes: StatementRuns['params'] = [];
  const ftsInserts: StatementRuns['params'] = [];
  const tags: StatementRuns['params'] = [];
  const transcripts: StatementRuns['params'] = [];
  for (const { seq, change, columns: c, tags: keys } of writes) {
    const { before } = change;
    const { doc, transcript } = changeJson(change);
    const position = Number(c.lastPosition);
    if (before) {
      updates.push(c.status, c.titleFolded, c.repFolded, position, doc, seq);
      if (c.titleFolded !== before.titleFolded || c.repFolded !== before.repFolded) {
        ftsDeletes.push(seq, before.titleFolded, before.repFolded);
        ftsInserts.push(seq, c.titleFolded, c.repFolded);
      }
    } else {
      inserts.push(seq, c.callId, c.teamId, c.createdAt, c.status, c.titleFolded, c.repFolded, position, doc);
      ftsInserts.push(seq, c.titleFolded, c.repFolded);
      for (const tag of keys) tags.push(c.teamId, tag, c.createdAt, c.callId, seq);
    }
    if (transcript !== null) transcripts.push(seq, transcript);
  }
  return [
    runsOf(sql.insert, inserts),
    runsOf(sql.update, updates),
    runsOf(sql.ftsDelete, ftsDeletes),
    runsOf(sql.ftsInsert, ftsInserts),
    runsOf(sql.tag, tags),
    runsOf(sql.transcript, transcripts),
  ];
};

/**
 * The statements that delete erased calls from version v: the search entry (with the values it was
 * indexed with), transcript, tags and row. Run after the writes of the same batch.
 */
export const erasureRuns = (v: number, callIds: readonly string[]): StatementRuns[] => {
  if (callIds.length === 0) return [];
  const ids = [...callIds];
  return [
    runsOf(
      `INSERT INTO call_search_v${v} (call_search_v${v}, rowid, title_folded, rep_folded) SELECT 'delete', seq, title_folded, rep_folded FROM call_history_v${v} WHERE call_id = ?`,
      ids,
    ),
    runsOf(
      `DELETE FROM call_transcripts_v${v} WHERE seq IN (SELECT seq FROM call_history_v${v} WHERE call_id = ?)`,
      ids,
    ),
    runsOf(
      `DELETE FROM call_tags_v${v} WHERE team_id IN (SELECT team_id FROM call_history_v${v} WHERE call_id = ?) AND call_id = ?`,
      ids.flatMap((id) => [id, id]),
    ),
    runsOf(`DELETE FROM call_history_v${v} WHERE call_id = ?`, ids),
  ];
};
