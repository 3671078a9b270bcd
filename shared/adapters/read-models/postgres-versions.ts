/**
 * Versions and checkpoints of the PostgreSQL read models (table read_model_versions: one row per
 * model and version, with its state and the checkpoint stored with its rows), and the one place
 * driver errors become the port's errors.
 */
import type pg from 'pg';
import { type ApplyOptions, CheckpointMismatchError, ReadModelUnavailableError } from '../../ports/read-models.ts';
import { translatePgError } from '../postgres/pg-errors.ts';

export const VERSIONS_TABLE = `
  CREATE TABLE IF NOT EXISTS read_model_versions (
    model      text   NOT NULL,
    version    int    NOT NULL,
    state      text   NOT NULL CHECK (state IN ('building', 'active', 'retired')),
    checkpoint bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (model, version)
  );
`;

const translate = (error: unknown): unknown =>
  translatePgError(
    error,
    (message, cause) => new ReadModelUnavailableError(`PostgreSQL read models unavailable: ${message}`, { cause }),
  );

/** Runs `work`, turning retriable PostgreSQL failures (pg-errors.ts) into ReadModelUnavailableError. */
export const translated = async <T>(work: () => Promise<T>): Promise<T> => {
  try {
    return await work();
  } catch (error) {
    throw translate(error);
  }
};

/** Makes version 1 of `model` active the first time it is seen; `create` makes its tables. */
export const ensureFirstVersion = async (
  client: pg.PoolClient,
  model: string,
  create?: () => Promise<void>,
): Promise<void> => {
  const { rowCount } = await client.query(
    "INSERT INTO read_model_versions (model, version, state) VALUES ($1, 1, 'active') ON CONFLICT DO NOTHING",
    [model],
  );
  if (rowCount && create) await create();
};

/**
 * Locks a version's row for the transaction (applies and activation serialise on it, across
 * processes) and checks `expectedCheckpoint`; the active version when `version` is undefined.
 */
export const lockVersion = async (
  client: pg.PoolClient,
  model: string,
  version: number | undefined,
  options: ApplyOptions | undefined,
): Promise<number> => {
  const { rows } =
    version === undefined
      ? await client.query<{ version: number; checkpoint: string }>(
          "SELECT version, checkpoint FROM read_model_versions WHERE model = $1 AND state = 'active' FOR UPDATE",
          [model],
        )
      : await client.query<{ version: number; checkpoint: string }>(
          "SELECT version, checkpoint FROM read_model_versions WHERE model = $1 AND version = $2 AND state <> 'retired' FOR UPDATE",
          [model, version],
        );
  const row = rows[0];
  if (!row)
    throw new Error(
      version === undefined
        ? `read model ${model} has no active version`
        : `${model} version ${version} was abandoned or replaced; begin a new rebuild`,
    );
  if (options?.expectedCheckpoint !== undefined && BigInt(row.checkpoint) !== options.expectedCheckpoint) {
    throw new CheckpointMismatchError(options.expectedCheckpoint, BigInt(row.checkpoint));
  }
  return row.version;
};

/** The checkpoint stored with a version's rows (the active one when `version` is undefined); 0n before any. */
export const readCheckpoint = async (pool: pg.Pool, model: string, version?: number): Promise<bigint> =>
  translated(async () => {
    const { rows } =
      version === undefined
        ? await pool.query<{ checkpoint: string }>(
            "SELECT checkpoint FROM read_model_versions WHERE model = $1 AND state = 'active'",
            [model],
          )
        : await pool.query<{ checkpoint: string }>(
            'SELECT checkpoint FROM read_model_versions WHERE model = $1 AND version = $2',
            [model, version],
          );
    return BigInt(rows[0]?.checkpoint ?? 0);
  });
