/**
 * The event log in SQL tables (prefix `log_`), for running without Kafka: on the embedded SQLite
 * database or on PostgreSQL. Both share one implementation (`sql-event-log-core.ts`); the
 * dialects differ only in their driver.
 */
import type { PostgresOptions } from '../postgres/postgres-pool.ts';
import type { SqliteDb } from '../sqlite/sqlite-database.ts';
import { createSqlEventLog, type SqlEventLog, type SqlEventLogOptions } from './sql-event-log-core.ts';
import { createSqliteSchema, SqliteDriver } from './sql-event-log-sqlite.ts';

export type { SqlEventLog, SqlEventLogOptions } from './sql-event-log-core.ts';

/** Where the PostgreSQL event log lives, and its tuning. */
export interface PostgresEventLogOptions extends PostgresOptions, SqlEventLogOptions {}

/**
 * The event log in an open SQLite database (see `openSqlite`); its tables are created when
 * missing. The caller keeps owning `db`: the log's `close()` leaves it open.
 */
export const createSqliteEventLog = (
  db: SqliteDb,
  { syncDeadlineMs, ...options }: SqlEventLogOptions & { syncDeadlineMs?: number } = {},
): SqlEventLog => {
  createSqliteSchema(db);
  return createSqlEventLog(new SqliteDriver(db, syncDeadlineMs), options);
};

/**
 * The event log in tables of `schema` on a PostgreSQL server; tables are created when missing.
 * @throws EventLogUnavailableError when the server cannot be reached.
 */
export const createPostgresEventLog = async (options: PostgresEventLogOptions): Promise<SqlEventLog> => {
  // Loaded here, so that the embedded log never loads the PostgreSQL driver.
  const { connectPostgresDriver } = await import('./sql-event-log-postgres.ts');
  return createSqlEventLog(await connectPostgresDriver(options), options);
};
