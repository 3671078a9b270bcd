/**
 * Data keys on PostgreSQL, table `data_keys`: one row per call, the key wrapped by the
 * key-encryption key; destroying a key sets it to NULL and keeps the row as a tombstone.
 */
import type pg from 'pg';
import { type DataKeyStore, DataKeysUnavailableError } from '../../ports/data-keys.ts';
import { type CipherKey, newDataKey, unwrapKey, wrapKey } from '../crypto/aes-gcm.ts';
import { GroupCommit, type Outcome } from '../group-commit.ts';
import { translatePgError } from '../postgres/pg-errors.ts';
import { createPostgresPool, eachAloneOnRefusal, type PostgresOptions } from '../postgres/postgres-pool.ts';

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS data_keys (
    call_id    TEXT PRIMARY KEY,
    wrapped    BYTEA,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    erased_at  TIMESTAMPTZ
  );
`;

const translate = (error: unknown): unknown =>
  translatePgError(
    error,
    (message, cause) => new DataKeysUnavailableError(`PostgreSQL data keys unavailable: ${message}`, { cause }),
  );

/** Most calls in one statement: the arrays travel as two parameters, whatever their length. */
const MAX_BATCH = 500;

/**
 * Data keys on PostgreSQL. Keys are created and looked up in batches: the calls that ask while a
 * statement is under way share the next one (a new call's key is created by one multi-row INSERT
 * in one transaction, one WAL flush for the batch; lookups by one `= ANY` SELECT), as the embedded
 * store does with one SQLite transaction. Each item keeps its own outcome.
 */
export const createPostgresDataKeys = async (options: PostgresOptions, kek: CipherKey): Promise<DataKeyStore> => {
  // Two batched statements at a time and the odd erasure: a few connections serve them (the
  // server's connections are shared by every pool of every process).
  const pool: pg.Pool = await createPostgresPool({ max: 3, ...options }).catch((error: unknown) => {
    throw translate(error);
  });
  await pool.query(SCHEMA).catch(async (error: unknown) => {
    await pool.end().catch(() => undefined);
    throw translate(error);
  });
  const query = async <R extends pg.QueryResultRow>(sql: string, params: unknown[]): Promise<R[]> => {
    try {
      return (await pool.query<R>(sql, params)).rows;
    } catch (error) {
      throw translate(error);
    }
  };
  const unwrap = (callId: string, wrapped: Buffer | null | undefined): Buffer | undefined =>
    wrapped ? unwrapKey(kek, wrapped, callId) : undefined;

  /** The stored rows of `callIds` (a destroyed key's row has `wrapped` null; a missing one is absent). */
  const storedRows = async (callIds: string[]): Promise<Map<string, Buffer | null>> => {
    const rows = await pool.query<{ call_id: string; wrapped: Buffer | null }>(
      'SELECT call_id, wrapped FROM data_keys WHERE call_id = ANY($1::text[])',
      [callIds],
    );
    return new Map(rows.rows.map((r) => [r.call_id, r.wrapped]));
  };

  /**
   * Creates the keys of calls that have none, in one statement (its own transaction, committed
   * and flushed before it answers); for the others (a key made before, by this process or another,
   * or a tombstone) the stored row is what counts. A row another transaction commits while this
   * statement runs is neither inserted by it nor in its snapshot: it is read afterwards.
   */
  const createMany = async (callIds: string[]): Promise<Outcome<Buffer | undefined>[]> => {
    const unique = [...new Set(callIds)];
    const made = new Map(unique.map((callId) => [callId, newDataKey()]));
    const rows = await pool.query<{ call_id: string; wrapped: Buffer | null; inserted: boolean }>(
      `WITH input AS (
         SELECT * FROM unnest($1::text[], $2::bytea[]) AS t(call_id, wrapped)
       ), made AS (
         INSERT INTO data_keys (call_id, wrapped) SELECT call_id, wrapped FROM input
         ON CONFLICT (call_id) DO NOTHING RETURNING call_id
       )
       SELECT call_id, NULL::bytea AS wrapped, true AS inserted FROM made
       UNION ALL
       SELECT d.call_id, d.wrapped, false FROM data_keys d JOIN input USING (call_id)`,
      [unique, unique.map((callId) => wrapKey(kek, made.get(callId)!, callId))],
    );
    // No call id comes back twice: one inserted here was in no stored row of the snapshot. An
    // inserted call's key is the one made here (no need to unwrap what was just wrapped).
    const keys = new Map<string, Buffer | undefined>();
    for (const row of rows.rows)
      keys.set(row.call_id, row.inserted ? made.get(row.call_id) : unwrap(row.call_id, row.wrapped));
    const late = unique.filter((callId) => !keys.has(callId));
    if (late.length > 0)
      for (const [callId, wrapped] of await storedRows(late)) keys.set(callId, unwrap(callId, wrapped));
    return callIds.map((callId) =>
      keys.has(callId) ? keys.get(callId) : new Error(`the data key of call ${callId} was neither made nor found`),
    );
  };
  const findMany = async (callIds: string[]): Promise<Outcome<Buffer | undefined>[]> => {
    const stored = await storedRows([...new Set(callIds)]);
    return callIds.map((callId) => unwrap(callId, stored.get(callId)));
  };

  const creations = new GroupCommit<string, Buffer | undefined>(
    (callIds) => eachAloneOnRefusal(callIds, createMany, translate),
    {
      name: 'postgres-data-keys',
      maxBatch: MAX_BATCH,
    },
  );
  const lookups = new GroupCommit<string, Buffer | undefined>(
    (callIds) => eachAloneOnRefusal(callIds, findMany, translate),
    {
      maxBatch: MAX_BATCH,
    },
  );

  return {
    obtain: (callId) => creations.submit(callId),
    find: (callId) => lookups.submit(callId),
    async destroyed(callId) {
      const rows = await query<{ erased: boolean }>(
        'SELECT erased_at IS NOT NULL AS erased FROM data_keys WHERE call_id = $1',
        [callId],
      );
      return rows[0]?.erased === true;
    },
    async destroy(callId) {
      await query(
        `INSERT INTO data_keys (call_id, wrapped, erased_at) VALUES ($1, NULL, now())
         ON CONFLICT (call_id) DO UPDATE SET wrapped = NULL, erased_at = coalesce(data_keys.erased_at, now())`,
        [callId],
      );
    },
    async close() {
      await Promise.all([creations.drain(), lookups.drain()]);
      await pool.end();
    },
  };
};
