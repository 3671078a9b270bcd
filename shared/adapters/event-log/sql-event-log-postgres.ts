/**
 * PostgreSQL driver of the SQL event log. Offsets come from a per-partition row updated inside the write
 * transaction: the row lock serialises writers of a partition until they commit, so offsets are
 * gap-free and a reader that sees offset n has seen every offset below it.
 */
import type pg from 'pg';
import { EventLogUnavailableError } from '../../ports/event-log.ts';
import { translatePgError } from '../postgres/pg-errors.ts';
import {
  CommitOutcomeUnknownError,
  createPostgresPool,
  inTransaction,
  type PostgresOptions,
} from '../postgres/postgres-pool.ts';
import { EVENT_LOG_SCHEMA, type SqlDriver, type SqlExecutor } from './sql-driver.ts';

/**
 * The log's failures as the port says them: retriable PostgreSQL failures (pg-errors.ts) become
 * `EventLogUnavailableError`, a publish whose COMMIT went unanswered may have been written, and
 * everything else passes unchanged.
 */
export const toEventLogError = (error: unknown): unknown =>
  error instanceof CommitOutcomeUnknownError
    ? new EventLogUnavailableError(
        `PostgreSQL event log: COMMIT went unanswered (the connection failed or timed out), the records may have been written: ${error.message}`,
        { cause: error, outcomeUnknown: true },
      )
    : translatePgError(
        error,
        (message, cause) => new EventLogUnavailableError(`PostgreSQL event log unavailable: ${message}`, { cause }),
      );

const placeholders = new Map<string, string>();
/** `?` → `$1, $2, …` (the log's SQL has no `?` inside literals). */
const toPg = (sql: string): string => {
  let converted = placeholders.get(sql);
  if (converted === undefined) {
    let n = 0;
    converted = sql.replace(/\?/g, () => `$${++n}`);
    if (placeholders.size < 1000) placeholders.set(sql, converted);
  }
  return converted;
};

class PostgresDriver implements SqlDriver {
  readonly nowMs = 'CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)';

  constructor(private readonly pool: pg.Pool) {}

  async query<T>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    try {
      return (await this.pool.query(toPg(sql), params as unknown[])).rows as T[];
    } catch (error) {
      throw toEventLogError(error);
    }
  }

  async transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    try {
      return await inTransaction(this.pool, (client) =>
        fn({
          query: async <R>(sql: string, params: readonly unknown[] = []) =>
            (await client.query(toPg(sql), params as unknown[])).rows as R[],
        }),
      );
    } catch (error) {
      throw toEventLogError(error);
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

/** Connects to the server and creates the event log's tables in `schema` when missing. */
export const connectPostgresDriver = async (options: PostgresOptions): Promise<SqlDriver> => {
  let pool: pg.Pool | undefined;
  try {
    pool = await createPostgresPool(options);
    await inTransaction(pool, async (client) => {
      // Concurrent CREATE TABLE IF NOT EXISTS can still collide; one creator at a time.
      await client.query("SELECT pg_advisory_xact_lock(hashtext('event-log-schema'))");
      for (const statement of EVENT_LOG_SCHEMA) await client.query(statement);
    });
  } catch (error) {
    await pool?.end().catch(() => undefined);
    throw toEventLogError(error);
  }
  return new PostgresDriver(pool);
};
