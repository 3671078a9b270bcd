/**
 * The call history on a PostgreSQL server, in the service's schema. Same tables and rules as the
 * SQLite adapter (sqlite-call-history.ts), with PostgreSQL's own tools:
 *
 * - Search: `pg_trgm` GIN indexes on the folded title and the folded rep name, queried with
 *   `LIKE '%term%'` (the user's `%`, `_` and `\` escaped). Rows and queries are folded in JavaScript
 *   (`foldForSearch`), so the match is exact and the index only narrows; the planner chooses
 *   between the trigram indexes and walking the team's index newest first. Without pg_trgm (see
 *   postgres-read-models.ts) search always walks. Terms of 1–2 characters have no trigram and walk.
 * - Apply: one transaction per batch. It locks the version's row in read_model_versions (applies
 *   and activation serialise across processes), loads only the rows of calls whose batch does not
 *   start with their CallSubmitted, and writes rows, tags, transcripts and checkpoint in one
 *   statement. Rows are upserted only when their new last position is higher, which keeps
 *   replays harmless. fillfactor 80 leaves room for HOT updates of rows whose indexed columns
 *   did not change.
 * - Rebuild: the new version's tables have their primary keys only while rows are loaded; the
 *   other indexes (btree and trigram GIN) are built in one pass each before activation. Windows
 *   are written while the next one folds (see RebuildBuffer).
 * - Versions: reads cache the active version; activation drops the old tables in its transaction,
 *   so a read that meets a dropped table (42P01) re-reads the version and retries. Each version's
 *   fold revision is in call_history_folds; opening one folded by an earlier revision refolds the
 *   rows the change touches (docs/decisions/0023-search-fold-revisions.md).
 */
import type pg from 'pg';
import {
  type CallHistoryRow,
  erasedCallIds,
  SEARCH_FOLD_REVISION,
  SEARCH_REFOLD_CHARACTERS,
} from '../../domain/call/call-history.ts';
import { CALL_LIST_ROW_FIELDS, type CallListRow } from '../../domain/call/call-view.ts';
import type { RecordedEvent } from '../../ports/event-store.ts';
import type { ApplyOptions, CallHistoryRebuild, CallHistoryStore } from '../../ports/read-models.ts';
import { inTransaction } from '../postgres/postgres-pool.ts';
import {
  changesOf,
  docRow,
  eventsByCall,
  foldInto,
  indexedColumns,
  type LoadedRow,
  type PendingRow,
  refolded,
  type RowChange,
  rowTagKeys,
  startsWithSubmission,
  storedRow,
  transcriptRecorded,
} from './history-rows.ts';
import { asciiLower, escapeLike, type ListPlan, pageOf, planList } from './list-plan.ts';
import { RebuildBuffer, type RebuildLimits } from './rebuild-buffer.ts';
import { ensureFirstVersion, lockVersion, readCheckpoint, translated } from './postgres-versions.ts';

const HISTORY = 'call_history';
const UNDEFINED_TABLE = '42P01';

/** The row's updatedAt, as the sync order and its index read it (the expression must match the index's). */
const UPDATED_AT = "(h.doc->>'updatedAt')";

/** Tables of version v with what a write needs (primary keys); see historyIndexes. */
const historyTables = (v: number) => `
  CREATE TABLE IF NOT EXISTS call_history_v${v} (
    call_id       text COLLATE "C" PRIMARY KEY,
    team_id       text COLLATE "C" NOT NULL,
    created_at    bigint NOT NULL,
    status        text   NOT NULL,
    title_folded  text   NOT NULL,
    rep_folded    text   NOT NULL,
    last_position bigint NOT NULL,
    doc           json   NOT NULL
  ) WITH (fillfactor = 80);
  CREATE TABLE IF NOT EXISTS call_transcripts_v${v} (
    call_id    text COLLATE "C" PRIMARY KEY,
    transcript json NOT NULL
  );
  CREATE TABLE IF NOT EXISTS call_tags_v${v} (
    team_id text COLLATE "C" NOT NULL,
    tag     text COLLATE "C" NOT NULL,
    call_id text COLLATE "C" NOT NULL,
    PRIMARY KEY (team_id, tag, call_id)
  );
`;

/**
 * The indexes only reads use. A rebuild creates them once its rows are in, before activation:
 * building a GIN trigram index in one pass costs a fraction of maintaining it row by row.
 */
const historyIndexes = (v: number, trgm: string | undefined) => `
  CREATE INDEX IF NOT EXISTS call_history_v${v}_team ON call_history_v${v} (team_id, created_at DESC, call_id DESC);
  CREATE INDEX IF NOT EXISTS call_history_v${v}_team_status ON call_history_v${v} (team_id, status, created_at DESC, call_id DESC);
  CREATE INDEX IF NOT EXISTS call_history_v${v}_team_updated ON call_history_v${v} (team_id, (doc->>'updatedAt'), call_id);
  ${
    trgm === undefined
      ? ''
      : `CREATE INDEX IF NOT EXISTS call_history_v${v}_title_trgm ON call_history_v${v} USING gin (title_folded ${trgm}.gin_trgm_ops);
         CREATE INDEX IF NOT EXISTS call_history_v${v}_rep_trgm ON call_history_v${v} USING gin (rep_folded ${trgm}.gin_trgm_ops);`
  }
`;

/**
 * The fold revision (SEARCH_FOLD_REVISION) each version's rows were folded with; a version without
 * a row here was folded by revision 1, before revisions were recorded.
 */
const FOLDS_TABLE = `
  CREATE TABLE IF NOT EXISTS call_history_folds (
    version  int PRIMARY KEY,
    revision int NOT NULL
  );
`;

const markFolded = (v: number) =>
  `INSERT INTO call_history_folds (version, revision) VALUES (${v}, ${SEARCH_FOLD_REVISION})
   ON CONFLICT (version) DO UPDATE SET revision = excluded.revision`;

const dropHistoryTables = (v: number) =>
  `DELETE FROM call_history_folds WHERE version = ${v};
   DROP TABLE IF EXISTS call_tags_v${v}, call_transcripts_v${v}, call_history_v${v}`;

/** Candidates of a refold read at once. */
const REFOLD_BATCH = 1000;

/**
 * Refolds the rows of version v that an earlier fold revision folded otherwise (their title, rep
 * name or tags hold a character of SEARCH_REFOLD_CHARACTERS), their columns and tag keys, and
 * records the current revision, in the caller's transaction. It locks the version's row first, as
 * an apply does, so no apply changes a row between its read and its refold.
 */
const refoldOlder = async (client: pg.PoolClient, v: number): Promise<void> => {
  const { rows: stored } = await client.query<{ revision: number }>(
    'SELECT revision FROM call_history_folds WHERE version = $1',
    [v],
  );
  if ((stored[0]?.revision ?? 1) >= SEARCH_FOLD_REVISION) return;
  await lockVersion(client, HISTORY, v, undefined);
  for (let after = ''; ;) {
    const { rows } = await client.query<{ doc: CallHistoryRow; title_folded: string; rep_folded: string }>(
      `SELECT doc, title_folded, rep_folded FROM call_history_v${v} h
        WHERE call_id > $1
          AND EXISTS (SELECT 1 FROM unnest($2::text[]) c
                       WHERE strpos(concat_ws(' ', h.doc->>'title', h.doc->>'repName', h.doc->>'tags'), c) > 0)
        ORDER BY call_id LIMIT ${REFOLD_BATCH}`,
      [after, SEARCH_REFOLD_CHARACTERS],
    );
    if (rows.length === 0) break;
    const columns: object[] = [];
    const tags: object[] = [];
    for (const { doc } of rows) {
      const now = refolded(doc);
      columns.push({ call_id: doc.callId, title_folded: now.titleFolded, rep_folded: now.repFolded });
      for (const tag of now.tags) tags.push({ team_id: doc.teamId, tag, call_id: doc.callId });
    }
    // Both changes of the WITH run whether or not the query reads them; the new tags go in after.
    await client.query(
      `WITH r AS (SELECT * FROM json_to_recordset($1::json) AS r(call_id text, title_folded text, rep_folded text)),
            refolded AS (
              UPDATE call_history_v${v} h SET title_folded = r.title_folded, rep_folded = r.rep_folded
                FROM r WHERE h.call_id = r.call_id AND (h.title_folded, h.rep_folded) IS DISTINCT FROM (r.title_folded, r.rep_folded)
                RETURNING 1),
            untagged AS (
              DELETE FROM call_tags_v${v} t USING call_history_v${v} h, r
               WHERE h.call_id = r.call_id AND t.team_id = h.team_id AND t.call_id = h.call_id
               RETURNING 1)
       SELECT 1`,
      [JSON.stringify(columns)],
    );
    await client.query(
      `INSERT INTO call_tags_v${v} (team_id, tag, call_id)
       SELECT * FROM json_to_recordset($1::json) AS t(team_id text, tag text, call_id text)
       ON CONFLICT DO NOTHING`,
      [JSON.stringify(tags)],
    );
    after = rows[rows.length - 1]!.doc.callId;
  }
  await client.query(markFolded(v));
};

/**
 * What a list reads of a row (CallListRow), as one JSON object: the doc's top-level fields a list
 * needs, in one pass over it (json_each keeps each value's text as stored), never the transcript,
 * which is in a table of its own. Evaluated for the page's rows only (after ORDER BY … LIMIT).
 */
const LIST_ROW = `(SELECT json_object_agg(f.key, f.value) FROM json_each(h.doc) f WHERE f.key IN (${CALL_LIST_ROW_FIELDS.map((field) => `'${field}'`).join(', ')}))`;

type StoredRow = { doc: CallHistoryRow; transcript: CallHistoryRow['transcript'] | null };

export interface PostgresCallHistoryOptions {
  /** Schema holding pg_trgm, or undefined to go without trigram indexes. */
  trigramSchema: string | undefined;
  /** When a rebuild writes what it holds in memory (see RebuildBuffer). */
  rebuildLimits?: RebuildLimits;
}

export const createPostgresCallHistory = async (
  pool: pg.Pool,
  { trigramSchema: trgm, rebuildLimits }: PostgresCallHistoryOptions,
): Promise<CallHistoryStore> => {
  await translated(() =>
    inTransaction(pool, async (client) => {
      await client.query("SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.read_models'))");
      await client.query(FOLDS_TABLE);
      await ensureFirstVersion(client, HISTORY, async () => {
        await client.query(historyTables(1) + historyIndexes(1, trgm) + ';' + markFolded(1));
      });
      // A database made before an index was added gets it now (a no-op when it is there).
      const { rows } = await client.query<{ version: number }>(
        "SELECT version FROM read_model_versions WHERE model = $1 AND state = 'active'",
        [HISTORY],
      );
      if (rows[0]) await client.query(historyIndexes(rows[0].version, trgm));
      // Rows folded by an earlier revision are refolded before the first read (docs/decisions/0023-search-fold-revisions.md).
      if (rows[0]) await refoldOlder(client, rows[0].version);
    }),
  );

  const load = async (
    client: pg.PoolClient | pg.Pool,
    v: number,
    callIds: string[],
  ): Promise<Map<string, LoadedRow>> => {
    const loaded = new Map<string, LoadedRow>();
    if (callIds.length === 0) return loaded;
    const { rows } = await client.query<{ doc: CallHistoryRow; title_folded: string; rep_folded: string }>(
      `SELECT doc, title_folded, rep_folded FROM call_history_v${v} WHERE call_id = ANY($1)`,
      [callIds],
    );
    for (const r of rows)
      loaded.set(r.doc.callId, { row: r.doc, titleFolded: r.title_folded, repFolded: r.rep_folded });
    return loaded;
  };

  /** The rows, tags and transcripts a batch of changes writes, as the JSON documents writeChanges sends, and the rows as stored. */
  const changeDocuments = (
    changes: RowChange<LoadedRow>[],
  ): { rows: string; tags: string; transcripts: string; stored: LoadedRow[] } => {
    const rows: object[] = [];
    const tags: object[] = [];
    const transcripts: object[] = [];
    const stored: LoadedRow[] = [];
    for (const change of changes) {
      const { before, after } = change;
      const c = indexedColumns(after, before);
      const doc = docRow(after);
      rows.push({
        call_id: c.callId,
        team_id: c.teamId,
        created_at: c.createdAt,
        status: c.status,
        title_folded: c.titleFolded,
        rep_folded: c.repFolded,
        last_position: c.lastPosition.toString(),
        doc,
      });
      stored.push({ row: doc, titleFolded: c.titleFolded, repFolded: c.repFolded });
      if (transcriptRecorded(before?.row, after)) transcripts.push({ call_id: c.callId, transcript: after.transcript });
      if (before === undefined)
        for (const tag of rowTagKeys(after)) tags.push({ team_id: c.teamId, tag, call_id: c.callId });
    }
    return { rows: JSON.stringify(rows), tags: JSON.stringify(tags), transcripts: JSON.stringify(transcripts), stored };
  };

  /**
   * Rows (upserted only when their last position is higher: a row not loaded may exist), their new
   * tags and transcripts, and the checkpoint, in one statement. Each travels as one JSON document
   * read with json_to_recordset: a third of the time of array parameters of JSON strings, which
   * pg escapes character by character.
   */
  const writeChanges = async (
    client: pg.PoolClient,
    v: number,
    documents: { rows: string; tags: string; transcripts: string },
    checkpoint: bigint,
  ): Promise<void> => {
    await client.query(
      `WITH upserted AS (
         INSERT INTO call_history_v${v} AS h (call_id, team_id, created_at, status, title_folded, rep_folded, last_position, doc)
         SELECT * FROM json_to_recordset($1::json)
           AS r(call_id text, team_id text, created_at bigint, status text, title_folded text, rep_folded text, last_position bigint, doc json)
         ON CONFLICT (call_id) DO UPDATE SET
           status = excluded.status, title_folded = excluded.title_folded, rep_folded = excluded.rep_folded,
           last_position = excluded.last_position, doc = excluded.doc
         WHERE h.last_position < excluded.last_position
         RETURNING 1
       ), tagged AS (
         INSERT INTO call_tags_v${v} (team_id, tag, call_id)
         SELECT * FROM json_to_recordset($2::json) AS t(team_id text, tag text, call_id text)
         ON CONFLICT DO NOTHING
         RETURNING 1
       ), transcribed AS (
         INSERT INTO call_transcripts_v${v} (call_id, transcript)
         SELECT * FROM json_to_recordset($3::json) AS x(call_id text, transcript json)
         ON CONFLICT DO NOTHING
         RETURNING 1
       )
       UPDATE read_model_versions SET checkpoint = GREATEST(checkpoint, $4) WHERE model = $5 AND version = $6`,
      [documents.rows, documents.tags, documents.transcripts, checkpoint.toString(), HISTORY, v],
    );
  };

  /** Deletes the rows of erased calls (docs/decisions/0014-erasure-crypto-shredding.md), after the batch's writes. */
  const eraseCalls = async (client: pg.PoolClient, v: number, callIds: readonly string[]): Promise<void> => {
    if (callIds.length === 0) return;
    await client.query(
      `WITH gone AS (DELETE FROM call_history_v${v} WHERE call_id = ANY($1::text[]) RETURNING call_id, team_id),
            transcripts AS (DELETE FROM call_transcripts_v${v} WHERE call_id = ANY($1::text[]) RETURNING 1)
       DELETE FROM call_tags_v${v} t USING gone WHERE t.team_id = gone.team_id AND t.call_id = gone.call_id`,
      [callIds],
    );
  };

  const applyLive = (events: readonly RecordedEvent[], checkpoint: bigint, options: ApplyOptions | undefined) =>
    translated(() =>
      inTransaction(pool, async (client) => {
        const v = await lockVersion(client, HISTORY, undefined, options);
        const byCall = eventsByCall(events);
        const toLoad = [...byCall].filter(([, list]) => !startsWithSubmission(list)).map(([callId]) => callId);
        const pending = new Map<string, PendingRow<LoadedRow>>();
        foldInto(pending, byCall, await load(client, v, toLoad));
        await writeChanges(client, v, changeDocuments(changesOf(pending)), checkpoint);
        await eraseCalls(client, v, erasedCallIds(events));
      }),
    );

  let activeVersion: number | undefined;
  /** Runs a read against the active version, re-reading it once if its tables were dropped meanwhile. */
  const onActive = async <T>(read: (v: number) => Promise<T>): Promise<T> =>
    translated(async () => {
      for (let attempt = 0; ; attempt++) {
        if (activeVersion === undefined) {
          const { rows } = await pool.query<{ version: number }>(
            "SELECT version FROM read_model_versions WHERE model = $1 AND state = 'active'",
            [HISTORY],
          );
          activeVersion = rows[0]?.version ?? 1;
        }
        try {
          return await read(activeVersion);
        } catch (error) {
          if ((error as { code?: string }).code !== UNDEFINED_TABLE || attempt >= 2) throw error;
          activeVersion = undefined;
        }
      }
    });

  const listQuery = (v: number, teamId: string, plan: ListPlan): { text: string; values: unknown[] } => {
    const values: unknown[] = [teamId];
    const param = (value: unknown) => {
      values.push(value);
      return `$${values.length}`;
    };
    const where = ['h.team_id = $1'];
    if (plan.status !== undefined) where.push(`h.status = ${param(plan.status)}`);
    if (plan.after)
      where.push(
        `(h.created_at, h.call_id) < (${param(plan.after.createdAt)}::bigint, ${param(plan.after.callId)}::text)`,
      );
    if (plan.afterUpdated)
      where.push(
        `(${UPDATED_AT}, h.call_id) > (${param(plan.afterUpdated.updatedAt)}::text, ${param(plan.afterUpdated.callId)}::text)`,
      );
    if (plan.updatedSince !== undefined) where.push(`${UPDATED_AT} >= ${param(plan.updatedSince)}::text`);
    if (plan.callDateFrom !== undefined) where.push(`(h.doc->>'callDate') >= ${param(plan.callDateFrom)}::text`);
    if (plan.callDateTo !== undefined) where.push(`(h.doc->>'callDate') <= ${param(plan.callDateTo)}::text`);
    // ASCII letters only, as SQLite's lower() folds them: both backends answer alike.
    if (plan.repEmail !== undefined)
      where.push(`lower((h.doc->>'repEmail') COLLATE "C") = ${param(plan.repEmail)}::text`);
    for (const tag of plan.tags) {
      where.push(
        `EXISTS (SELECT 1 FROM call_tags_v${v} t WHERE t.team_id = h.team_id AND t.tag = ${param(tag)} AND t.call_id = h.call_id)`,
      );
    }
    if (plan.term !== undefined) {
      const pattern = param(`%${escapeLike(plan.term)}%`);
      where.push(`(h.title_folded LIKE ${pattern} ESCAPE '\\' OR h.rep_folded LIKE ${pattern} ESCAPE '\\')`);
    }
    const limit = param(plan.limit + 1);
    return {
      text: `SELECT ${LIST_ROW} AS item FROM call_history_v${v} h WHERE ${where.join(' AND ')} ORDER BY ${plan.order === 'updated_asc' ? `${UPDATED_AT} ASC, h.call_id ASC` : 'h.created_at DESC, h.call_id DESC'} LIMIT ${limit}`,
      values,
    };
  };

  const beginRebuild = (): Promise<number> =>
    translated(() =>
      inTransaction(pool, async (client) => {
        await client.query('SELECT 1 FROM read_model_versions WHERE model = $1 FOR UPDATE', [HISTORY]);
        const { rows: building } = await client.query<{ version: number }>(
          "UPDATE read_model_versions SET state = 'retired' WHERE model = $1 AND state = 'building' RETURNING version",
          [HISTORY],
        );
        for (const { version } of building) await client.query(dropHistoryTables(version));
        const { rows } = await client.query<{ next: number }>(
          'SELECT max(version) + 1 AS next FROM read_model_versions WHERE model = $1',
          [HISTORY],
        );
        const next = rows[0]!.next;
        await client.query("INSERT INTO read_model_versions (model, version, state) VALUES ($1, $2, 'building')", [
          HISTORY,
          next,
        ]);
        await client.query(historyTables(next) + ';' + markFolded(next));
        return next;
      }),
    );

  /** A rebuilt version's indexes, in a transaction of their own: live applies go on meanwhile. */
  const createIndexes = (version: number): Promise<void> =>
    translated(() =>
      inTransaction(pool, async (client) => {
        await lockVersion(client, HISTORY, version, undefined);
        await client.query(historyIndexes(version, trgm));
      }),
    );

  const activate = (version: number): Promise<void> =>
    translated(() =>
      inTransaction(pool, async (client) => {
        const { rows } = await client.query<{ version: number; state: string }>(
          'SELECT version, state FROM read_model_versions WHERE model = $1 FOR UPDATE',
          [HISTORY],
        );
        const mine = rows.find((row) => row.version === version);
        if (mine?.state === 'active') return;
        if (mine?.state !== 'building')
          throw new Error(`${HISTORY} version ${version} was abandoned or replaced; begin a new rebuild`);
        const previous = rows.find((row) => row.state === 'active');
        await client.query("UPDATE read_model_versions SET state = 'active' WHERE model = $1 AND version = $2", [
          HISTORY,
          version,
        ]);
        if (previous) {
          await client.query("UPDATE read_model_versions SET state = 'retired' WHERE model = $1 AND version = $2", [
            HISTORY,
            previous.version,
          ]);
          await client.query(dropHistoryTables(previous.version));
        }
      }),
    ).then(() => {
      activeVersion = version;
    });

  const callHistory: CallHistoryStore = {
    apply: applyLive,
    checkpoint: () => readCheckpoint(pool, HISTORY),
    activeVersion: () =>
      translated(async () => {
        const { rows } = await pool.query<{ version: number }>(
          "SELECT version FROM read_model_versions WHERE model = $1 AND state = 'active'",
          [HISTORY],
        );
        return rows[0]?.version ?? 1;
      }),

    submittedBefore: (teamId, before, limit, after) =>
      onActive(async (v) =>
        (
          await pool.query<{ call_id: string; created_at: string }>(
            `SELECT call_id, created_at FROM call_history_v${v}
              WHERE team_id = $1 AND created_at < $2 AND (created_at, call_id) > ($3, $4)
              ORDER BY created_at, call_id LIMIT $5`,
            [teamId, Date.parse(before), after?.submittedAtMs ?? Number.MIN_SAFE_INTEGER, after?.callId ?? '', limit],
          )
        ).rows.map((r) => ({ callId: r.call_id, submittedAtMs: Number(r.created_at) })),
      ),
    callsOfEmail: (teamId, email) =>
      onActive(async (v) =>
        (
          await pool.query<{ call_id: string }>(
            `SELECT call_id FROM call_history_v${v}
              WHERE team_id = $1 AND (lower((doc->>'repEmail') COLLATE "C") = $2 OR (doc->'attributedTo'->>'kind' = 'member' AND lower((doc->'attributedTo'->>'email') COLLATE "C") = $2))`,
            [teamId, asciiLower(email.trim())],
          )
        ).rows.map((r) => r.call_id),
      ),

    get: (teamId, callId) =>
      onActive(async (v) => {
        const { rows } = await pool.query<StoredRow>(
          `SELECT h.doc, x.transcript FROM call_history_v${v} h LEFT JOIN call_transcripts_v${v} x ON x.call_id = h.call_id WHERE h.call_id = $1 AND h.team_id = $2`,
          [callId, teamId],
        );
        return rows[0] && storedRow(rows[0].doc, rows[0].transcript);
      }),

    async list(teamId, query) {
      const plan = planList(query);
      const rows = await onActive(
        async (v) => (await pool.query<{ item: CallListRow }>(listQuery(v, teamId, plan))).rows,
      );
      return pageOf(
        rows.map((r) => r.item),
        plan,
      );
    },

    async beginRebuild(): Promise<CallHistoryRebuild> {
      const version = await beginRebuild();
      const buffer = new RebuildBuffer<LoadedRow>(
        {
          load: (callIds) => translated(() => load(pool, version, callIds)),
          flush(changes, checkpoint, erased) {
            const { stored, ...documents } = changeDocuments(changes);
            const written = translated(() =>
              inTransaction(pool, async (client) => {
                await lockVersion(client, HISTORY, version, undefined);
                await writeChanges(client, version, documents, checkpoint);
                await eraseCalls(client, version, erased);
              }),
            );
            return { stored: (i) => stored[i]!, written };
          },
        },
        0n,
        true,
        rebuildLimits,
      );
      return {
        version,
        apply: (events, checkpoint, applyOptions) => buffer.apply(events, checkpoint, applyOptions?.expectedCheckpoint),
        checkpoint: async () => buffer.checkpoint,
        activate: async () => {
          await buffer.flush();
          await createIndexes(version);
          await activate(version);
        },
      };
    },
  };

  return callHistory;
};
