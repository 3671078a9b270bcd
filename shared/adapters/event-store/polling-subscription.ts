import type { ExpectedVersion, NewEvent, RecordedEvent, Subscription, SubscribeToAllOptions } from '../../ports/event-store.ts';

/** One `append` call, as the adapters queue it for group commit. */
export interface AppendRequest {
  streamId: string;
  events: NewEvent[];
  expectedVersion: ExpectedVersion;
}

/** Options every SQL event store takes. */
export interface SqlEventStoreOptions {
  /** Subscriptions re-read the feed at least this often; appends wake them sooner. Default 250 ms. */
  pollMs?: number;
  /** Test hook: awaited inside the write transaction, after the inserts and before COMMIT. */
  beforeCommit?: () => Promise<void>;
}

/**
 * The subscriptions of one store: starts them over the store's feed and checkpoints, woken by
 * `onAppended`, and stops them all on close.
 */
export const subscriptionsOver = (
  store: Pick<FeedSource, 'readAll' | 'readCheckpoint' | 'storeCheckpoint'>,
  onAppended: FeedSource['onAppended'],
  pollMs: number,
) => {
  const live = new Set<Subscription>();
  const source: FeedSource = {
    readAll: (options) => store.readAll(options),
    readCheckpoint: (id) => store.readCheckpoint(id),
    storeCheckpoint: (id, position) => store.storeCheckpoint(id, position),
    onAppended,
  };
  return {
    subscribe(options: SubscribeToAllOptions): Subscription {
      const subscription = new PollingSubscription(source, options, pollMs);
      live.add(subscription);
      void subscription.done.finally(() => live.delete(subscription)).catch(() => undefined);
      return subscription;
    },
    async stopAll(): Promise<void> {
      await Promise.all([...live].map((s) => s.stop()));
    },
  };
};

/** What a polling subscription needs from its store. */
export interface FeedSource {
  readAll(options: { after: bigint; maxCount: number }): Promise<RecordedEvent[]>;
  readCheckpoint(checkpointId: string): Promise<bigint | undefined>;
  storeCheckpoint(checkpointId: string, position: bigint): Promise<void>;
  /** Registers a wake-up called after local appends commit; returns the unregister function. */
  onAppended(listener: () => void): () => void;
}

/**
 * Catch-up subscription by polling the global feed: reads batches after its position, hands them
 * to the handler, and waits for a local append or the poll interval when it has caught up.
 * The feed's readAll only returns committed events without gaps, so no event is ever skipped.
 */
export class PollingSubscription implements Subscription {
  readonly done: Promise<void>;
  private current = 0n;
  private stopped = false;
  private wake: () => void = () => {};
  private readsStarted = 0;
  private waiters: { afterRead: number; resolve: () => void }[] = [];

  constructor(
    private readonly source: FeedSource,
    private readonly options: SubscribeToAllOptions,
    private readonly pollMs: number,
  ) {
    this.done = this.loop();
    // A stop caused by a handler error is reported through `done`; keep it from being unhandled.
    this.done.catch(() => undefined);
  }

  get position(): bigint {
    return this.current;
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
    const { checkpointId, handler } = this.options;
    const batchSize = this.options.batchSize ?? 500;
    const stored = checkpointId ? await this.source.readCheckpoint(checkpointId) : undefined;
    this.current = stored ?? this.options.after ?? 0n;
    let pending = true; // something may have been appended since the last read
    const unsubscribe = this.source.onAppended(() => {
      pending = true;
      this.wake();
    });
    try {
      while (!this.stopped) {
        pending = false;
        const read = ++this.readsStarted;
        const events = await this.source.readAll({ after: this.current, maxCount: batchSize });
        if (this.stopped) break;
        if (events.length > 0) {
          await handler(events);
          this.current = events[events.length - 1]!.position;
          if (checkpointId) await this.source.storeCheckpoint(checkpointId, this.current);
        }
        if (events.length < batchSize) {
          this.waiters = this.waiters.filter((w) => (w.afterRead < read ? (w.resolve(), false) : true));
          if (!pending && !this.stopped && this.waiters.length === 0) await this.sleep();
        }
      }
    } finally {
      unsubscribe();
    }
  }

  private sleep(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, this.pollMs);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}
