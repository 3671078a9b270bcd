/**
 * Versions and checkpoints of the SQLite read models, in table read_model_versions: one row per
 * (model, version) with its state (building | active | retired) and the checkpoint stored with
 * its rows. Callers run these inside their own write transaction.
 */
import { type ApplyOptions, CheckpointMismatchError } from '../../ports/read-models.ts';
import type { SqliteDb } from '../sqlite/sqlite-database.ts';

export type VersionState = 'building' | 'active' | 'retired';

/** Stores a checkpoint, never moving it back. Parameters: checkpoint, model, version. */
export const STORE_CHECKPOINT_SQL =
  'UPDATE read_model_versions SET checkpoint = max(checkpoint, ?) WHERE model = ? AND version = ?';

/** A row when the version exists and is not retired. Parameters: model, version. */
export const WRITABLE_VERSION_SQL =
  "SELECT 1 FROM read_model_versions WHERE model = ? AND version = ? AND state <> 'retired'";

export interface SqliteVersions {
  /** Makes version 1 the active one the first time `model` is seen; `create` makes its tables. */
  ensure(model: string, create?: (version: number) => void): void;
  /** The active version and its checkpoint. */
  active(model: string): { version: number; checkpoint: number };
  /** One version's state and checkpoint, if it was ever created. */
  get(model: string, version: number): { state: VersionState; checkpoint: number } | undefined;
  /** Stores a checkpoint, never moving it back. */
  storeCheckpoint(model: string, version: number, checkpoint: bigint): void;
  /** Throws CheckpointMismatchError when `options.expectedCheckpoint` is not `stored`. */
  expect(stored: number, options: ApplyOptions | undefined): void;
}

export const sqliteVersions = (db: SqliteDb): SqliteVersions => {
  db.exec(`
    CREATE TABLE IF NOT EXISTS read_model_versions (
      model      TEXT    NOT NULL,
      version    INTEGER NOT NULL,
      state      TEXT    NOT NULL CHECK (state IN ('building', 'active', 'retired')),
      checkpoint INTEGER NOT NULL DEFAULT 0,
      PRIMARY KEY (model, version)
    );
  `);
  const known = db.prepare<[string], { version: number }>(
    'SELECT version FROM read_model_versions WHERE model = ? LIMIT 1',
  );
  const insertFirst = db.prepare<[string]>(
    "INSERT INTO read_model_versions (model, version, state) VALUES (?, 1, 'active')",
  );
  const activeRow = db.prepare<[string], { version: number; checkpoint: number }>(
    "SELECT version, checkpoint FROM read_model_versions WHERE model = ? AND state = 'active'",
  );
  const versionRow = db.prepare<[string, number], { state: VersionState; checkpoint: number }>(
    'SELECT state, checkpoint FROM read_model_versions WHERE model = ? AND version = ?',
  );
  const store = db.prepare<[number, string, number]>(STORE_CHECKPOINT_SQL);

  return {
    ensure(model, create) {
      db.transaction(() => {
        if (known.get(model)) return;
        insertFirst.run(model);
        create?.(1);
      }).immediate();
    },
    active(model) {
      const row = activeRow.get(model);
      if (!row) throw new Error(`read model ${model} has no active version`);
      return row;
    },
    get: (model, version) => versionRow.get(model, version),
    storeCheckpoint(model, version, checkpoint) {
      store.run(Number(checkpoint), model, version);
    },
    expect(stored, options) {
      if (options?.expectedCheckpoint !== undefined && BigInt(stored) !== options.expectedCheckpoint) {
        throw new CheckpointMismatchError(options.expectedCheckpoint, BigInt(stored));
      }
    },
  };
};
