/**
 * Event store port: streams of events with optimistic concurrency, and one global feed.
 *
 * Shaped to fit PostgreSQL, SQLite and KurrentDB alike: a stream revision is the 0-based index of
 * an event in its stream (KurrentDB's "stream revision"); a global position is a strictly
 * increasing number across all streams (KurrentDB's `$all` commit position). A stream's category is
 * the part of its id before the first '-' (`call-…`, `team-…`, `idempotency-…`), as KurrentDB's
 * `$ce-<category>` streams have it; readers that need one or a few categories read and subscribe
 * with `categories`, which every adapter serves from an index (a column on SQLite and PostgreSQL, a
 * server-side stream-prefix filter on KurrentDB), so a subscriber never reads what it ignores.
 */
import { unavailableError } from './unavailable.ts';

/** JSON-serialisable value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * What the stream must look like for an append to succeed.
 * - `'no_stream'`: the stream has no events yet.
 * - `'any'`: no check.
 * - `'stream_exists'`: the stream has at least one event.
 * - a number: the revision of the stream's last event (0 after one event).
 */
export type ExpectedVersion = 'no_stream' | 'any' | 'stream_exists' | number;

/** An event to append. */
export interface NewEvent {
  /** Event type, e.g. `CallSubmitted`. */
  type: string;
  /** The payload; stored as JSON. */
  data: Json;
  /** Correlation, causation, trace ids and the like; stored as JSON. */
  metadata?: Record<string, Json>;
  /**
   * Event id (UUID). Give a deterministic one to let downstream consumers deduplicate; a random
   * one is generated when absent.
   */
  id?: string;
}

/** An event as stored. */
export interface RecordedEvent {
  id: string;
  streamId: string;
  /** 0-based index of the event in its stream. */
  revision: number;
  /** Position in the global feed; strictly increasing in commit order. */
  position: bigint;
  type: string;
  data: Json;
  metadata: Record<string, Json>;
  recordedAt: Date;
}

export interface AppendResult {
  /** Revision of the last event now in the stream: pass it as the next expected version. */
  nextExpectedVersion: number;
  /** Global position of the last appended event. */
  position: bigint;
}

export interface AppendOptions {
  /** What the stream must look like; default `'any'`. */
  expectedVersion?: ExpectedVersion;
  /**
   * Resolve once committed rather than once durable, because the caller's next write to the same
   * database waits for durability and covers this one (the embedded SQLite database, whose commits
   * reach the disk in order: docs/decisions/0015-embedded-durability-off-the-event-loop.md). A
   * store whose commit is durable ignores it.
   */
  deferDurability?: boolean;
}

export interface ReadStreamOptions {
  /** First revision to read (inclusive); default 0. */
  fromRevision?: number;
  /** Stop after this many events; default all. */
  maxCount?: number;
}

export interface ReadAllOptions {
  /** Read events strictly after this position; default from the start (0n). */
  after?: bigint;
  /**
   * Stop after this many events; default 1000. A read also stops before the event that would take
   * it past about 4 MB of event data (FEED_READ_MAX_BYTES; at least one event is read): a call's
   * events may each hold a whole transcript. Fewer than `maxCount` events is therefore not the
   * end of the feed; an empty read is.
   */
  maxCount?: number;
  /**
   * Only events of streams in these categories (see `categoryOf`), in global order with their
   * global positions; default every stream. Each is a non-empty name without '-' or a leading '$'.
   */
  categories?: readonly string[];
}

export interface SubscribeToAllOptions {
  /**
   * Names a durable checkpoint kept by the store: the subscription starts after it and the store
   * advances it after each batch the handler finished. Omit it to manage the checkpoint yourself
   * (for example in the same transaction as a projection's rows) and pass `after`.
   */
  checkpointId?: string;
  /** Start strictly after this position (ignored when a stored checkpoint exists). Default 0n. */
  after?: bigint;
  /** Largest batch handed to the handler; default 500. */
  batchSize?: number;
  /**
   * Only events of streams in these categories (see `ReadAllOptions.categories`); default every
   * stream. Events of other categories are never read. The subscription's position (and its
   * stored checkpoint) still moves up to the head of the whole feed when a read finds nothing more
   * of its categories (within one poll of catching up), so a filtered subscriber's lag is measured
   * against the same head as any other.
   */
  categories?: readonly string[];
  /**
   * With `categories`: awaited when the subscription, finding nothing more of its categories, moves
   * past events of other categories up to `position` (the head of the whole feed), before its
   * position moves there. A
   * subscriber that keeps its own checkpoint (a projection, in the transaction of its rows) stores
   * it here, so its lag too reads 0. Errors are handled as the handler's are.
   */
  onPassed?: (position: bigint) => Promise<void>;
  /**
   * Positions of events the handler leaves out (an operator skipped them): the handler is still
   * handed them, but a store that decodes events (the sealed store opens personal fields) does
   * not, so an event skipped because it cannot be decoded no longer stops the subscription.
   */
  skipped?: ReadonlySet<bigint>;
  /**
   * Receives events in global order, each exactly once per subscription, never skipping one that
   * committed late. A `BackendUnavailableError` (an outage) hands the same batch again after a
   * backoff; any other thrown error stops the subscription and `Subscription.done` rejects with it.
   */
  handler: (events: RecordedEvent[]) => Promise<void>;
}

export interface Subscription {
  /** Stops after the batch in hand; resolves when stopped. */
  stop(): Promise<void>;
  /** Settles when the subscription stops: resolves on `stop()`, rejects on a handler error. */
  readonly done: Promise<void>;
  /**
   * Position of the last event handed to the handler and finished; with `categories`, possibly the
   * later feed head the subscription moved to (nothing of its categories lies before it unhandled).
   */
  readonly position: bigint;
  /** Resolves once the subscription has handled every event that existed when it was called. */
  caughtUp(): Promise<void>;
  /** What it is doing, for readiness. */
  status(): SubscriptionStatus;
}

/**
 * `starting`: not following the feed yet (still reading where to begin, since `since`); `live`:
 * following the feed; `retrying`: a backend (the store, or the handler's) is unavailable since
 * `since` and the subscription tries again by itself; `stopped` by `stop()`; `failed` on an error it
 * cannot retry (`error` says which).
 */
export interface SubscriptionStatus {
  state: 'starting' | 'live' | 'retrying' | 'stopped' | 'failed';
  since: Date;
  error?: string;
  /**
   * When the last read that reached the end of the feed started: everything appended before this
   * instant has been handled. Refreshed at every poll while the store answers; its age is the
   * subscription's lag.
   */
  caughtUpAt?: Date;
}

export interface EventStore {
  /**
   * Appends events atomically to one stream. Concurrent appends are group-committed (they share
   * one transaction and one fsync) without weakening each append's own expected-version check.
   * @throws ExpectedVersionConflictError when the stream is not at `expectedVersion` (default `'any'`).
   */
  append(streamId: string, events: NewEvent[], options?: AppendOptions): Promise<AppendResult>;

  /** Reads a stream forward; an unknown stream reads as empty. */
  readStream(streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]>;

  /** Reads the global feed forward from a position; only committed events, without gaps. */
  readAll(options?: ReadAllOptions): Promise<RecordedEvent[]>;

  /** Catch-up subscription to the global feed, then live. */
  subscribeToAll(options: SubscribeToAllOptions): Subscription;

  /** Position of the last committed event of the global feed; 0n when the store is empty. */
  headPosition(): Promise<bigint>;

  /** Last stored value of a durable checkpoint, or undefined. */
  readCheckpoint(checkpointId: string): Promise<bigint | undefined>;

  /** Stores a durable checkpoint. */
  storeCheckpoint(checkpointId: string, position: bigint): Promise<void>;

  /**
   * Last stored snapshot of a state folded from the feed: the position it covers and its data. A
   * follower starts from it and reads only the events after it, so its start does not grow with
   * the history.
   */
  readSnapshot(name: string): Promise<Snapshot | undefined>;

  /** Stores a snapshot unless a newer one (a higher position) is already stored. */
  storeSnapshot(name: string, snapshot: Snapshot): Promise<void>;

  /** Stops subscriptions and releases the connection or file. */
  close(): Promise<void>;
}

/** A folded state and the feed position it includes every event up to. */
export interface Snapshot {
  position: bigint;
  data: Json;
}

/** The one error every adapter raises when an expected version does not hold. */
export class ExpectedVersionConflictError extends Error {
  readonly code = 'EXPECTED_VERSION_CONFLICT';
  readonly retriable = true;
  constructor(
    readonly streamId: string,
    readonly expected: ExpectedVersion,
    /** Revision of the stream's last event, or -1 when the stream does not exist. */
    readonly actual: number,
  ) {
    super(`stream ${streamId}: expected version ${String(expected)}, actual ${actual === -1 ? 'no stream' : actual}`);
    this.name = 'ExpectedVersionConflictError';
  }
}

/** The store cannot be reached or refused the operation for a reason worth retrying. */
export class EventStoreUnavailableError extends unavailableError('EVENT_STORE_UNAVAILABLE') {}

/**
 * The category of a stream: the part of its id before the first '-' (`call-0b6f…` → `call`), as
 * KurrentDB's `$by_category` system projection and its `$ce-<category>` streams define it.
 * Undefined for an id without '-', which belongs to no category (only the whole feed has it).
 */
export const categoryOf = (streamId: string): string | undefined => {
  const dash = streamId.indexOf('-');
  return dash > 0 ? streamId.slice(0, dash) : undefined;
};

/**
 * Checks a `categories` option: undefined (every stream) or a non-empty list of names without '-'
 * and not starting with '$' (system streams are never part of the feed). Returns it, deduplicated.
 * @throws TypeError for an empty list or a malformed name.
 */
export const checkCategories = (categories: readonly string[] | undefined): readonly string[] | undefined => {
  if (categories === undefined) return undefined;
  if (categories.length === 0)
    throw new TypeError('categories: give at least one category, or leave it out for every stream');
  for (const category of categories) {
    if (typeof category !== 'string' || category === '' || category.includes('-') || category.startsWith('$')) {
      throw new TypeError(
        `categories: ${JSON.stringify(category)} is not a category (a non-empty name without '-' that does not start with '$')`,
      );
    }
  }
  return [...new Set(categories)];
};

/** Whether `actual` (revision of the last event, -1 for no stream) satisfies `expected`. */
export const expectedVersionHolds = (expected: ExpectedVersion, actual: number): boolean => {
  switch (expected) {
    case 'any':
      return true;
    case 'no_stream':
      return actual === -1;
    case 'stream_exists':
      return actual >= 0;
    default:
      return actual === expected;
  }
};
