import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import {
  ANY,
  type AllStreamSubscription,
  type AppendStreamState,
  BACKWARDS,
  DeadlineExceededError,
  END,
  FORWARDS,
  jsonEvent,
  type JSONType,
  KurrentDBClient,
  NO_STREAM,
  NotLeaderError,
  type Position,
  type ReadPosition,
  type ResolvedEvent,
  START,
  STREAM_EXISTS,
  StreamNotFoundError,
  streamNameFilter,
  UnavailableError,
  WrongExpectedVersionError,
} from '@kurrent/kurrentdb-client';
import {
  checkCategories,
  type EventStore,
  EventStoreUnavailableError,
  type ExpectedVersion,
  ExpectedVersionConflictError,
  type Json,
  type ReadAllOptions,
  type RecordedEvent,
  type Snapshot,
} from '../../ports/event-store.ts';
import { timeAppend } from '../../observability/metrics.ts';
import { FEED_READ_MAX_BYTES, type FeedRead, subscriptionsOver } from './polling-subscription.ts';
import type { EventStoreLog } from './postgres-event-store.ts';

export interface KurrentDbEventStoreOptions {
  /** `kurrentdb://host:2113?tls=false` (any KurrentDB connection string). */
  connectionString: string;
  /** Subscriptions re-read the feed at least this often; the live `$all` subscription wakes them sooner. Default 1000 ms. */
  pollMs?: number;
  /**
   * Test hook: awaited before each append is sent. KurrentDB commits an append on the server in
   * one step, so this is the nearest a client can come to holding a write open.
   */
  beforeCommit?: () => Promise<void>;
  /** Where the live subscription says it was lost (warn, once per outage) and is back (info). Default: silent. */
  log?: EventStoreLog;
}

/**
 * The port's feed: every stream but KurrentDB's own system streams (`$…`: `$ce-…`, `$et-…`, stream
 * metadata `$$…`, and the checkpoint and snapshot streams below). A server-side filter.
 */
const USER_STREAMS = '^[^$]';
const CHECKPOINT_PREFIX = '$checkpoint-';
const SNAPSHOT_PREFIX = '$snapshot-';
const CHECKPOINT_STORED = 'CheckpointStored';
const SNAPSHOT_STORED = 'SnapshotStored';

/** `$all` filtered on the server: the whole feed, or only streams `<category>-…`. */
const feedFilter = (categories: readonly string[] | undefined) =>
  categories
    ? streamNameFilter({ prefixes: categories.map((category) => `${category}-`) })
    : streamNameFilter({ regex: USER_STREAMS });

const GRPC_DEADLINE_EXCEEDED = 4;
const GRPC_UNAVAILABLE = 14;

/**
 * The one place KurrentDB client errors become the port's: a wrong expected version (with the
 * append it answered) becomes ExpectedVersionConflictError; a server that cannot be reached, is
 * not the leader or did not answer in time (the client's UnavailableError, DeadlineExceededError
 * and NotLeaderError, or a raw gRPC status 14 UNAVAILABLE / 4 DEADLINE_EXCEEDED, which the client
 * passes through from its connection set-up) becomes EventStoreUnavailableError. Anything else is
 * returned as it is.
 */
export const translateKurrentDbError = (
  error: unknown,
  append?: { streamId: string; expected: ExpectedVersion },
): unknown => {
  if (error instanceof WrongExpectedVersionError && append) {
    const actual = error.actualState;
    return new ExpectedVersionConflictError(
      append.streamId,
      append.expected,
      typeof actual === 'bigint' ? Number(actual) : -1,
    );
  }
  const code = (error as { code?: unknown } | null)?.code;
  if (
    error instanceof UnavailableError ||
    error instanceof DeadlineExceededError ||
    error instanceof NotLeaderError ||
    code === GRPC_UNAVAILABLE ||
    code === GRPC_DEADLINE_EXCEEDED
  ) {
    return new EventStoreUnavailableError(`KurrentDB event store unavailable: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return error;
};

const streamState = (expected: ExpectedVersion): AppendStreamState => {
  switch (expected) {
    case 'any':
      return ANY;
    case 'no_stream':
      return NO_STREAM;
    case 'stream_exists':
      return STREAM_EXISTS;
    default:
      return BigInt(expected);
  }
};

/**
 * A port position is the event's `$all` commit position. Every event appended over gRPC commits
 * itself (KurrentDB has had no explicit transactions since the TCP API went), so its commit and
 * prepare positions are equal and strictly increase along `$all`; `{ commit: p, prepare: p }` reads
 * from that event, inclusive.
 */
const readFrom = (after: bigint): ReadPosition => (after <= 0n ? START : { commit: after, prepare: after });
const positionOf = (position: Position | undefined): bigint => position?.commit ?? 0n;

const isObject = (value: unknown): value is Record<string, Json> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const toRecorded = (resolved: ResolvedEvent): RecordedEvent | undefined => {
  const event = resolved.event;
  if (!event) return undefined;
  // The adapter writes JSON only; the client parses it. A binary event (written by another tool) is handed as its bytes' text.
  const data = event.isJson ? (event.data as Json) : Buffer.from(event.data).toString('utf8');
  return {
    id: event.id,
    streamId: event.streamId,
    revision: Number(event.revision),
    position: positionOf(event.position),
    type: event.type,
    data,
    metadata: isObject(event.metadata) ? event.metadata : {},
    recordedAt: event.created,
  };
};

/**
 * Wakes the store's subscriptions when anything is appended, from any process: one live catch-up
 * subscription to `$all` (from its end, filtered to the feed on the server) per store, started with
 * the first subscription. Lost, it is started again with backoff while the subscriptions poll.
 */
class LiveWakeUps {
  private readonly appended = new EventEmitter().setMaxListeners(0);
  private subscription: AllStreamSubscription | undefined;
  private retry: NodeJS.Timeout | undefined;
  private lostSince: number | undefined;
  private attempt = 0;
  private stopped = false;

  constructor(
    private readonly client: KurrentDBClient,
    private readonly log: EventStoreLog | undefined,
  ) {}

  on(listener: () => void): () => void {
    this.appended.on('appended', listener);
    if (!this.subscription && !this.retry && !this.stopped) this.start();
    return () => this.appended.off('appended', listener);
  }

  wake(): void {
    this.appended.emit('appended');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    const subscription = this.subscription;
    this.subscription = undefined;
    await subscription?.unsubscribe().catch(() => undefined);
  }

  private start(): void {
    // Its own checkpoints are of no use (it only wakes): ask the server for them rarely.
    const subscription = this.client.subscribeToAll({
      fromPosition: END,
      filter: streamNameFilter({ regex: USER_STREAMS, checkpointInterval: 1000 }),
    });
    this.subscription = subscription;
    subscription.on('confirmation', () => {
      this.attempt = 0;
      if (this.lostSince !== undefined) {
        this.log?.info({ downMs: Date.now() - this.lostSince }, 'KurrentDB event store: live subscription restored');
        this.lostSince = undefined;
      }
      this.wake(); // for what was appended while nobody listened
    });
    subscription.on('data', () => this.wake());
    const lost = (error?: unknown) => {
      if (this.stopped || this.subscription !== subscription) return;
      this.subscription = undefined;
      void subscription.unsubscribe().catch(() => undefined);
      const retryInMs = Math.min(5000, 100 * 2 ** Math.min(this.attempt++, 6));
      if (this.lostSince === undefined) {
        this.lostSince = Date.now();
        this.log?.warn(
          { err: error, retryInMs },
          'KurrentDB event store: live subscription lost; subscriptions poll until it is back',
        );
      }
      this.retry = setTimeout(() => {
        this.retry = undefined;
        if (!this.stopped && this.appended.listenerCount('appended') > 0) this.start();
      }, retryInMs);
      this.retry.unref();
      this.wake();
    };
    subscription.on('error', lost);
    subscription.on('end', () => lost());
  }
}

/**
 * Event store on KurrentDB. Streams are KurrentDB streams, a revision is the stream revision, the
 * expected version is the append's stream state; the global feed is `$all` without system streams,
 * read with a server-side filter (a stream-name prefix per category for `categories`). Durable
 * checkpoints and snapshots are events of the system streams `$checkpoint-<id>` and
 * `$snapshot-<name>`, each kept to its last event by `maxCount` stream metadata, so they never
 * appear in the feed. Subscriptions read the filtered `$all` in batches after their position and
 * are woken by a live `$all` subscription (see LiveWakeUps), which gives them the same batching,
 * retry and checkpoint behaviour as on the other stores.
 */
export const createKurrentDbEventStore = (options: KurrentDbEventStoreOptions): EventStore => {
  const client = KurrentDBClient.connectionString(options.connectionString);
  const wakeUps = new LiveWakeUps(client, options.log);
  /** Streams whose `maxCount` metadata this process has set. */
  const capped = new Set<string>();

  const run = async <T>(work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      throw translateKurrentDbError(error);
    }
  };

  /** Every event a stream read yields; a stream that does not exist reads as empty. */
  const readStream = async (read: () => AsyncIterableIterator<ResolvedEvent>): Promise<RecordedEvent[]> =>
    run(async () => {
      const events: RecordedEvent[] = [];
      try {
        for await (const resolved of read()) {
          const event = toRecorded(resolved);
          if (event) events.push(event);
        }
      } catch (error) {
        if (error instanceof StreamNotFoundError) return [];
        throw error;
      }
      return events;
    });

  /** The last event of a checkpoint or snapshot stream. */
  const readLast = async (streamId: string): Promise<RecordedEvent | undefined> =>
    (await readStream(() => client.readStream(streamId, { direction: BACKWARDS, fromRevision: END, maxCount: 1 })))[0];

  /** The event at one revision of a stream. */
  const readAt = async (streamId: string, revision: bigint): Promise<RecordedEvent | undefined> =>
    (
      await readStream(() => client.readStream(streamId, { direction: FORWARDS, fromRevision: revision, maxCount: 1 }))
    )[0];

  /** Keeps only the last event of a checkpoint or snapshot stream (once per stream and process). */
  const keepLastOnly = async (streamId: string): Promise<void> => {
    if (capped.has(streamId)) return;
    await run(() => client.setStreamMetadata(streamId, { maxCount: 1 }));
    capped.add(streamId);
  };

  const append = async (
    streamId: string,
    events: { id?: string; type: string; data: Json; metadata?: Record<string, Json> }[],
    expected: ExpectedVersion,
  ) => {
    try {
      return await client.appendToStream(
        streamId,
        // JSON events; a payload is any JSON value, which the client serialises as it is.
        events.map((event) =>
          jsonEvent({
            id: event.id ?? randomUUID(),
            type: event.type,
            data: event.data as JSONType,
            metadata: event.metadata ?? {},
          }),
        ),
        { streamState: streamState(expected) },
      );
    } catch (error) {
      throw translateKurrentDbError(error, { streamId, expected });
    }
  };

  /**
   * Up to `maxCount` events after `after`, of at most FEED_READ_MAX_BYTES (their data and metadata
   * as JSON; at least one event): the server streams the read, and it is ended there.
   */
  const readFeed = ({ after = 0n, maxCount = 1000, categories }: ReadAllOptions): Promise<FeedRead> => {
    const filter = feedFilter(checkCategories(categories));
    return run(async () => {
      const events: RecordedEvent[] = [];
      let bytes = 0;
      // Reading from a position includes the event there: one more, and it is left out.
      for await (const resolved of client.readAll({
        direction: FORWARDS,
        fromPosition: readFrom(after),
        maxCount: maxCount + 1,
        filter,
      })) {
        const event = toRecorded(resolved);
        if (!event || event.position <= after) continue;
        const size = JSON.stringify(event.data).length + JSON.stringify(event.metadata).length;
        if (events.length > 0 && bytes + size > FEED_READ_MAX_BYTES) return { events, more: true };
        events.push(event);
        bytes += size;
        if (events.length === maxCount) break;
      }
      return { events, more: false };
    });
  };

  const store: EventStore = {
    append(streamId, events, appendOptions = {}) {
      if (events.length === 0) return Promise.reject(new TypeError('append needs at least one event'));
      const expected = appendOptions.expectedVersion ?? 'any';
      return timeAppend(
        'kurrentdb',
        (async () => {
          await options.beforeCommit?.();
          const result = await append(streamId, events, expected);
          wakeUps.wake();
          // The result's position is the last appended event's (the client's own tests read it back
          // equal); a server that gives none is asked for that event by its revision.
          const position = result.position
            ? positionOf(result.position)
            : ((await readAt(streamId, result.nextExpectedRevision))?.position ?? 0n);
          return { nextExpectedVersion: Number(result.nextExpectedRevision), position };
        })(),
      );
    },

    readStream(streamId, { fromRevision = 0, maxCount = Number.MAX_SAFE_INTEGER } = {}) {
      return readStream(() =>
        client.readStream(streamId, { direction: FORWARDS, fromRevision: BigInt(fromRevision), maxCount }),
      );
    },

    async readAll(readOptions = {}) {
      return (await readFeed(readOptions)).events;
    },

    subscribeToAll: (subscribeOptions) => subscriptions.subscribe(subscribeOptions),

    async headPosition() {
      return run(async () => {
        for await (const resolved of client.readAll({
          direction: BACKWARDS,
          fromPosition: END,
          maxCount: 1,
          filter: feedFilter(undefined),
        })) {
          const event = toRecorded(resolved);
          if (event) return event.position;
        }
        return 0n;
      });
    },

    async readCheckpoint(checkpointId) {
      const last = await readLast(`${CHECKPOINT_PREFIX}${checkpointId}`);
      const position = isObject(last?.data) ? last.data.position : undefined;
      return typeof position === 'string' ? BigInt(position) : undefined;
    },

    async storeCheckpoint(checkpointId, position) {
      const streamId = `${CHECKPOINT_PREFIX}${checkpointId}`;
      await append(streamId, [{ type: CHECKPOINT_STORED, data: { position: position.toString() } }], 'any');
      await keepLastOnly(streamId);
    },

    async readSnapshot(name) {
      return decodeSnapshot(await readLast(`${SNAPSHOT_PREFIX}${name}`));
    },

    async storeSnapshot(name, snapshot) {
      const streamId = `${SNAPSHOT_PREFIX}${name}`;
      // Compare and append at the revision read: a newer snapshot stored meanwhile is never replaced.
      for (;;) {
        const last = await readLast(streamId);
        const stored = decodeSnapshot(last);
        if (stored && stored.position >= snapshot.position) return;
        try {
          await append(
            streamId,
            [{ type: SNAPSHOT_STORED, data: { position: snapshot.position.toString(), data: snapshot.data } }],
            last ? last.revision : 'no_stream',
          );
        } catch (error) {
          if (error instanceof ExpectedVersionConflictError) continue;
          throw error;
        }
        await keepLastOnly(streamId);
        return;
      }
    },

    async close() {
      await subscriptions.stopAll();
      await wakeUps.stop();
      await client.dispose();
    },
  };
  const subscriptions = subscriptionsOver({ ...store, readFeed }, (wake) => wakeUps.on(wake), options.pollMs ?? 1000);
  return store;
};

/**
 * Opens the store and asks the server for the feed's head once, so a service pointed at a server
 * that does not answer stops at start with an EventStoreUnavailableError (as on PostgreSQL) instead
 * of waiting for it; the client connects lazily otherwise.
 */
export const openKurrentDbEventStore = async (options: KurrentDbEventStoreOptions): Promise<EventStore> => {
  const store = createKurrentDbEventStore(options);
  try {
    await store.headPosition();
    return store;
  } catch (error) {
    await store.close().catch(() => undefined);
    if (!(error instanceof EventStoreUnavailableError)) throw error;
    const where = options.connectionString.replace(/\/\/[^@/]*@/, '//***@');
    throw new EventStoreUnavailableError(`KurrentDB event store at ${where} does not answer: ${error.message}`, {
      cause: error,
    });
  }
};

const decodeSnapshot = (event: RecordedEvent | undefined): Snapshot | undefined => {
  if (!event || !isObject(event.data)) return undefined;
  const { position, data } = event.data;
  return typeof position === 'string' && data !== undefined ? { position: BigInt(position), data } : undefined;
};
