/**
 * The call history in the embedded SQLite database (the same file and connection as the event
 * store). Every write is one synchronous transaction: the rows a batch touches and the checkpoint
 * commit together or not at all.
 *
 * Version n:
 *   call_history_v{n}      one row per call: indexed columns (team, created_at in ms, status, the
 *                          folded title and rep name) and the row as JSON without its transcript.
 *                          Index (team_id, created_at DESC, call_id DESC, folded title, folded rep)
 *                          gives newest-first pages and lets a walk check a term without reading
 *                          rows; (team_id, status, …) serves the status filter.
 *   call_transcripts_v{n}  the transcript, written once: status changes never rewrite it.
 *   call_tags_v{n}         (team_id, folded tag, created_at, call_id) → the row: a tag's calls
 *                          newest first; further tags are checked per row (all must match).
 *   call_search_v{n}       FTS5, `trigram` tokenizer, contentless: the folded title and rep name.
 *                          SQLite's LIKE and lower() fold ASCII only, so rows and queries are folded
 *                          in JavaScript (`foldForSearch`) and the tokenizer is case-sensitive. A
 *                          changed title leaves the index through the 'delete' command with its old
 *                          folded values (kept in call_history): contentless_delete=1 costs ~10× more.
 *   call_history_folds     the fold revision each version's rows were folded with; opening a version
 *                          folded by an earlier one refolds the rows the change touches
 *                          (docs/decisions/0023-search-fold-revisions.md).
 *
 * A list query takes one of three plans, each stopping after one page (see listStatement and
 * commonTermMatches): a selective search term (3+ characters, few trigram matches) sorts its
 * matches; otherwise the first tag's calls or the team's calls are walked newest first and each
 * is checked with instr() on the folded columns. Every plan checks the term with instr(), so the
 * match is exact whatever the index found. Trigrams cannot serve 1–2 characters: those always walk
 * (cheap when such a term is common, a scan of the team's index when it matches nothing).
 *
 * A rebuild writes version n+1 while reads use n. It creates the tables with the call id's unique
 * index only and numbers its rows itself (the tables start empty); each window of rows is written
 * by a worker thread on a connection of its own (sqlite-worker-writer.ts) while the next window
 * folds, and the connection's other writers wait for that transaction in the queue instead of
 * blocking. Activation creates the indexes only reads use, flips the states and drops n in one
 * transaction. Live applies write on the shared connection: better-sqlite3 is synchronous, so a
 * batch of 500 events blocks this process for some tens of milliseconds.
 */
import type Database from 'better-sqlite3';
import {
  type CallHistoryRow,
  erasedCallIds,
  SEARCH_FOLD_REVISION,
  SEARCH_REFOLD_CHARACTERS,
} from '../../domain/call/call-history.ts';
import { CALL_LIST_ROW_FIELDS, type CallListRow } from '../../domain/call/call-view.ts';
import type { RecordedEvent } from '../../ports/event-store.ts';
import {
  type ApplyOptions,
  type CallHistoryRebuild,
  type CallHistoryStore,
  ReadModelUnavailableError,
} from '../../ports/read-models.ts';
import { requestWalScrub, serialised, type SqliteDb } from '../sqlite/sqlite-database.ts';
import { translateSqliteError } from '../sqlite/sqlite-errors.ts';
import {
  changesOf,
  docRow,
  eventsByCall,
  foldInto,
  jsonBytes,
  type PendingRow,
  refolded,
  storedRow,
} from './history-rows.ts';
import { asciiLower, type ListPlan, pageOf, planList } from './list-plan.ts';
import { RebuildBuffer, type RebuildLimits } from './rebuild-buffer.ts';
import { STORE_CHECKPOINT_SQL, type SqliteVersions, WRITABLE_VERSION_SQL } from './sqlite-versions.ts';
import { erasureRuns, rowWrites, runsOf, type SeqRow, statementRuns } from './sqlite-history-writes.ts';
import {
  openSqliteWorkerWriter,
  runStatements,
  type SqliteWorkerWriter,
  statementCache as preparedBySql,
  type WriteTransaction,
} from './sqlite-worker-writer.ts';

const HISTORY = 'call_history';

/** The row's updatedAt, as the sync order and its index read it (the expression must match the index's). */
const UPDATED_AT = "json_extract(h.doc, '$.updatedAt')";

/**
 * What a list reads of a row (CallListRow), as one JSON object: the fields from the doc (`->` keeps
 * each as JSON), never the transcript, which is in a table of its own, nor the doc's other fields.
 */
const LIST_ROW = `json_object(${CALL_LIST_ROW_FIELDS.map((field) => `'${field}', h.doc -> '$.${field}'`).join(', ')})`;

/**
 * FTS5's secure-delete for a version's search table, a setting the table keeps: a delete (an erased
 * call, a title or rep changed) takes the row's trigrams out of the index's blocks. Without it a
 * delete only adds a marker, and an erased call's title and rep stayed in the database file until
 * the index's segments merged (docs/decisions/0014-erasure-crypto-shredding.md).
 */
const secureSearchDeletes = (v: number) =>
  `INSERT INTO call_search_v${v} (call_search_v${v}, rank) VALUES ('secure-delete', 1);`;

/** Tables of version v with what a write needs (the call id's unique index); see historyIndexes. */
const historyTables = (v: number) => `
  CREATE TABLE IF NOT EXISTS call_history_v${v} (
    seq           INTEGER PRIMARY KEY,
    call_id       TEXT    NOT NULL UNIQUE,
    team_id       TEXT    NOT NULL,
    created_at    INTEGER NOT NULL,
    status        TEXT    NOT NULL,
    title_folded  TEXT    NOT NULL,
    rep_folded    TEXT    NOT NULL,
    last_position INTEGER NOT NULL,
    doc           TEXT    NOT NULL
  );
  CREATE TABLE IF NOT EXISTS call_transcripts_v${v} (
    seq        INTEGER PRIMARY KEY,
    transcript TEXT NOT NULL
  );
  CREATE TABLE IF NOT EXISTS call_tags_v${v} (
    team_id    TEXT    NOT NULL,
    tag        TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    call_id    TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    PRIMARY KEY (team_id, tag, created_at DESC, call_id DESC)
  ) WITHOUT ROWID;
  CREATE VIRTUAL TABLE IF NOT EXISTS call_search_v${v} USING fts5(
    title_folded, rep_folded, content='', tokenize='trigram case_sensitive 1'
  );
  ${secureSearchDeletes(v)}
`;

/** The indexes only reads use: a rebuild creates them once its rows are in, at activation (one sort instead of a B-tree insert per row). */
const historyIndexes = (v: number) => `
  CREATE INDEX IF NOT EXISTS call_history_v${v}_team ON call_history_v${v} (team_id, created_at DESC, call_id DESC, title_folded, rep_folded);
  CREATE INDEX IF NOT EXISTS call_history_v${v}_team_status ON call_history_v${v} (team_id, status, created_at DESC, call_id DESC);
  CREATE INDEX IF NOT EXISTS call_history_v${v}_team_updated ON call_history_v${v} (team_id, ${UPDATED_AT.replace('h.', '')}, call_id);
`;

/**
 * The fold revision (SEARCH_FOLD_REVISION) each version's rows were folded with; a version without
 * a row here was folded by revision 1, before revisions were recorded.
 */
const FOLDS_TABLE = `
  CREATE TABLE IF NOT EXISTS call_history_folds (
    version  INTEGER PRIMARY KEY,
    revision INTEGER NOT NULL
  );
`;

const dropHistoryTables = (v: number) => `
  DELETE FROM call_history_folds WHERE version = ${v};
  DROP TABLE IF EXISTS call_search_v${v};
  DROP TABLE IF EXISTS call_tags_v${v};
  DROP TABLE IF EXISTS call_transcripts_v${v};
  DROP TABLE IF EXISTS call_history_v${v};
`;

/**
 * Rows per part of a rebuild's write transaction (see sqlite-worker-writer.ts), and the JSON a part
 * may come to (counted as jsonBytes does): a part's JSON is held twice, here and in the worker, and
 * 1,000 rows of calls at the size limits would make ~200 MB of it.
 */
const WRITE_PART_ROWS = 1000;
const WRITE_PART_BYTES = 8 * 1024 * 1024;

const abandoned = (v: number) => `call history version ${v} was abandoned or replaced; begin a new rebuild`;

/**
 * When a search term is common. Collecting and sorting the trigram matches costs about one row
 * read per match (~15 µs here); walking the team's rows newest first until a page matches costs
 * about (page / share of rows that match) index entries (~0.4 µs each). They break even near
 * √(rows): below that many matches (over all teams) the matches are sorted, above it the team's
 * rows are walked. The walk is slow only when a term is common in other teams and rare in this one.
 * The dearest case of all is a 1–2 character term that matches nothing: a scan of the team's index.
 */
const commonTermMatches = (rows: number): number => Math.min(5000, Math.max(200, Math.ceil(Math.sqrt(rows))));

/** An FTS5 phrase: the term quoted, so nothing in it is query syntax. */
const ftsPhrase = (term: string): string => `"${term.replaceAll('"', '""')}"`;

export interface SqliteCallHistoryOptions {
  /** When a rebuild writes what it holds in memory (see RebuildBuffer). */
  rebuildLimits?: RebuildLimits;
  /** Test hook: a fixed number of trigram matches from which a search term counts as common. */
  commonTermMatches?: number;
}

/** The call history, and `close` for the rebuild writers it may have open (the database stays open). */
export const createSqliteCallHistory = (
  db: SqliteDb,
  versions: SqliteVersions,
  options: SqliteCallHistoryOptions = {},
): CallHistoryStore & { close(): Promise<void> } => {
  const commonFor = (rows: number) => options.commonTermMatches ?? commonTermMatches(rows);
  db.exec(FOLDS_TABLE);
  const markFolded = db.prepare<[number, number]>(
    'INSERT OR REPLACE INTO call_history_folds (version, revision) VALUES (?, ?)',
  );
  versions.ensure(HISTORY, (v) => {
    db.exec(historyTables(v) + historyIndexes(v));
    markFolded.run(v, SEARCH_FOLD_REVISION);
  });
  // A database made before an index was added gets it now (a no-op when it is there); and every
  // search table made before secure-delete, the setting.
  db.exec(historyIndexes(versions.active(HISTORY).version));
  for (const { name } of db
    .prepare<[], { name: string }>(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'call_search_v[0-9]*'",
    )
    .all()) {
    const version = /^call_search_v([0-9]+)$/.exec(name)?.[1];
    if (version !== undefined) db.exec(secureSearchDeletes(Number(version)));
  }

  type Statement = Database.Statement<unknown[], { item: string }>;
  /** Prepared statements of one version, dropped with it. */
  const statementCache = new Map<number, ReturnType<typeof prepareHistory>>();
  const prepareHistory = (v: number) => ({
    select: db.prepare<[string], { seq: number; doc: string; title_folded: string; rep_folded: string }>(
      `SELECT seq, doc, title_folded, rep_folded FROM call_history_v${v} WHERE call_id = ?`,
    ),
    rows: db.prepare<[], { n: number | null }>(`SELECT max(seq) AS n FROM call_history_v${v}`),
    ftsCount: db.prepare<[string, number], { n: number }>(
      `SELECT count(*) AS n FROM (SELECT 1 FROM call_search_v${v} WHERE call_search_v${v} MATCH ? LIMIT ?)`,
    ),
    submittedBefore: db.prepare<[string, number, number, string, number], { call_id: string; created_at: number }>(
      `SELECT call_id, created_at FROM call_history_v${v} WHERE team_id = ? AND created_at < ? AND (created_at, call_id) > (?, ?) ORDER BY created_at, call_id LIMIT ?`,
    ),
    ofEmail: db.prepare<[string, string, string], { call_id: string }>(
      `SELECT call_id FROM call_history_v${v} WHERE team_id = ? AND (lower(json_extract(doc, '$.repEmail')) = ? OR (json_extract(doc, '$.attributedTo.kind') = 'member' AND lower(json_extract(doc, '$.attributedTo.email')) = ?))`,
    ),
    get: db.prepare<[string, string], { doc: string; transcript: string | null }>(
      `SELECT h.doc, x.transcript FROM call_history_v${v} h LEFT JOIN call_transcripts_v${v} x ON x.seq = h.seq WHERE h.call_id = ? AND h.team_id = ?`,
    ),
    lists: new Map<string, Statement>(),
    writes: preparedBySql(db),
  });
  const statements = (v: number) => {
    let s = statementCache.get(v);
    if (!s) {
      s = prepareHistory(v);
      statementCache.set(v, s);
    }
    return s;
  };

  const toRow = (r: { doc: string; transcript: string | null }): CallHistoryRow =>
    storedRow(
      JSON.parse(r.doc) as CallHistoryRow,
      r.transcript === null ? null : (JSON.parse(r.transcript) as CallHistoryRow['transcript']),
    );

  const load = (v: number, callIds: Iterable<string>): Map<string, SeqRow> => {
    const select = statements(v).select;
    const loaded = new Map<string, SeqRow>();
    for (const callId of callIds) {
      const stored = select.get(callId);
      // The stored doc leaves the transcript out (null): folding never needs it.
      if (stored)
        loaded.set(callId, {
          row: JSON.parse(stored.doc) as CallHistoryRow,
          titleFolded: stored.title_folded,
          repFolded: stored.rep_folded,
          seq: stored.seq,
        });
    }
    return loaded;
  };

  const applyLive = db.transaction(
    (events: readonly RecordedEvent[], checkpoint: bigint, options: ApplyOptions | undefined) => {
      const { version: v, checkpoint: stored } = versions.active(HISTORY);
      versions.expect(stored, options);
      const byCall = eventsByCall(events);
      const pending = new Map<string, PendingRow<SeqRow>>();
      foldInto(pending, byCall, load(v, byCall.keys()));
      const s = statements(v);
      // New rows take the seqs the inserts would pick (one past the largest), so they are known before.
      let last = s.rows.get()?.n ?? 0;
      const erased = erasedCallIds(events);
      runStatements(s.writes, [
        ...statementRuns(
          v,
          rowWrites(changesOf(pending), () => ++last),
        ),
        ...erasureRuns(v, erased),
      ]);
      // The WAL's earlier frames still hold the erased rows until it is emptied.
      if (erased.length > 0) requestWalScrub(db);
      versions.storeCheckpoint(HISTORY, v, checkpoint);
    },
  );

  /**
   * One of three plans, each reading rows in page order and stopping after a page:
   *   search  a selective term (≥ 3 characters, few trigram matches): the matches, sorted;
   *   tag     the first tag's index, newest first, the other filters checked per row;
   *   team    the team's index (with status when filtered), newest first, filters checked per row.
   */
  const listStatement = (
    v: number,
    plan: ListPlan & { teamId: string },
    selectiveTerm: boolean,
  ): { statement: Statement; params: unknown[] } => {
    const params: unknown[] = [];
    const where: string[] = [];
    let from: string;
    let order: string;
    const [firstTag, ...otherTags] = plan.order === 'updated_asc' ? [undefined, ...plan.tags] : plan.tags;
    if (plan.order === 'updated_asc') {
      // Sync order: the team's updatedAt index, oldest change first, every filter checked per row.
      from = `call_history_v${v} h`;
      where.push('h.team_id = ?');
      params.push(plan.teamId);
      order = `${UPDATED_AT} ASC, h.call_id ASC`;
      if (plan.updatedSince !== undefined) {
        where.push(`${UPDATED_AT} >= ?`);
        params.push(plan.updatedSince);
      }
      if (plan.afterUpdated) {
        where.push(`(${UPDATED_AT}, h.call_id) > (?, ?)`);
        params.push(plan.afterUpdated.updatedAt, plan.afterUpdated.callId);
      }
    } else if (selectiveTerm) {
      from = `call_search_v${v} f JOIN call_history_v${v} h ON h.seq = f.rowid`;
      where.push(`call_search_v${v} MATCH ?`, 'h.team_id = ?');
      params.push(ftsPhrase(plan.term!), plan.teamId);
      order = 'h.created_at DESC, h.call_id DESC';
    } else if (firstTag !== undefined) {
      from = `call_tags_v${v} t0 JOIN call_history_v${v} h ON h.seq = t0.seq`;
      where.push('t0.team_id = ?', 't0.tag = ?');
      params.push(plan.teamId, firstTag);
      order = 't0.created_at DESC, t0.call_id DESC';
    } else {
      from = `call_history_v${v} h`;
      where.push('h.team_id = ?');
      params.push(plan.teamId);
      order = 'h.created_at DESC, h.call_id DESC';
    }
    if (plan.status !== undefined) {
      where.push('h.status = ?');
      params.push(plan.status);
    }
    if (plan.order === 'created_desc' && plan.updatedSince !== undefined) {
      where.push(`${UPDATED_AT} >= ?`);
      params.push(plan.updatedSince);
    }
    if (plan.callDateFrom !== undefined) {
      where.push("json_extract(h.doc, '$.callDate') >= ?");
      params.push(plan.callDateFrom);
    }
    if (plan.callDateTo !== undefined) {
      where.push("json_extract(h.doc, '$.callDate') <= ?");
      params.push(plan.callDateTo);
    }
    if (plan.repEmail !== undefined) {
      where.push("lower(json_extract(h.doc, '$.repEmail')) = ?");
      params.push(plan.repEmail);
    }
    if (plan.after) {
      where.push(
        !selectiveTerm && firstTag !== undefined
          ? '(t0.created_at, t0.call_id) < (?, ?)'
          : '(h.created_at, h.call_id) < (?, ?)',
      );
      params.push(plan.after.createdAt, plan.after.callId);
    }
    for (const tag of selectiveTerm ? plan.tags : otherTags) {
      where.push(
        `EXISTS (SELECT 1 FROM call_tags_v${v} t WHERE t.team_id = h.team_id AND t.tag = ? AND t.created_at = h.created_at AND t.call_id = h.call_id)`,
      );
      params.push(tag);
    }
    if (plan.term !== undefined) {
      // Exact check of every candidate (the only check without the trigram index).
      where.push('(instr(h.title_folded, ?) > 0 OR instr(h.rep_folded, ?) > 0)');
      params.push(plan.term, plan.term);
    }
    params.push(plan.limit + 1);
    const sql = `SELECT ${LIST_ROW} AS item FROM ${from} WHERE ${where.join(' AND ')} ORDER BY ${order} LIMIT ?`;
    const cache = statements(v).lists;
    let statement = cache.get(sql);
    if (!statement) {
      statement = db.prepare<unknown[], { item: string }>(sql);
      cache.set(sql, statement);
    }
    return { statement, params };
  };

  /**
   * Refolds the rows of version v that an earlier fold revision folded otherwise (their title, rep
   * name or tags hold a character of SEARCH_REFOLD_CHARACTERS), in their columns, search index and
   * tag keys, and records the current revision: one transaction, once per version.
   */
  const refoldOlder = db.transaction((v: number) => {
    const stored = db
      .prepare<[number], { revision: number }>('SELECT revision FROM call_history_folds WHERE version = ?')
      .get(v);
    if ((stored?.revision ?? 1) >= SEARCH_FOLD_REVISION) return;
    const texts =
      "json_extract(doc, '$.title') || ' ' || coalesce(json_extract(doc, '$.repName'), '') || ' ' || json_extract(doc, '$.tags')";
    const touched = SEARCH_REFOLD_CHARACTERS.map(() => `instr(${texts}, ?) > 0`).join(' OR ');
    const candidates = db.prepare<unknown[], SeqRow & { doc: string; teamId: string; createdAt: number }>(
      `SELECT seq, doc, team_id AS teamId, created_at AS createdAt, title_folded AS titleFolded, rep_folded AS repFolded
         FROM call_history_v${v} WHERE seq > ? AND (${touched}) ORDER BY seq LIMIT 1000`,
    );
    const sql = {
      update: db.prepare(`UPDATE call_history_v${v} SET title_folded = ?, rep_folded = ? WHERE seq = ?`),
      ftsDelete: db.prepare(
        `INSERT INTO call_search_v${v} (call_search_v${v}, rowid, title_folded, rep_folded) VALUES ('delete', ?, ?, ?)`,
      ),
      ftsInsert: db.prepare(`INSERT INTO call_search_v${v} (rowid, title_folded, rep_folded) VALUES (?, ?, ?)`),
      untag: db.prepare(`DELETE FROM call_tags_v${v} WHERE team_id = ? AND call_id = ?`),
      tag: db.prepare(
        `INSERT OR IGNORE INTO call_tags_v${v} (team_id, tag, created_at, call_id, seq) VALUES (?, ?, ?, ?, ?)`,
      ),
    };
    for (let after = 0; ;) {
      const rows = candidates.all(after, ...SEARCH_REFOLD_CHARACTERS);
      if (rows.length === 0) break;
      for (const stored of rows) {
        const row = JSON.parse(stored.doc) as CallHistoryRow;
        const now = refolded(row);
        if (now.titleFolded !== stored.titleFolded || now.repFolded !== stored.repFolded) {
          sql.update.run(now.titleFolded, now.repFolded, stored.seq);
          sql.ftsDelete.run(stored.seq, stored.titleFolded, stored.repFolded);
          sql.ftsInsert.run(stored.seq, now.titleFolded, now.repFolded);
        }
        sql.untag.run(stored.teamId, row.callId);
        for (const tag of now.tags) sql.tag.run(stored.teamId, tag, stored.createdAt, row.callId, stored.seq);
      }
      after = rows[rows.length - 1]!.seq;
    }
    markFolded.run(v, SEARCH_FOLD_REVISION);
  });
  // Rows folded by an earlier revision are refolded before the first read (docs/decisions/0023-search-fold-revisions.md).
  refoldOlder.immediate(versions.active(HISTORY).version);

  const beginRebuild = db.transaction((): number => {
    const building = db
      .prepare<[string], { version: number }>(
        "SELECT version FROM read_model_versions WHERE model = ? AND state = 'building'",
      )
      .all(HISTORY);
    for (const { version } of building) {
      db.exec(dropHistoryTables(version));
      statementCache.delete(version);
    }
    db.prepare("UPDATE read_model_versions SET state = 'retired' WHERE model = ? AND state = 'building'").run(HISTORY);
    const next =
      (db
        .prepare<[string], { v: number }>('SELECT max(version) AS v FROM read_model_versions WHERE model = ?')
        .get(HISTORY)?.v ?? 0) + 1;
    db.prepare("INSERT INTO read_model_versions (model, version, state) VALUES (?, ?, 'building')").run(HISTORY, next);
    db.exec(historyTables(next));
    markFolded.run(next, SEARCH_FOLD_REVISION);
    return next;
  });

  const activate = db.transaction((version: number) => {
    const row = versions.get(HISTORY, version);
    if (row?.state === 'active') return;
    if (row?.state !== 'building') throw new Error(abandoned(version));
    db.exec(historyIndexes(version));
    const previous = versions.active(HISTORY).version;
    db.prepare("UPDATE read_model_versions SET state = 'retired' WHERE model = ? AND version = ?").run(
      HISTORY,
      previous,
    );
    db.prepare("UPDATE read_model_versions SET state = 'active' WHERE model = ? AND version = ?").run(HISTORY, version);
    db.exec(dropHistoryTables(previous));
    statementCache.delete(previous);
  });

  /** Writers of rebuilds (one each, from its first write until it is activated, fails or is replaced). */
  const writers = new Set<SqliteWorkerWriter>();
  const closeWriter = async (writer: SqliteWorkerWriter) => {
    writers.delete(writer);
    await writer.close();
  };

  const callHistory: CallHistoryStore & { close(): Promise<void> } = {
    async apply(events, checkpoint, options) {
      // A locked or failing database is an outage to retry, not a bad event.
      await serialised(db, () => applyLive.immediate(events, checkpoint, options)).catch((error: unknown) => {
        throw translateSqliteError(
          error,
          (message, cause) => new ReadModelUnavailableError(`SQLite read models unavailable: ${message}`, { cause }),
        );
      });
    },
    async checkpoint() {
      return BigInt(versions.active(HISTORY).checkpoint);
    },
    async activeVersion() {
      return versions.active(HISTORY).version;
    },

    async submittedBefore(teamId, before, limit, after) {
      return statements(versions.active(HISTORY).version)
        .submittedBefore.all(
          teamId,
          Date.parse(before),
          after?.submittedAtMs ?? Number.MIN_SAFE_INTEGER,
          after?.callId ?? '',
          limit,
        )
        .map((r) => ({ callId: r.call_id, submittedAtMs: Number(r.created_at) }));
    },
    async callsOfEmail(teamId, email) {
      const key = asciiLower(email.trim());
      return statements(versions.active(HISTORY).version)
        .ofEmail.all(teamId, key, key)
        .map((r) => r.call_id);
    },

    async get(teamId, callId) {
      const row = statements(versions.active(HISTORY).version).get.get(callId, teamId);
      return row ? toRow(row) : undefined;
    },

    async list(teamId, query) {
      const plan = { ...planList(query), teamId };
      const v = versions.active(HISTORY).version;
      let selectiveTerm = false;
      // FTS5 reads U+0000 as the end of its query text ("unterminated string"): such a term is
      // checked by instr() alone. Stored texts never hold one (ingest refuses it).
      if (
        plan.order === 'created_desc' &&
        plan.term !== undefined &&
        plan.termLength >= 3 &&
        !plan.term.includes('\u0000')
      ) {
        const s = statements(v);
        // With a tag the walk follows the tag's index and seeks each row: dearer per row, so sort more.
        const common = commonFor(s.rows.get()?.n ?? 0) * (plan.tags.length > 0 ? 5 : 1);
        selectiveTerm = s.ftsCount.get(ftsPhrase(plan.term), common)!.n < common;
      }
      const { statement, params } = listStatement(v, plan, selectiveTerm);
      return pageOf(
        statement.all(...params).map((r) => JSON.parse(r.item) as CallListRow),
        plan,
      );
    },

    async beginRebuild(): Promise<CallHistoryRebuild> {
      const version = await serialised(db, () => beginRebuild.immediate());
      // Earlier rebuilds are abandoned now: their writers go (one that writes again gets a new one, and its guard's error).
      await Promise.all([...writers].map(closeWriter));
      let writer: SqliteWorkerWriter | undefined;
      const writerNow = () => {
        if (!writer || writer.closed) {
          writer = openSqliteWorkerWriter(db);
          writers.add(writer);
        }
        return writer;
      };
      const release = async () => {
        if (writer) await closeWriter(writer);
        writer = undefined;
      };
      // The version's tables start empty and only this rebuild writes them, so it numbers its rows.
      let lastSeq = 0;
      const buffer = new RebuildBuffer<SeqRow>(
        {
          load: async (callIds) => load(version, callIds),
          flush(changes, checkpoint, erased) {
            const writes = rowWrites(changes, () => ++lastSeq);
            const transaction: WriteTransaction = {
              guard: { sql: WRITABLE_VERSION_SQL, params: [HISTORY, version], message: abandoned(version) },
              // Made part by part while the worker runs the one before: the rows' JSON is most of it.
              *parts() {
                for (let start = 0, end = 0; start < writes.length; start = end) {
                  for (let bytes = 0; end < writes.length && end - start < WRITE_PART_ROWS; end++) {
                    const { change } = writes[end]!;
                    bytes += change.bytes ?? jsonBytes(change.after);
                    if (bytes > WRITE_PART_BYTES && end > start) break;
                  }
                  yield statementRuns(version, writes.slice(start, end));
                }
                if (erased.length > 0) {
                  yield erasureRuns(version, erased);
                  requestWalScrub(db);
                }
                yield [runsOf(STORE_CHECKPOINT_SQL, [Number(checkpoint), HISTORY, version])];
              },
            };
            const target = writerNow();
            // The connection's queue waits for the write: its other writers must not contend for SQLite's lock meanwhile.
            const written = serialised(db, () => target.write(transaction)).catch(async (error: unknown) => {
              await release();
              throw error;
            });
            const stored = (i: number): SeqRow => {
              const { seq, change, columns } = writes[i]!;
              return { row: docRow(change.after), titleFolded: columns.titleFolded, repFolded: columns.repFolded, seq };
            };
            return { stored, written };
          },
        },
        0n,
        false,
        options.rebuildLimits,
      );
      return {
        version,
        apply: (events, checkpoint, options) => buffer.apply(events, checkpoint, options?.expectedCheckpoint),
        async checkpoint() {
          return buffer.checkpoint;
        },
        async activate() {
          await buffer.flush();
          await release();
          await serialised(db, () => activate.immediate(version));
        },
      };
    },

    async close() {
      await Promise.all([...writers].map(closeWriter));
    },
  };

  return callHistory;
};
