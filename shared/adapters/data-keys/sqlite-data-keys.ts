/**
 * Data keys in the embedded SQLite database, table `data_keys`: one row per call, the key wrapped by
 * the key-encryption key; destroying a key overwrites it with NULL and keeps the row as a
 * tombstone (the database runs with secure_delete, so the old bytes do not stay in a free page).
 * Creations of concurrent requests share one transaction (group commit). A new key is durable
 * before `obtain` resolves (its WAL synced), unless `coveredByNextWrite`: the caller's next write
 * to the same database is durable and covers it (the embedded log's publish; commits reach the
 * disk in order). With Kafka as the log nothing covers it, and a key lost in a power cut would
 * leave a call on the log whose personal fields no one can open.
 */
import Database from 'better-sqlite3';
import { type DataKeyStore, DataKeysUnavailableError } from '../../ports/data-keys.ts';
import { type CipherKey, newDataKey, unwrapKey, wrapKey } from '../crypto/aes-gcm.ts';
import { GroupCommit, type Outcome } from '../group-commit.ts';
import { requestWalScrub, serialised, type SqliteDb } from '../sqlite/sqlite-database.ts';
import { translateSqliteError } from '../sqlite/sqlite-errors.ts';
import { whenDurable } from '../sqlite/wal-sync.ts';

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS data_keys (
    call_id    TEXT PRIMARY KEY,
    wrapped    BLOB,
    created_at INTEGER NOT NULL,
    erased_at  INTEGER
  );
`;

const translate = (error: unknown): unknown =>
  translateSqliteError(
    error,
    (message, cause) => new DataKeysUnavailableError(`SQLite data keys unavailable: ${message}`, { cause }),
  );

export const createSqliteDataKeys = (
  db: SqliteDb,
  kek: CipherKey,
  { coveredByNextWrite = false }: { coveredByNextWrite?: boolean } = {},
): DataKeyStore => {
  db.exec(SCHEMA);
  const reader = new Database(db.name, { readonly: true, fileMustExist: true });
  reader.pragma('busy_timeout = 5000');
  // Point lookups of one key each: SQLite's own default page cache (2 MB), not the driver's 16 MB.
  reader.pragma('cache_size = -2000');
  const select = reader.prepare<[string], { wrapped: Buffer | null }>(
    'SELECT wrapped FROM data_keys WHERE call_id = ?',
  );
  const selectErased = reader.prepare<[string], { erased_at: number | null }>(
    'SELECT erased_at FROM data_keys WHERE call_id = ?',
  );
  const selectWriter = db.prepare<[string], { wrapped: Buffer | null }>(
    'SELECT wrapped FROM data_keys WHERE call_id = ?',
  );
  const insert = db.prepare('INSERT OR IGNORE INTO data_keys (call_id, wrapped, created_at) VALUES (?, ?, ?)');
  const destroy = db.prepare(
    'INSERT INTO data_keys (call_id, wrapped, created_at, erased_at) VALUES (?, NULL, ?, ?) ON CONFLICT (call_id) DO UPDATE SET wrapped = NULL, erased_at = coalesce(data_keys.erased_at, excluded.erased_at)',
  );

  const unwrap = (callId: string, row: { wrapped: Buffer | null } | undefined): Buffer | undefined =>
    row?.wrapped ? unwrapKey(kek, row.wrapped, callId) : undefined;

  const creations = new GroupCommit<string, Buffer | undefined>(
    (callIds) =>
      serialised(db, () => {
        db.exec('BEGIN IMMEDIATE');
        try {
          const now = Date.now();
          const outcomes: Outcome<Buffer | undefined>[] = callIds.map((callId) => {
            const key = newDataKey();
            // Not inserted: the call has a key already (or a tombstone), which is the one to use.
            if (insert.run(callId, wrapKey(kek, key, callId), now).changes === 1) return key;
            return unwrap(callId, selectWriter.get(callId));
          });
          db.exec('COMMIT');
          return outcomes;
        } catch (error) {
          if (db.inTransaction) db.exec('ROLLBACK');
          throw translate(error);
        }
      }),
    { name: 'sqlite-data-keys' },
  );

  return {
    // Straight to the writer: a key is obtained for a new call (the caller caches the keys it has
    // made), and a lookup on the reader first always missed, at the cost of a read transaction whose
    // page cache every commit of the writer had invalidated. A key that exists is read by the writer.
    async obtain(callId) {
      const key = await creations.submit(callId);
      if (!coveredByNextWrite) await whenDurable(db).catch((error: unknown) => Promise.reject(translate(error)));
      return key;
    },
    async find(callId) {
      try {
        return unwrap(callId, select.get(callId));
      } catch (error) {
        throw translate(error);
      }
    },
    async destroyed(callId) {
      try {
        return (selectErased.get(callId)?.erased_at ?? null) !== null;
      } catch (error) {
        throw translate(error);
      }
    },
    async destroy(callId) {
      const now = Date.now();
      await serialised(db, () => destroy.run(callId, now, now)).catch((error: unknown) => {
        throw translate(error);
      });
      // The WAL's earlier frames still hold the wrapped key until it is emptied.
      requestWalScrub(db);
    },
    async close() {
      await creations.drain();
      reader.close();
    },
  };
};
