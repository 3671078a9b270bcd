/**
 * Event log port, shaped like Kafka: topics split into partitions, records with a key, a value and
 * headers, the partition chosen from the key (same key → same partition → order kept), and
 * consumer groups that commit offsets.
 */
import { unavailableError } from './unavailable.ts';

export interface TopicSpec {
  name: string;
  /** Number of partitions; fixed once the topic exists. */
  partitions: number;
  /**
   * Its records are never removed by the log's retention: they wait for an operator (the
   * dead-letter topic's records are calls answered 201, kept until redriven). On Kafka, set as
   * `retention.ms=-1` on a topic `ensureTopics` creates.
   */
  keepRecords?: boolean;
}

/** A record to publish. */
export interface OutgoingRecord {
  /** Chooses the partition (murmur2, as Kafka's default partitioner) and so the order. */
  key: string;
  /** UTF-8 text, usually JSON. */
  value: string;
  headers?: Record<string, string>;
}

/** Where a published record landed. */
export interface RecordPosition {
  topic: string;
  partition: number;
  offset: bigint;
}

/** A record as read from the log. */
export interface LogRecord extends RecordPosition {
  key: string;
  value: string;
  headers: Record<string, string>;
  /** When the log accepted it. */
  timestamp: Date;
}

export interface PartitionRef {
  topic: string;
  partition: number;
}

export interface ConsumeOptions {
  /** Consumer group: members of one group split the partitions and share committed offsets. */
  groupId: string;
  topics: string[];
  /** Where a group with no committed offset starts: `'earliest'` (default) or `'latest'`. */
  fromBeginning?: boolean;
  /**
   * Handles one record. Records with the same key run one at a time in log order; records with
   * different keys run concurrently. An offset is committed only once it and every record before
   * it in its partition are done. A thrown error stops the consumer (nothing after the failed
   * record is committed, so it is redelivered); `Consumer.done` rejects with it. `signal` is aborted
   * when the member gives the record's partition up before the record is done (Kafka: a partition
   * held by an unfinished record, then revoked): a handler retrying in place should stop and throw,
   * which stops nothing; the record is not committed and goes to the partition's next owner.
   */
  handler: (record: LogRecord, signal: AbortSignal) => Promise<void>;
  /** Most records in flight at once across keys; default 64. */
  concurrency?: number;
  /** Called when this member receives partitions. */
  onAssigned?: (partitions: PartitionRef[]) => void | Promise<void>;
  /** Called before this member gives partitions up; in-flight records are finished first. */
  onRevoked?: (partitions: PartitionRef[]) => void | Promise<void>;
  /**
   * Where the member says what happens to it: warn once when the log becomes unreachable and it
   * starts retrying, info once when it recovers, error when it stops on a fault. Default: silent.
   */
  log?: ConsumerLog;
}

/** The few logger methods a consumer uses (a pino logger fits). */
export interface ConsumerLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

/**
 * What a member is doing, for readiness: `running` (polling its partitions), `retrying` (the log
 * or a handler's backend is unreachable since `since`; it keeps its partitions and tries again),
 * `stopped` (by `stop()`), `failed` (ended on an error it could not retry).
 */
export interface ConsumerStatus {
  state: 'running' | 'retrying' | 'stopped' | 'failed';
  /** When the current state began. */
  since: Date;
  /** The error behind `retrying` or `failed`. */
  error?: string;
  /** Partitions owned now. */
  partitions: number;
}

export interface Consumer {
  /** Finishes in-flight records, commits, leaves the group; resolves when stopped. */
  stop(): Promise<void>;
  /** Settles when the consumer stops: resolves on `stop()`, rejects on a handler error. */
  readonly done: Promise<void>;
  /** Partitions this member currently owns. */
  assignment(): PartitionRef[];
  /** The member's state, for readiness. */
  status(): ConsumerStatus;
}

export interface ReadTopicOptions {
  /** Only this partition; default all. */
  partition?: number;
  /** First offset to read (inclusive), per partition; default 0. */
  fromOffset?: bigint;
  /** Most records; default 100. */
  limit?: number;
  /**
   * Returns no more records than fit in this many bytes (UTF-8) of keys, values and headers, but
   * always at least one. Default READ_MAX_BYTES. A record may be as large as
   * the largest call, so a count alone does not bound what a read holds in memory. Each
   * partition's records are still a run from the first offset read: page on from its last.
   */
  maxBytes?: number;
}

/** What one read of a topic holds at most by default: 16 MiB (ReadTopicOptions.maxBytes). */
export const READ_MAX_BYTES = 16 * 1024 * 1024;

export interface EventLog {
  /** Creates missing topics with the given partition count; existing topics are left as they are. */
  ensureTopics(topics: TopicSpec[]): Promise<void>;

  /**
   * Appends records to a topic. Resolves only once every record is durable (Kafka: acks=all with
   * an idempotent producer; SQL: a committed transaction). Concurrent publishes are batched.
   * @throws EventLogUnavailableError when the log cannot take the records.
   */
  publish(topic: string, records: OutgoingRecord[]): Promise<RecordPosition[]>;

  /**
   * How many partitions a topic has: what the log partitions its records by, which may differ from
   * the count `ensureTopics` was given if the topic already existed.
   * @throws UnknownTopicError for a topic that does not exist.
   */
  partitionCount(topic: string): Promise<number>;

  /** Starts a member of a consumer group. */
  consume(options: ConsumeOptions): Promise<Consumer>;

  /** Reads records without a consumer group (inspection, tests). */
  read(topic: string, options?: ReadTopicOptions): Promise<LogRecord[]>;

  /**
   * The next offset each partition of a topic will be written at (Kafka's high watermark), for
   * every partition; with `committedOffset` it gives a group's lag.
   * @throws UnknownTopicError for a topic that does not exist.
   */
  endOffsets(topic: string): Promise<{ partition: number; offset: bigint }[]>;

  /** Committed offset of a group for one partition (the next offset it will read), if any. */
  committedOffset(groupId: string, topic: string, partition: number): Promise<bigint | undefined>;

  /** Stops consumers and closes connections. */
  close(): Promise<void>;
}

/**
 * The log cannot take or give records right now; worth retrying later. `outcomeUnknown` marks a
 * publish that may have been written all the same (it timed out after the records were sent).
 */
export class EventLogUnavailableError extends unavailableError('EVENT_LOG_UNAVAILABLE') {}

/** A topic that does not exist was named. */
export class UnknownTopicError extends Error {
  readonly code = 'UNKNOWN_TOPIC';
  readonly retriable = false;
  constructor(readonly topic: string) {
    super(`unknown topic ${topic}`);
    this.name = 'UnknownTopicError';
  }
}

/**
 * The log refuses these records for what they are (Kafka: a record larger than the topic's
 * `max.message.bytes`, or one the broker's validation rejects) and will refuse them the same way at
 * every try; nothing of them is written. Only this error says so: the log's other refusals (not
 * authorized, a server error) are about the log, not the records, may pass, and a caller that left
 * records out for them would lose them. The SQL logs never raise it: they take any record.
 */
export class RecordRefusedError extends Error {
  readonly code = 'RECORD_REFUSED';
  readonly retriable = false;
  /** The records are at fault, not the log (docs/decisions/0025-what-blames-the-data.md). */
  readonly dataAtFault = true;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'RecordRefusedError';
  }
}
