import {
  checkCategories,
  type ExpectedVersion,
  type NewEvent,
  type ReadAllOptions,
  type RecordedEvent,
  type Subscription,
  type SubscribeToAllOptions,
  type SubscriptionStatus,
} from '../../ports/event-store.ts';
import { isBackendUnavailable } from '../../ports/unavailable.ts';

/** One `append` call, as the adapters queue it for group commit. */
export interface AppendRequest {
  streamId: string;
  events: NewEvent[];
  expectedVersion: ExpectedVersion;
}

/**
 * Most stored event text one read of the feed hands out (at least one event, however large).
 * Batches are counted in events, but one call event may hold a whole transcript: a 500 KB one,
 * sealed, is about 1.4 MB of text, and a batch of 500 of them, parsed and opened, would not fit the
 * service's heap. A read that stops at the budget says so (`FeedRead.more`).
 */
export const FEED_READ_MAX_BYTES = 4 * 1024 * 1024;

/** One read of the feed: `more` when it stopped at FEED_READ_MAX_BYTES with events left to read. */
export interface FeedRead {
  events: RecordedEvent[];
  more: boolean;
}

/** Options every SQL event store takes. */
export interface SqlEventStoreOptions {
  /** Subscriptions re-read the feed at least this often; appends wake them sooner. Default 250 ms. */
  pollMs?: number;
  /** Test hook: awaited inside the write transaction, after the inserts and before COMMIT. */
  beforeCommit?: () => Promise<void>;
  /**
   * The embedded store: how long a durable append waits for the WAL's sync before it answers that
   * it may have been written (default 10 s, as the embedded log's publish).
   */
  syncDeadlineMs?: number;
}

/**
 * The subscriptions of one store: starts them over the store's feed and checkpoints, woken by
 * `onAppended`, and stops them all on close.
 */
export const subscriptionsOver = (
  store: Omit<FeedSource, 'onAppended'>,
  onAppended: FeedSource['onAppended'],
  pollMs: number,
) => {
  const live = new Set<Subscription>();
  const source: FeedSource = {
    readFeed: (options) => store.readFeed(options),
    headPosition: () => store.headPosition(),
    readCheckpoint: (id) => store.readCheckpoint(id),
    storeCheckpoint: (id, position) => store.storeCheckpoint(id, position),
    onAppended,
  };
  return {
    subscribe(options: SubscribeToAllOptions): Subscription {
      const categories = checkCategories(options.categories);
      const subscription = new PollingSubscription(source, { ...options, categories }, pollMs);
      live.add(subscription);
      void subscription.done.finally(() => live.delete(subscription)).catch(() => undefined);
      return subscription;
    },
    async stopAll(): Promise<void> {
      await Promise.all([...live].map((s) => s.stop()));
    },
  };
};

const describe = (error: unknown): string =>
  error instanceof Error ? `${error.name}: ${error.message}` : String(error);

/** What a polling subscription needs from its store. */
export interface FeedSource {
  /** Up to `maxCount` events after `after`, within FEED_READ_MAX_BYTES (see FeedRead). */
  readFeed(options: { after: bigint; maxCount: number; categories?: ReadAllOptions['categories'] }): Promise<FeedRead>;
  /** Position of the last committed event of the whole feed. */
  headPosition(): Promise<bigint>;
  readCheckpoint(checkpointId: string): Promise<bigint | undefined>;
  storeCheckpoint(checkpointId: string, position: bigint): Promise<void>;
  /**
   * Registers a wake-up called after local appends commit, with the categories of the streams they
   * wrote when the store knows them (undefined: any); returns the unregister function.
   */
  onAppended(listener: (categories?: ReadonlySet<string>) => void): () => void;
}

/**
 * Catch-up subscription by polling the global feed: reads batches after its position, hands them
 * to the handler, and waits for a local append or the poll interval when it has caught up.
 * The feed's readAll only returns committed events without gaps, so no event is ever skipped.
 * With `categories` it reads only those categories' events (an indexed read), and when a read finds
 * none it moves its position (and checkpoint, and `onPassed`) up to the head of the whole feed taken
 * just before that read: every event of its categories up to that head was handled. A local append
 * wakes it only when it wrote to one of its categories (when the store says which): the others
 * would give it nothing to read, and its next poll moves it past them.
 * An outage (`BackendUnavailableError` from the store or the handler's backend) is retried in place
 * with jittered backoff, from the same position, until it succeeds or the subscription stops.
 */
export class PollingSubscription implements Subscription {
  readonly done: Promise<void>;
  private current = 0n;
  private stopped = false;
  private wake: () => void = () => {};
  private readsStarted = 0;
  private waiters: { afterRead: number; resolve: () => void }[] = [];
  private state: SubscriptionStatus = { state: 'live', since: new Date() };
  private caughtUpAt: Date | undefined;

  constructor(
    private readonly source: FeedSource,
    private readonly options: SubscribeToAllOptions,
    private readonly pollMs: number,
  ) {
    this.done = this.loop().then(
      () => void (this.state = { state: 'stopped', since: new Date() }),
      (error: unknown) => {
        this.state = { state: 'failed', since: new Date(), error: describe(error) };
        throw error;
      },
    );
    // A stop caused by a handler error is reported through `done`; keep it from being unhandled.
    this.done.catch(() => undefined);
  }

  get position(): bigint {
    return this.current;
  }

  status(): SubscriptionStatus {
    return { ...this.state, ...(this.caughtUpAt ? { caughtUpAt: this.caughtUpAt } : {}) };
  }

  caughtUp(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.waiters.push({ afterRead: this.readsStarted, resolve });
      this.done.then(resolve, reject);
      this.wake();
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.wake();
    await this.done.catch(() => undefined);
  }

  private async loop(): Promise<void> {
    const { checkpointId, handler, categories } = this.options;
    const batchSize = this.options.batchSize ?? 500;
    const stored = checkpointId ? await this.retrying(() => this.source.readCheckpoint(checkpointId)) : undefined;
    if (this.stopped) return;
    this.current = stored ?? this.options.after ?? 0n;
    let pending: boolean; // something may have been appended since the last read
    const unsubscribe = this.source.onAppended((appended) => {
      // Appends to other categories only are not this subscription's: its poll moves it past them.
      if (categories && appended && !categories.some((category) => appended.has(category))) return;
      pending = true;
      this.wake();
    });
    try {
      while (!this.stopped) {
        pending = false;
        const readNumber = ++this.readsStarted;
        let readStartedAt = new Date();
        let head: bigint | undefined;
        const read = await this.retrying(async () => {
          readStartedAt = new Date();
          head = categories ? await this.source.headPosition() : undefined;
          return this.source.readFeed({
            after: this.current,
            maxCount: batchSize,
            ...(categories ? { categories } : {}),
          });
        });
        if (this.stopped || read === undefined) break;
        const { events, more } = read;
        if (events.length > 0) {
          const last = events[events.length - 1]!.position;
          const handled = await this.retrying(async () => {
            await handler(events);
            return true;
          });
          if (handled === undefined) break;
          this.current = last;
          // Checkpointed even when a stop came while the handler ran: a clean stop must not hand
          // what was handled to the next start again (the relay would publish it twice).
          if (checkpointId) await this.retrying(() => this.source.storeCheckpoint(checkpointId, last));
          if (this.stopped) break;
        }
        // A read that stopped at its byte budget is followed by the next at once, as a full one is.
        if (events.length < batchSize && !more) {
          if (events.length === 0 && head !== undefined && head > this.current) {
            // Nothing of the categories lies between the last event handled and this head. (Moved
            // only by a read that found nothing, so a busy feed costs no second checkpoint write per
            // batch; a read that handed events is followed by one within the poll interval at most.)
            const reached = head;
            if (this.options.onPassed) await this.retrying(() => this.options.onPassed!(reached));
            if (this.stopped) break;
            if (checkpointId) await this.retrying(() => this.source.storeCheckpoint(checkpointId, reached));
            if (this.stopped) break;
            this.current = reached;
          }
          this.caughtUpAt = readStartedAt;
          this.waiters = this.waiters.filter((w) => (w.afterRead < readNumber ? (w.resolve(), false) : true));
          if (!pending && !this.stopped && this.waiters.length === 0) await this.sleep();
        }
      }
    } finally {
      unsubscribe();
    }
  }

  /**
   * Runs `work` until it succeeds; retriable failures wait (jittered, up to 5 s) and try again.
   * Resolves undefined when stopped meanwhile; a non-retriable failure is thrown.
   */
  private async retrying<T>(work: () => Promise<T>): Promise<T | undefined> {
    for (let attempt = 1; ; attempt++) {
      try {
        const result = await work();
        if (this.state.state === 'retrying') this.state = { state: 'live', since: new Date() };
        return result;
      } catch (error) {
        // Only an outage is retried here; a checkpoint that moved (CheckpointMismatchError) or a bad
        // event is the caller's to handle.
        if (!isBackendUnavailable(error) || this.stopped) throw error;
        if (this.state.state !== 'retrying')
          this.state = { state: 'retrying', since: new Date(), error: describe(error) };
        else this.state.error = describe(error);
        await this.sleep(Math.floor(Math.random() * Math.min(5000, 50 * 2 ** Math.min(attempt, 10))) + 1);
        if (this.stopped) return undefined;
      }
    }
  }

  private sleep(ms = this.pollMs): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}
