import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import {
  type AppendResult,
  categoryOf,
  checkCategories,
  type EventStore,
  ExpectedVersionConflictError,
  EventStoreUnavailableError,
  expectedVersionHolds,
  type Json,
  type ReadAllOptions,
  type RecordedEvent,
} from '../../ports/event-store.ts';
import { GroupCommit, type Outcome } from '../group-commit.ts';
import { timeAppend } from '../../observability/metrics.ts';
import { serialised, type SqliteDb } from '../sqlite/sqlite-database.ts';
import { whenDurable, whenDurableWithin } from '../sqlite/wal-sync.ts';
import { isBackendUnavailable } from '../../ports/unavailable.ts';
import { translateSqliteError } from '../sqlite/sqlite-errors.ts';
import { type EventRow as SqlEventRow, eventRowMapper } from './event-row.ts';
import {
  type AppendRequest,
  FEED_READ_MAX_BYTES,
  type FeedRead,
  type SqlEventStoreOptions,
  subscriptionsOver,
} from './polling-subscription.ts';

/** Local appends wake subscriptions at once. */
export type SqliteEventStoreOptions = SqlEventStoreOptions;

type EventRow = SqlEventRow<string, number>;

/** A read of the feed, with the stored size of what it handed (`rowSize`). */
type FeedBatch = FeedRead & { sizes: number[]; bytes: number };

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS events (
    position    INTEGER PRIMARY KEY AUTOINCREMENT,
    stream_id   TEXT    NOT NULL,
    revision    INTEGER NOT NULL,
    id          TEXT    NOT NULL,
    type        TEXT    NOT NULL,
    data        TEXT    NOT NULL,
    metadata    TEXT    NOT NULL,
    recorded_at INTEGER NOT NULL,
    UNIQUE (stream_id, revision)
  );
  CREATE TABLE IF NOT EXISTS event_snapshots (
    name     TEXT PRIMARY KEY,
    position INTEGER NOT NULL,
    data     TEXT NOT NULL
  );
  CREATE TABLE IF NOT EXISTS event_checkpoints (
    id       TEXT PRIMARY KEY,
    position INTEGER NOT NULL
  );
`;

/**
 * The category column (the stream id before its first '-', see `categoryOf`) and its index. A
 * virtual generated column: SQLite computes it from stream_id, so rows of a database written before
 * it existed have it as soon as it is added, and the index is built over them when it is created
 * (once, at the first open by this version).
 */
const CATEGORY_EXPRESSION =
  "CASE WHEN instr(stream_id, '-') > 1 THEN substr(stream_id, 1, instr(stream_id, '-') - 1) END";
const ensureCategoryIndex = (db: SqliteDb): void => {
  const columns = db.prepare<[], { name: string }>('PRAGMA table_xinfo(events)').all();
  if (!columns.some((c) => c.name === 'category')) {
    db.exec(`ALTER TABLE events ADD COLUMN category TEXT GENERATED ALWAYS AS (${CATEGORY_EXPRESSION}) VIRTUAL`);
  }
  db.exec('CREATE INDEX IF NOT EXISTS events_category_position ON events (category, position)');
};

const toRecorded = eventRowMapper(
  (text: string) => JSON.parse(text) as Json,
  (ms: number) => new Date(ms),
);

/** Frozen all the way down: a feed event is shared by every subscriber, none may change it. */
const deepFreeze = <T>(value: T): T => {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
};

/**
 * Most events kept parsed per stretch, for the subscribers that follow the feed close behind each
 * other (a few reads of their batch size); one further behind reads from the database.
 */
const SHARED_RUN_MAX = 2_000;
/** How far past SHARED_RUN_MAX a stretch grows before it is trimmed back. */
const SHARED_RUN_SLACK = 500;
/**
 * Most stored text a stretch keeps parsed: events are counted above, but one call event may hold a
 * whole transcript (a sealed 500 KB transcript is about 1.4 MB of text), and 2,000 of those would
 * not fit the heap. Past it the stretch is trimmed from its start, down to the newest events.
 */
const SHARED_RUN_MAX_BYTES = 2 * FEED_READ_MAX_BYTES;

/** The stored text of a row: what its parsed event costs, near enough to budget reads by. */
const rowSize = (row: EventRow): number => row.data.length + row.metadata.length;
/**
 * A stretch no reader asked for in this long is let go instead of continued by the writer: a
 * one-off read (a replay, the whole feed read once) would otherwise have every later commit parsed
 * for nobody. A follower reads at least at each poll (250 ms), so one that keeps up is never let go.
 */
const SHARED_RUN_IDLE_MS = 2_000;

/**
 * The last stretch of the feed (or of some categories of it), parsed once for every subscriber of
 * this process: every committed event of the stretch's categories with `from` < position ≤ `to`,
 * in order. There is one writer and it commits in position order, so events below the head never
 * change and a later read from `to` continues the stretch exactly. A read that returned less than it
 * asked for reached the head it read to, so the stretch reaches that head even when the categories'
 * last event lies before it (a filtered follower moves on to the head). A stretch that reaches the
 * committed head is continued by the writer itself with each commit (`add` from the commit's rows),
 * so followers that keep up never query for what this process wrote. It may hold committed events
 * that are not durable yet: `take` hands out none past the durable head it is given.
 * Subscribers get the same frozen objects, so a decorator that derives something from an event
 * (the sealed store's opened copy) can keep it for the next subscriber too.
 */
class SharedRun {
  private from = 0;
  private to = 0;
  private events: RecordedEvent[] = [];
  /** The stored size of each event held (`rowSize`), and their sum. */
  private sizes: number[] = [];
  private bytes = 0;
  /** When a reader last asked for the stretch (`performance.now()`). */
  readAt = performance.now();

  /** Whether the stretch holds every event after `after` up to its end. */
  covers(after: number): boolean {
    return after >= this.from && after < this.to;
  }

  /**
   * Up to `maxCount` events after `after` and at most at `upTo` held here, of at most `maxBytes`
   * stored text (at least one event); empty when the stretch does not cover `after`. `more`: the
   * byte budget stopped it.
   */
  take(after: number, maxCount: number, upTo: number, maxBytes: number): FeedBatch {
    if (!this.covers(after)) return { events: [], sizes: [], bytes: 0, more: false };
    const start = this.indexAfter(after);
    const end = Math.min(this.to <= upTo ? this.events.length : this.indexAfter(upTo), start + maxCount);
    let bytes = 0;
    let stop = start;
    while (stop < end && (stop === start || bytes + this.sizes[stop]! <= maxBytes)) bytes += this.sizes[stop++]!;
    return { events: this.events.slice(start, stop), sizes: this.sizes.slice(start, stop), bytes, more: stop < end };
  }

  /** Where a read continuing the stretch starts. */
  get end(): number {
    return this.to;
  }

  /**
   * Records the events a read (or a commit) of the positions after `after` gave; `reached` is the
   * position it covered in full (a read that returned fewer than it asked for, a commit), else
   * undefined.
   */
  add(after: number, events: RecordedEvent[], sizes: number[], reached: number | undefined): void {
    const last = events.length > 0 ? Number(events[events.length - 1]!.position) : after;
    const to = Math.max(last, reached ?? 0);
    if (to <= after) return;
    for (const event of events) deepFreeze(event);
    const added = sizes.reduce((sum, size) => sum + size, 0);
    // One push per event: a commit may hold more events than a call's arguments can.
    if (this.to > this.from && after === this.to) {
      for (const event of events) this.events.push(event);
      for (const size of sizes) this.sizes.push(size);
      this.bytes += added;
    } else {
      this.from = after;
      this.events = events.slice();
      this.sizes = sizes.slice();
      this.bytes = added;
    }
    this.to = to;
    // Trimmed in steps, not at each commit: a splice moves every event kept.
    let excess = this.events.length - SHARED_RUN_MAX;
    if (excess <= SHARED_RUN_SLACK) excess = 0;
    if (this.bytes > SHARED_RUN_MAX_BYTES) {
      // Down to half the budget, so large events do not trim at every commit either.
      let kept = this.bytes;
      let cut = 0;
      while (cut < this.events.length - 1 && kept > SHARED_RUN_MAX_BYTES / 2) kept -= this.sizes[cut++]!;
      excess = Math.max(excess, cut);
    }
    if (excess > 0) {
      this.from = Number(this.events[excess - 1]!.position);
      this.events.splice(0, excess);
      for (const size of this.sizes.splice(0, excess)) this.bytes -= size;
    }
  }

  /** Index of the first event held past `position`. */
  private indexAfter(position: number): number {
    let lo = 0;
    let hi = this.events.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (Number(this.events[mid]!.position) <= position) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

/**
 * How far the feed of one database is committed, and how far durable. Shared by every store over
 * the same connection, since each may write. An append resolves once its commit is durable, and
 * the feed shows only durable events, so nothing that follows it (a relay to Kafka) passes on an
 * event a power loss could still take back (docs/decisions/0015-embedded-durability-off-the-event-loop.md).
 */
interface FeedHeads {
  committed: number;
  durable: number;
  /** Wakes the subscriptions of every store over the connection. */
  moved: EventEmitter;
}
const feedHeads = new WeakMap<SqliteDb, FeedHeads>();

/** SQLITE_BUSY / SQLITE_LOCKED (another process holds the file past the busy timeout) are worth retrying. */
const translate = (error: unknown): unknown =>
  translateSqliteError(
    error,
    (message, cause) => new EventStoreUnavailableError(`SQLite event store unavailable: ${message}`, { cause }),
  );

/** Runs `work`, rethrowing its failure translated. */
const translated = async <T>(work: () => T | Promise<T>): Promise<T> => {
  try {
    return await work();
  } catch (error) {
    throw translate(error);
  }
};

/**
 * Event store in the embedded SQLite database. Writes go through one connection, one transaction
 * per group of concurrent appends; reads use a second, read-only connection, so a reader only ever
 * sees committed transactions. SQLite has one writer at a time, so positions commit in order and
 * the global feed has no late-commit gaps.
 */
export const createSqliteEventStore = (db: SqliteDb, options: SqliteEventStoreOptions = {}): EventStore => {
  db.exec(SCHEMA);
  ensureCategoryIndex(db);
  const reader = new Database(db.name, { readonly: true, fileMustExist: true });
  reader.pragma('busy_timeout = 5000');

  const currentRevision = db.prepare<[string], { revision: number | null }>(
    'SELECT max(revision) AS revision FROM events WHERE stream_id = ?',
  );
  const insert = db.prepare(
    'INSERT INTO events (stream_id, revision, id, type, data, metadata, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  const readStream = reader.prepare<[string, number, number], EventRow>(
    'SELECT * FROM events WHERE stream_id = ? AND revision >= ? ORDER BY revision LIMIT ?',
  );
  const readAll = reader.prepare<[number, number, number], EventRow>(
    'SELECT * FROM events WHERE position > ? AND position <= ? ORDER BY position LIMIT ?',
  );
  // One bounded range of the (category, position) index. Like the whole feed, a category read goes
  // no further than the last durable event.
  const readCategoryRange = reader.prepare<[string, number, number, number], EventRow>(
    'SELECT * FROM events WHERE category = ? AND position > ? AND position <= ? ORDER BY position LIMIT ?',
  );
  const readSnapshot = reader.prepare<[string], { position: number; data: string }>(
    'SELECT position, data FROM event_snapshots WHERE name = ?',
  );
  const storeSnapshot = db.prepare(
    'INSERT INTO event_snapshots (name, position, data) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET position = excluded.position, data = excluded.data WHERE excluded.position > event_snapshots.position',
  );
  /** One stretch per category read ('' for the whole feed). */
  const sharedRuns = new Map<string, SharedRun>();
  /**
   * Up to `maxCount` durable events after `after`, of at most FEED_READ_MAX_BYTES of stored text
   * (at least one event): from the stretch of `key` where it covers them, the rest by `read` (the
   * rows after `from` up to `upTo`, iterated so that no more of them are fetched than the budget
   * takes), which continues it. A read goes up to the committed head, so the stretch reaches it and
   * the writer continues it from there (`handOver`); what it returns stops at the durable head.
   */
  const sharedRead = (
    key: string,
    after: number,
    maxCount: number,
    read: (from: number, upTo: number, count: number) => IterableIterator<EventRow>,
  ): FeedBatch => {
    let shared = sharedRuns.get(key);
    if (!shared) {
      shared = new SharedRun();
      sharedRuns.set(key, shared);
    }
    shared.readAt = performance.now();
    const durable = feed.durable;
    const held = shared.take(after, maxCount, durable, FEED_READ_MAX_BYTES);
    if (held.more || held.events.length === maxCount) return held;
    const from = shared.covers(after) ? shared.end : after;
    // Nothing durable lies past what is held: no query. Every follower of a category reads after
    // each sync, and all but the first find the stretch already at the head.
    if (from >= durable) return held;
    const upTo = feed.committed;
    const count = maxCount - held.events.length;
    const rows: EventRow[] = [];
    const sizes: number[] = [];
    let bytes = held.bytes;
    let more = false;
    for (const row of read(from, upTo, count)) {
      const size = rowSize(row);
      if (held.events.length + rows.length > 0 && bytes + size > FEED_READ_MAX_BYTES) {
        more = true;
        break; // ends the iteration: the rows after it are not fetched
      }
      rows.push(row);
      sizes.push(size);
      bytes += size;
    }
    const fresh = rows.map(toRecorded);
    shared.add(from, fresh, sizes, !more && fresh.length < count ? upTo : undefined);
    let durableCount = fresh.length;
    while (durableCount > 0 && Number(fresh[durableCount - 1]!.position) > durable) {
      durableCount -= 1;
      bytes -= sizes[durableCount]!;
    }
    const handed = durableCount < fresh.length ? fresh.slice(0, durableCount) : fresh;
    return {
      events: held.events.length > 0 ? [...held.events, ...handed] : handed,
      sizes: [...held.sizes, ...sizes.slice(0, durableCount)],
      bytes,
      // Cut at the durable head, the read stopped there, not at its budget: the sync wakes the reader.
      more: more && durableCount === fresh.length,
    };
  };
  /**
   * Continues every stretch that reached `before`, the committed head before a commit, with that
   * commit's rows (those of its category) up to `after`, its head: the same events a read would
   * give, parsed from the same text. A stretch behind the head is left for its next read; one no
   * reader asked for lately is let go (SHARED_RUN_IDLE_MS). A row whose text SQLite would not store
   * as it is (a string that is not well-formed UTF-16) stops the hand-over: what is read back then
   * differs, so the followers read it.
   */
  const handOver = (before: number, rows: EventRow[], after: number): void => {
    if (rows.length === 0 || sharedRuns.size === 0) return;
    if (!rows.every((row) => row.stream_id.isWellFormed() && row.id.isWellFormed() && row.type.isWellFormed())) return;
    let recorded: RecordedEvent[] | undefined;
    let sizes: number[] | undefined;
    const idleSince = performance.now() - SHARED_RUN_IDLE_MS;
    for (const [key, shared] of sharedRuns) {
      if (shared.readAt < idleSince) {
        sharedRuns.delete(key);
        continue;
      }
      if (shared.end !== before) continue;
      recorded ??= rows.map(toRecorded);
      sizes ??= rows.map(rowSize);
      if (key === '') shared.add(before, recorded, sizes, after);
      else {
        const mine = recorded.flatMap((event, i) => (categoryOf(event.streamId) === key ? [i] : []));
        shared.add(
          before,
          mine.map((i) => recorded![i]!),
          mine.map((i) => sizes![i]!),
          after,
        );
      }
    }
  };
  /**
   * Up to `maxCount` durable events of `categories` after `after`: each category from its own
   * stretch, so a follower of several categories (the webhook projection: calls and webhooks) reuses
   * what the followers of one (call history, deals) read and parsed. Merged by position, up to the
   * end of the shortest list that stopped early, and within the byte budget again: when a
   * category's list stops at `maxCount`, the first `maxCount` of the merge all lie before its end;
   * when one stops at its byte budget, the merge stops at its last event, so none of them skips an
   * event of that category.
   */
  const readCategoriesShared = (categories: readonly string[], after: number, maxCount: number): FeedBatch => {
    const lists = categories.map((category) =>
      sharedRead(category, after, maxCount, (from, upTo, count) =>
        readCategoryRange.iterate(category, from, upTo, count),
      ),
    );
    if (lists.length === 1) return lists[0]!;
    const merged = lists
      .flatMap((list) => list.events.map((event, i) => ({ event, size: list.sizes[i]! })))
      .sort((x, y) => (x.event.position < y.event.position ? -1 : x.event.position > y.event.position ? 1 : 0));
    const stops = lists
      .filter((list) => list.more && list.events.length > 0)
      .map((list) => list.events[list.events.length - 1]!.position);
    const stop = stops.length > 0 ? stops.reduce((x, y) => (x < y ? x : y)) : undefined;
    const batch: FeedBatch = { events: [], sizes: [], bytes: 0, more: stop !== undefined };
    for (const { event, size } of merged) {
      if (batch.events.length === maxCount || (stop !== undefined && event.position > stop)) break;
      if (batch.events.length > 0 && batch.bytes + size > FEED_READ_MAX_BYTES) {
        batch.more = true;
        break;
      }
      batch.events.push(event);
      batch.sizes.push(size);
      batch.bytes += size;
    }
    return batch;
  };
  /** One read of the feed, whole or of some categories (see `sharedRead`). */
  const readFeed = ({ after = 0n, maxCount = 1000, categories }: ReadAllOptions): FeedBatch => {
    const only = checkCategories(categories);
    // Every subscriber of this process follows the same feed: what one read parsed, the others reuse.
    return only
      ? readCategoriesShared(only, Number(after), maxCount)
      : sharedRead('', Number(after), maxCount, (from, upTo, count) => readAll.iterate(from, upTo, count));
  };
  const readCheckpoint = reader.prepare<[string], { position: number }>(
    'SELECT position FROM event_checkpoints WHERE id = ?',
  );
  const storeCheckpoint = db.prepare(
    'INSERT INTO event_checkpoints (id, position) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET position = excluded.position',
  );

  let heads = feedHeads.get(db);
  if (!heads) {
    // What is stored at open is durable: openSqlite synced the WAL a killed process left.
    const stored = Number(
      db.prepare<[], { position: number | null }>('SELECT max(position) AS position FROM events').get()?.position ?? 0,
    );
    heads = { committed: stored, durable: stored, moved: new EventEmitter().setMaxListeners(0) };
    feedHeads.set(db, heads);
  }
  const feed = heads;
  const appended = feed.moved;

  /** Appends `requests` in the open transaction; `rows` gets each row inserted, in position order. */
  const writeBatch = (requests: AppendRequest[], rows: EventRow[]): Outcome<AppendResult>[] => {
    const versions = new Map<string, number>();
    const now = Date.now();
    return requests.map(({ streamId, events, expectedVersion }) => {
      const actual = versions.get(streamId) ?? currentRevision.get(streamId)?.revision ?? -1;
      if (!expectedVersionHolds(expectedVersion, actual))
        return new ExpectedVersionConflictError(streamId, expectedVersion, actual);
      let revision = actual;
      let position = 0n;
      for (const event of events) {
        revision += 1;
        const id = event.id ?? randomUUID();
        const data = JSON.stringify(event.data);
        const metadata = JSON.stringify(event.metadata ?? {});
        const info = insert.run(streamId, revision, id, event.type, data, metadata, now);
        position = BigInt(info.lastInsertRowid);
        rows.push({
          position: Number(position),
          stream_id: streamId,
          revision,
          id,
          type: event.type,
          data,
          metadata,
          recorded_at: now,
        });
      }
      versions.set(streamId, revision);
      return { nextExpectedVersion: revision, position };
    });
  };

  const flush = (requests: AppendRequest[]): Promise<Outcome<AppendResult>[]> =>
    translated(() => serialised(db, () => writeTransaction(requests)));
  const writeTransaction = async (requests: AppendRequest[]): Promise<Outcome<AppendResult>[]> => {
    db.exec('BEGIN IMMEDIATE');
    try {
      const rows: EventRow[] = [];
      const outcomes = writeBatch(requests, rows);
      if (options.beforeCommit) await options.beforeCommit();
      db.exec('COMMIT');
      const before = feed.committed;
      for (const outcome of outcomes)
        if (!(outcome instanceof Error) && Number(outcome.position) > feed.committed)
          feed.committed = Number(outcome.position);
      const upTo = feed.committed;
      try {
        handOver(before, rows, upTo);
      } catch {
        // The commit stands whatever happens here: the followers read it from the database instead.
        sharedRuns.clear();
      }
      // Followers of other categories are not woken for these events (they would read nothing).
      const categories = new Set<string>();
      outcomes.forEach((outcome, i) => {
        const category = outcome instanceof Error ? undefined : categoryOf(requests[i]!.streamId);
        if (category) categories.add(category);
      });
      void whenDurable(db).then(
        () => {
          if (upTo > feed.durable) feed.durable = upTo;
          appended.emit('appended', categories);
        },
        () => undefined,
      );
      return outcomes;
    } catch (error) {
      if (db.inTransaction) db.exec('ROLLBACK');
      throw error;
    }
  };
  const commits = new GroupCommit(flush, { name: 'sqlite-event-store' });
  /** The WAL synced past every commit so far, or, past the deadline, an answer that it may have been written. */
  const durable = async (): Promise<void> => {
    try {
      await whenDurableWithin(db, options.syncDeadlineMs);
    } catch (error) {
      const translatedError = translate(error);
      if (isBackendUnavailable(translatedError)) throw translatedError;
      // Committed, not known to be on disk: it may survive (a caller must not say nothing was accepted).
      throw new EventStoreUnavailableError(
        `SQLite event store could not sync its commits: ${(error as Error).message}`,
        {
          cause: error,
          outcomeUnknown: true,
        },
      );
    }
  };

  const store: EventStore = {
    append(streamId, events, appendOptions = {}) {
      if (events.length === 0) return Promise.reject(new TypeError('append needs at least one event'));
      // Resolved once durable: the WAL holding the commit synced (group fsync, off the event loop).
      return timeAppend(
        'sqlite',
        commits
          .submit({ streamId, events, expectedVersion: appendOptions.expectedVersion ?? 'any' })
          .then(async (result) => {
            if (!appendOptions.deferDurability) await durable();
            return result;
          }),
      );
    },

    async readStream(streamId, { fromRevision = 0, maxCount = Number.MAX_SAFE_INTEGER } = {}) {
      return (await translated(() => readStream.all(streamId, fromRevision, maxCount))).map(toRecorded);
    },

    async readAll(readOptions = {}) {
      return (await translated(() => readFeed(readOptions))).events;
    },

    subscribeToAll: (subscribeOptions) => subscriptions.subscribe(subscribeOptions),

    async headPosition() {
      // The feed's head: the last durable event (readAll reads no further). Kept by the writer, so
      // no query: events are never deleted, and every one up to it is committed.
      return BigInt(feed.durable);
    },

    async readCheckpoint(checkpointId) {
      const row = await translated(() => readCheckpoint.get(checkpointId));
      return row ? BigInt(row.position) : undefined;
    },

    async storeCheckpoint(checkpointId, position) {
      await translated(() => serialised(db, () => storeCheckpoint.run(checkpointId, Number(position))));
    },

    async readSnapshot(name) {
      const row = await translated(() => readSnapshot.get(name));
      return row ? { position: BigInt(row.position), data: JSON.parse(row.data) as Json } : undefined;
    },

    async storeSnapshot(name, snapshot) {
      const data = JSON.stringify(snapshot.data);
      await translated(() => serialised(db, () => storeSnapshot.run(name, Number(snapshot.position), data)));
    },

    async close() {
      await subscriptions.stopAll();
      await commits.drain();
      reader.close();
    },
  };
  const subscriptions = subscriptionsOver(
    { ...store, readFeed: (readOptions) => translated(() => readFeed(readOptions)) },
    (listener) => {
      appended.on('appended', listener);
      return () => appended.off('appended', listener);
    },
    options.pollMs ?? 250,
  );
  return store;
};
