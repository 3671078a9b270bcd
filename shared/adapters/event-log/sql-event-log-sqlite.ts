/**
 * SQLite driver of the SQL event log: an already opened better-sqlite3 database (see `openSqlite`); the
 * caller keeps owning it, `close()` of the log leaves it open. better-sqlite3 is synchronous and has
 * one connection, so statements and transactions are serialised through one queue; `BEGIN
 * IMMEDIATE` also serialises writers of other processes on the same file.
 */
import type Database from 'better-sqlite3';
import { serialised, type SqliteDb } from '../sqlite/sqlite-database.ts';
import { DEFAULT_SYNC_DEADLINE_MS, whenDurableWithin } from '../sqlite/wal-sync.ts';
import { translateSqliteError } from '../sqlite/sqlite-errors.ts';
import { EventLogUnavailableError } from '../../ports/event-log.ts';
import { EVENT_LOG_SCHEMA, type SqlDriver, type SqlExecutor } from './sql-driver.ts';

type Statement = Database.Statement<unknown[]>;

const STATEMENT_CACHE = 256;

/** Retriable SQLite failures (sqlite-errors.ts) become `EventLogUnavailableError`. */
const toEventLogError = (error: unknown): unknown =>
  translateSqliteError(
    error,
    (message, cause) => new EventLogUnavailableError(`SQLite event log unavailable: ${message}`, { cause }),
  );

export class SqliteDriver implements SqlDriver {
  readonly nowMs = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";
  private readonly statements = new Map<string, Statement>();
  private readonly inside: SqlExecutor = { query: async (sql, params) => this.execute(sql, params) };

  /**
   * `syncDeadlineMs`: how long a publish waits for the WAL's sync before it answers that its records
   * may have been written (default 10 s, the Kafka publish's deadline): a disk whose fsync hangs
   * must not hold every request with it.
   */
  constructor(
    private readonly db: SqliteDb,
    private readonly syncDeadlineMs = DEFAULT_SYNC_DEADLINE_MS,
  ) {}

  query<T>(sql: string, params: readonly unknown[] = []): Promise<T[]> {
    return this.exclusive(() => this.execute<T>(sql, params));
  }

  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T> {
    return this.exclusive(async () => {
      this.run('BEGIN IMMEDIATE');
      try {
        const result = await fn(this.inside);
        this.run('COMMIT');
        return result;
      } catch (error) {
        if (this.db.open && this.db.inTransaction) this.db.exec('ROLLBACK');
        throw error;
      }
    });
  }

  /** The WAL synced past every commit so far (docs/decisions/0015-embedded-durability-off-the-event-loop.md). */
  async durable(): Promise<void> {
    try {
      await whenDurableWithin(this.db, this.syncDeadlineMs);
    } catch (error) {
      // Committed, not known to be on disk: it may survive (a caller must not say nothing was accepted).
      throw new EventLogUnavailableError(`SQLite event log could not sync its commits: ${(error as Error).message}`, {
        cause: error,
        outcomeUnknown: true,
      });
    }
  }

  async close(): Promise<void> {
    await serialised(this.db, () => undefined);
    this.statements.clear();
  }

  private execute<T>(sql: string, params: readonly unknown[] = []): T[] {
    try {
      const statement = this.prepare(sql);
      if (statement.reader) return statement.all(...params) as T[];
      statement.run(...params);
      return [];
    } catch (error) {
      throw toEventLogError(error);
    }
  }

  private run(sql: string): void {
    try {
      this.db.exec(sql);
    } catch (error) {
      throw toEventLogError(error);
    }
  }

  private prepare(sql: string): Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      if (this.statements.size >= STATEMENT_CACHE) this.statements.clear();
      statement = this.db.prepare<unknown[]>(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /** One statement or transaction at a time on the connection, shared with the other adapters. */
  private exclusive<T>(fn: () => Promise<T> | T): Promise<T> {
    return serialised(this.db, fn);
  }
}

/** Creates the event log's tables in `db` when missing. */
export const createSqliteSchema = (db: SqliteDb): void => {
  db.transaction(() => {
    for (const statement of EVENT_LOG_SCHEMA) db.exec(statement);
  })();
};
