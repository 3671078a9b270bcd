/**
 * Data keys on PostgreSQL, table `data_keys`: one row per call, the key wrapped by the
 * key-encryption key; destroying a key sets it to NULL and keeps the row as a tombstone.
 */
import type pg from 'pg';
import { type DataKeyStore, DataKeysUnavailableError } from '../../ports/data-keys.ts';
import { type CipherKey, newDataKey, unwrapKey, wrapKey } from '../crypto/aes-gcm.ts';
import { translatePgError } from '../postgres/pg-errors.ts';
import { createPostgresPool, type PostgresOptions } from '../postgres/postgres-pool.ts';

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

export const createPostgresDataKeys = async (options: PostgresOptions, kek: CipherKey): Promise<DataKeyStore> => {
  // Short single-row statements: a few connections serve them (the server's connections are shared by every pool of every process).
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
  const unwrap = (callId: string, row: { wrapped: Buffer | null } | undefined): Buffer | undefined =>
    row?.wrapped ? unwrapKey(kek, row.wrapped, callId) : undefined;
  const store: DataKeyStore = {
    async obtain(callId) {
      // Inserted unless there; either way the stored row (a concurrent creator's key, or a tombstone) is returned.
      const rows = await query<{ wrapped: Buffer | null }>(
        `WITH made AS (INSERT INTO data_keys (call_id, wrapped) VALUES ($1, $2) ON CONFLICT (call_id) DO NOTHING RETURNING wrapped)
         SELECT wrapped FROM made UNION ALL SELECT wrapped FROM data_keys WHERE call_id = $1 LIMIT 1`,
        [callId, wrapKey(kek, newDataKey(), callId)],
      );
      // A concurrent creator committed between this statement's snapshot and its insert: read its key.
      if (rows.length === 0) return store.find(callId);
      return unwrap(callId, rows[0]);
    },
    async find(callId) {
      return unwrap(
        callId,
        (await query<{ wrapped: Buffer | null }>('SELECT wrapped FROM data_keys WHERE call_id = $1', [callId]))[0],
      );
    },
    async destroy(callId) {
      await query(
        `INSERT INTO data_keys (call_id, wrapped, erased_at) VALUES ($1, NULL, now())
         ON CONFLICT (call_id) DO UPDATE SET wrapped = NULL, erased_at = coalesce(data_keys.erased_at, now())`,
        [callId],
      );
    },
    async close() {
      await pool.end();
    },
  };
  return store;
};
