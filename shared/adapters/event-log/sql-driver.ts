import type { LogRecord } from '../../ports/event-log.ts';

/**
 * The little the SQL event log needs from a database, so one implementation serves SQLite and
 * PostgreSQL. Statements use `?` placeholders and SQL both dialects accept (`ON CONFLICT`,
 * `RETURNING`); the dialect-specific rest lives in the driver.
 */

export interface SqlExecutor {
  /** Runs one statement; resolves with its rows (none for a write without `RETURNING`). */
  query<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
}

export interface SqlDriver extends SqlExecutor {
  /**
   * Runs `fn` in one write transaction (writers are serialised), committing when it resolves and
   * rolling back when it throws. Inside, use only the executor `fn` receives.
   */
  transaction<T>(fn: (tx: SqlExecutor) => Promise<T>): Promise<T>;
  /** SQL expression for the database clock in milliseconds since the epoch (a BIGINT). */
  readonly nowMs: string;
  /**
   * Resolves once every transaction committed so far is durable. A driver whose COMMIT is durable
   * (PostgreSQL) leaves it out; the embedded SQLite database syncs its WAL after COMMIT instead.
   */
  durable?(): Promise<void>;
  /** Releases what the driver opened itself. */
  close(): Promise<void>;
}

/** Tables of the SQL event log; both dialects accept these types. */
export const EVENT_LOG_SCHEMA: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS log_topics (
    name TEXT PRIMARY KEY,
    partitions INTEGER NOT NULL
  )`,
  // One row per partition holding the next offset: writers lock it, so offsets are gap-free and
  // commit in order.
  `CREATE TABLE IF NOT EXISTS log_partitions (
    topic TEXT NOT NULL,
    partition INTEGER NOT NULL,
    next_offset BIGINT NOT NULL,
    PRIMARY KEY (topic, partition)
  )`,
  `CREATE TABLE IF NOT EXISTS log_records (
    topic TEXT NOT NULL,
    partition INTEGER NOT NULL,
    record_offset BIGINT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    headers TEXT NOT NULL,
    timestamp_ms BIGINT NOT NULL,
    PRIMARY KEY (topic, partition, record_offset)
  )`,
  `CREATE TABLE IF NOT EXISTS log_offsets (
    group_id TEXT NOT NULL,
    topic TEXT NOT NULL,
    partition INTEGER NOT NULL,
    next_offset BIGINT NOT NULL,
    PRIMARY KEY (group_id, topic, partition)
  )`,
  `CREATE TABLE IF NOT EXISTS log_members (
    group_id TEXT NOT NULL,
    member_id TEXT NOT NULL,
    topics TEXT NOT NULL,
    expires_at_ms BIGINT NOT NULL,
    PRIMARY KEY (group_id, member_id)
  )`,
  `CREATE TABLE IF NOT EXISTS log_leases (
    group_id TEXT NOT NULL,
    topic TEXT NOT NULL,
    partition INTEGER NOT NULL,
    member_id TEXT NOT NULL,
    PRIMARY KEY (group_id, topic, partition)
  )`,
];

/** Columns of `log_records` that make a `LogRecord`, in `RecordRow` shape. */
export const RECORD_COLUMNS = 'partition, record_offset, key, value, headers, timestamp_ms';

export interface RecordRow {
  partition: number;
  record_offset: unknown;
  key: string;
  value: string;
  headers: string;
  timestamp_ms: unknown;
}

export const rowToRecord = (topic: string, row: RecordRow): LogRecord => ({
  topic,
  partition: Number(row.partition),
  offset: toBigInt(row.record_offset),
  key: row.key,
  value: row.value,
  headers: JSON.parse(row.headers) as Record<string, string>,
  timestamp: new Date(Number(row.timestamp_ms)),
});

/** A BIGINT column as read by either driver (number from SQLite, string from pg). */
export const toBigInt = (value: unknown): bigint => BigInt(value as number | string | bigint);
