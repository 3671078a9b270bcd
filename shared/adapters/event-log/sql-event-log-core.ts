/**
 * The table-backed `EventLog` behind the SQLite and PostgreSQL adapters (`sql-event-log.ts`).
 * Publishes are group committed; each flush allocates offsets by bumping the partition's
 * `next_offset` row inside the write transaction, so offsets are gap-free and become visible in
 * order. Consumers poll (and are woken at once by a publish in this process); see
 * `sql-consumer.ts` for groups.
 */
import type {
  Consumer,
  ConsumeOptions,
  EventLog,
  LogRecord,
  OutgoingRecord,
  ReadTopicOptions,
  RecordPosition,
  TopicSpec,
} from '../../ports/event-log.ts';
import { EventLogUnavailableError, READ_MAX_BYTES, UnknownTopicError } from '../../ports/event-log.ts';
import { GroupCommit, type Outcome } from '../group-commit.ts';
import { partitionForKey } from './partitioner.ts';
import { SqlConsumer, type SqlConsumerHost, type SqlConsumerTiming } from './sql-consumer.ts';
import {
  RECORD_COLUMNS,
  rowToRecord,
  toBigInt,
  type RecordRow,
  type SqlDriver,
  type SqlExecutor,
} from './sql-driver.ts';
import { committedOffset } from './sql-group-membership.ts';

/** Tuning of the SQL event log; the defaults suit production, tests shorten the timeouts. */
export interface SqlEventLogOptions {
  /** A consumer without a heartbeat for this long loses its partitions to the others; default 3000. */
  sessionTimeoutMs?: number;
  /** How often consumers look for new records when not woken by a local publish; default 25. */
  pollIntervalMs?: number;
  /** How often consumers check who is in their group; default 250. */
  rebalanceIntervalMs?: number;
  /** How often consumers store their committable offsets; default 200. */
  commitIntervalMs?: number;
  /** Most records fetched from one partition per poll; default 500. */
  fetchLimit?: number;
  /** Publishes arriving within this window share a transaction; default 0 (the next turn). */
  publishWindowMs?: number;
  /**
   * Records older than this, and below the committed offset of every consumer group of their
   * partition, are deleted (docs/decisions/0014-erasure-crypto-shredding.md); default: kept forever.
   */
  retentionMs?: number;
  /** How often records past `retentionMs` are deleted; default 600000 (10 min). */
  pruneIntervalMs?: number;
}

/** The SQL event log, with the pruning of its old records. */
export interface SqlEventLog extends EventLog {
  /**
   * Deletes records older than `retentionMs` that every consumer group of their partition has
   * committed past (a partition no group consumes: age alone, as a Kafka retention), but none of a
   * topic `ensureTopics` was given with `keepRecords` (the dead-letter topic, which no group
   * consumes: its records wait for a redrive). Returns how many went. Nothing without a retention.
   */
  prune(now?: Date): Promise<number>;
}

interface PublishRequest {
  topic: string;
  records: OutgoingRecord[];
}

const INSERT_CHUNK = 200;
/** Partitions' runs of offsets one query of a read fetches (see `read`). */
const READ_RUNS_PER_QUERY = 100;
/** Records a prune removes per transaction (exported for its test). */
export const PRUNE_BATCH = 5000;

class SqlTableEventLog implements SqlEventLog, SqlConsumerHost {
  readonly timing: SqlConsumerTiming;
  private readonly partitionCounts = new Map<string, number>();
  /** Topics whose records retention never removes (`TopicSpec.keepRecords`, as `ensureTopics` was given them). */
  private readonly keptTopics = new Set<string>();
  private readonly consumers = new Set<SqlConsumer>();
  private readonly publisher: GroupCommit<PublishRequest, RecordPosition[]>;
  private closed = false;
  private readonly pruneTimer?: NodeJS.Timeout;
  private pruning?: Promise<number>;

  constructor(
    readonly driver: SqlDriver,
    private readonly options: SqlEventLogOptions,
  ) {
    this.timing = {
      sessionTimeoutMs: options.sessionTimeoutMs ?? 3000,
      pollIntervalMs: options.pollIntervalMs ?? 25,
      rebalanceIntervalMs: options.rebalanceIntervalMs ?? 250,
      commitIntervalMs: options.commitIntervalMs ?? 200,
      fetchLimit: options.fetchLimit ?? 500,
    };
    this.publisher = new GroupCommit((items) => this.flush(items), {
      windowMs: options.publishWindowMs ?? 0,
      name: 'sql-event-log',
    });
    if (options.retentionMs !== undefined) {
      // A failed pass (an outage) is simply tried again at the next one.
      this.pruneTimer = setInterval(() => void this.prune().catch(() => undefined), options.pruneIntervalMs ?? 600_000);
      this.pruneTimer.unref();
    }
  }

  /**
   * Removes the records older than the retention that every group has consumed, in batches of
   * `PRUNE_BATCH` rows, each its own transaction: a backlog of millions never makes one statement
   * that outlives the database's statement deadline (it would fail at every pass, and the log would
   * only grow) or holds the embedded database's writer for long.
   */
  async prune(now = new Date()): Promise<number> {
    this.assertOpen();
    if (this.options.retentionMs === undefined) return 0;
    if (this.pruning) return this.pruning;
    const cutoff = now.getTime() - this.options.retentionMs;
    const kept = [...this.keptTopics];
    const notKept = kept.length > 0 ? `AND r.topic NOT IN (${kept.map(() => '?').join(', ')})` : '';
    const batch = () =>
      this.driver.transaction(async (tx) => {
        const gone = await tx.query<{ n: unknown }>(
          `DELETE FROM log_records
            WHERE (topic, partition, record_offset) IN (
              SELECT r.topic, r.partition, r.record_offset FROM log_records r
               WHERE r.timestamp_ms < ? ${notKept}
                 AND NOT EXISTS (SELECT 1 FROM log_offsets o
                                  WHERE o.topic = r.topic AND o.partition = r.partition AND o.next_offset <= r.record_offset)
               LIMIT ${PRUNE_BATCH})
           RETURNING 1 AS n`,
          [cutoff, ...kept],
        );
        return gone.length;
      });
    const run = async () => {
      let pruned = 0;
      for (;;) {
        this.assertOpen();
        const gone = await batch();
        pruned += gone;
        if (gone < PRUNE_BATCH) return pruned;
      }
    };
    this.pruning = run().finally(() => (this.pruning = undefined));
    return this.pruning;
  }

  async ensureTopics(topics: TopicSpec[]): Promise<void> {
    this.assertOpen();
    for (const { name, partitions } of topics) {
      if (!name) throw new Error('topic name must not be empty');
      if (!Number.isInteger(partitions) || partitions < 1)
        throw new RangeError(`topic ${name}: partitions must be a positive integer`);
    }
    for (const { name, keepRecords } of topics) if (keepRecords) this.keptTopics.add(name);
    await this.driver.transaction(async (tx) => {
      for (const { name, partitions } of topics) {
        await tx.query('INSERT INTO log_topics (name, partitions) VALUES (?, ?) ON CONFLICT (name) DO NOTHING', [
          name,
          partitions,
        ]);
        const actual = (await this.lookupPartitions(tx, name))!;
        for (let partition = 0; partition < actual; partition++) {
          await tx.query(
            'INSERT INTO log_partitions (topic, partition, next_offset) VALUES (?, ?, 0) ON CONFLICT (topic, partition) DO NOTHING',
            [name, partition],
          );
        }
      }
    });
  }

  async publish(topic: string, records: OutgoingRecord[]): Promise<RecordPosition[]> {
    this.assertOpen();
    if (records.length === 0) {
      await this.partitionCount(topic);
      return [];
    }
    const positions = await this.publisher.submit({ topic, records });
    // A publish is acknowledged once durable (the 201 waits for it).
    if (this.driver.durable) await this.driver.durable();
    return positions;
  }

  async consume(options: ConsumeOptions): Promise<Consumer> {
    this.assertOpen();
    const consumer = await SqlConsumer.start(this, options);
    this.consumers.add(consumer);
    return consumer;
  }

  async read(topic: string, options: ReadTopicOptions = {}): Promise<LogRecord[]> {
    this.assertOpen();
    await this.partitionCount(topic);
    const byPartition = options.partition !== undefined;
    const where = `WHERE topic = ? AND record_offset >= ? ${byPartition ? 'AND partition = ?' : ''}`;
    const params = [topic, options.fromOffset ?? 0n, ...(byPartition ? [options.partition] : [])];
    // The records' sizes first, so that no more of them is fetched than the read may hold.
    const sizes = await this.driver.query<{ partition: unknown; record_offset: unknown; bytes: unknown }>(
      `SELECT partition, record_offset, octet_length(key) + octet_length(value) + octet_length(headers) AS bytes
         FROM log_records ${where} ORDER BY partition, record_offset LIMIT ?`,
      [...params, options.limit ?? 100],
    );
    const maxBytes = options.maxBytes ?? READ_MAX_BYTES;
    let count = 0;
    for (let bytes = 0; count < sizes.length; count++) {
      bytes += Number(sizes[count]!.bytes);
      if (count > 0 && bytes > maxBytes) break;
    }
    if (count === 0) return [];
    // Then exactly the records sized, by each partition's run of offsets: records published since
    // (or pruned) must not change which ones are fetched. By count alone, records appended meanwhile
    // to an earlier partition would take the places of sized ones, unmeasured (each as large as a call).
    const runs = new Map<number, { from: bigint; to: bigint }>();
    for (const row of sizes.slice(0, count)) {
      const partition = Number(row.partition);
      const offset = toBigInt(row.record_offset);
      const run = runs.get(partition);
      if (run) run.to = offset;
      else runs.set(partition, { from: offset, to: offset });
    }
    // In groups of runs: SQLite parses a chain of ORs one level deeper per term, and refuses one
    // of 1,000 (its expression depth); a topic may have that many partitions.
    const rows: RecordRow[] = [];
    const all = [...runs];
    for (let i = 0; i < all.length; i += READ_RUNS_PER_QUERY) {
      const group = all.slice(i, i + READ_RUNS_PER_QUERY);
      rows.push(
        ...(await this.driver.query<RecordRow>(
          `SELECT ${RECORD_COLUMNS} FROM log_records
            WHERE topic = ? AND (${group.map(() => '(partition = ? AND record_offset BETWEEN ? AND ?)').join(' OR ')})
            ORDER BY partition, record_offset`,
          [topic, ...group.flatMap(([partition, { from, to }]) => [partition, from, to])],
        )),
      );
    }
    return rows.map((row) => rowToRecord(topic, row));
  }

  async endOffsets(topic: string): Promise<{ partition: number; offset: bigint }[]> {
    this.assertOpen();
    const partitions = await this.partitionCount(topic);
    // From the partitions' offset rows, not the records: pruned records leave the end where it is.
    const rows = await this.driver.query<{ partition: unknown; next_offset: unknown }>(
      'SELECT partition, next_offset FROM log_partitions WHERE topic = ?',
      [topic],
    );
    const next = new Map(rows.map((row) => [Number(row.partition), toBigInt(row.next_offset)]));
    return Array.from({ length: partitions }, (_, partition) => ({ partition, offset: next.get(partition) ?? 0n }));
  }

  async committedOffset(groupId: string, topic: string, partition: number): Promise<bigint | undefined> {
    this.assertOpen();
    return committedOffset(this.driver, groupId, { topic, partition });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.pruneTimer);
    await this.pruning?.catch(() => undefined);
    await Promise.allSettled([...this.consumers].map((c) => c.stop()));
    await this.publisher.drain();
    await this.driver.close();
  }

  async partitionCount(topic: string): Promise<number> {
    const cached = this.partitionCounts.get(topic);
    if (cached !== undefined) return cached;
    const found = await this.lookupPartitions(this.driver, topic);
    if (found === undefined) throw new UnknownTopicError(topic);
    return found;
  }

  groupChanged(groupId: string, from: SqlConsumer): void {
    for (const consumer of this.consumers)
      if (consumer !== from && consumer.groupId === groupId) consumer.membershipChanged();
  }

  stopped(consumer: SqlConsumer): void {
    this.consumers.delete(consumer);
  }

  /** One transaction for every publish of the batch; an unknown topic fails only its publish. */
  private async flush(items: PublishRequest[]): Promise<Outcome<RecordPosition[]>[]> {
    const timestamp = Date.now();
    const outcomes = await this.driver.transaction(async (tx) => {
      const counts = new Map<string, number | undefined>();
      for (const { topic } of items) if (!counts.has(topic)) counts.set(topic, await this.lookupPartitions(tx, topic));

      const placed = items.map(({ topic, records }) => {
        const partitions = counts.get(topic);
        if (partitions === undefined) return new UnknownTopicError(topic);
        return records.map((record) => ({ topic, partition: partitionForKey(record.key, partitions), record }));
      });
      const nextOffsets = await this.allocate(
        tx,
        placed.flatMap((p) => (p instanceof Error ? [] : p)),
      );

      const rows: unknown[][] = [];
      const results = placed.map((p) => {
        if (p instanceof Error) return p;
        return p.map(({ topic, partition, record }): RecordPosition => {
          const key = `${topic}\u0000${partition}`;
          const offset = nextOffsets.get(key)!;
          nextOffsets.set(key, offset + 1n);
          rows.push([
            topic,
            partition,
            offset,
            record.key,
            record.value,
            JSON.stringify(record.headers ?? {}),
            timestamp,
          ]);
          return { topic, partition, offset };
        });
      });
      for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
        const chunk = rows.slice(i, i + INSERT_CHUNK);
        await tx.query(
          `INSERT INTO log_records (topic, partition, record_offset, key, value, headers, timestamp_ms) VALUES ${chunk.map(() => '(?, ?, ?, ?, ?, ?, ?)').join(', ')}`,
          chunk.flat(),
        );
      }
      return results;
    });
    const topics = new Set(items.map((i) => i.topic));
    for (const consumer of this.consumers) for (const topic of topics) consumer.recordsArrived(topic);
    return outcomes;
  }

  /**
   * Reserves offsets for the placed records by bumping each partition's `next_offset` row, in
   * (topic, partition) order so concurrent writers cannot deadlock. Returns the first new offset
   * per partition. The row stays locked until commit: writers of a partition commit in order.
   */
  private async allocate(
    tx: SqlExecutor,
    placed: Array<{ topic: string; partition: number }>,
  ): Promise<Map<string, bigint>> {
    const counts = new Map<string, { topic: string; partition: number; count: number }>();
    for (const { topic, partition } of placed) {
      const key = `${topic}\u0000${partition}`;
      const entry = counts.get(key) ?? { topic, partition, count: 0 };
      entry.count++;
      counts.set(key, entry);
    }
    const ordered = [...counts.entries()].sort(([, a], [, b]) =>
      a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition,
    );
    const first = new Map<string, bigint>();
    for (const [key, { topic, partition, count }] of ordered) {
      const [row] = await tx.query<{ next_offset: unknown }>(
        'UPDATE log_partitions SET next_offset = next_offset + ? WHERE topic = ? AND partition = ? RETURNING next_offset',
        [count, topic, partition],
      );
      if (!row) throw new Error(`partition ${partition} of topic ${topic} has no offset row`);
      first.set(key, toBigInt(row.next_offset) - BigInt(count));
    }
    return first;
  }

  private async lookupPartitions(executor: SqlExecutor, topic: string): Promise<number | undefined> {
    const cached = this.partitionCounts.get(topic);
    if (cached !== undefined) return cached;
    const [row] = await executor.query<{ partitions: number }>('SELECT partitions FROM log_topics WHERE name = ?', [
      topic,
    ]);
    if (row === undefined) return undefined;
    this.partitionCounts.set(topic, Number(row.partitions));
    return Number(row.partitions);
  }

  private assertOpen(): void {
    if (this.closed) throw new EventLogUnavailableError('the event log is closed');
  }
}

/** An `EventLog` over a SQL driver whose database already has `EVENT_LOG_SCHEMA`. */
export const createSqlEventLog = (driver: SqlDriver, options: SqlEventLogOptions = {}): SqlEventLog =>
  new SqlTableEventLog(driver, options);
