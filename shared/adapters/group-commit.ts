/**
 * Group commit: requests that arrive while a flush is running (or within `windowMs` of the first
 * one) are handed to the next flush together, so many callers share one transaction and one fsync.
 *
 * `flush` receives the batch and returns one outcome per item, in order: a value, or an Error for
 * that item alone (e.g. an expected-version conflict). A thrown error fails the whole batch.
 */
import { groupCommitBatchSize } from '../observability/metrics.ts';

export type Outcome<R> = R | Error;

export interface GroupCommitOptions {
  /** Wait this long after the first request of a batch before flushing; 0 flushes on the next turn. */
  windowMs?: number;
  /** Most items in one flush. */
  maxBatch?: number;
  /** Names the writer in the `group_commit_batch_size` metric; unnamed writers are not measured. */
  name?: string;
}

interface Pending<T, R> {
  item: T;
  resolve: (value: R) => void;
  reject: (error: unknown) => void;
}

export class GroupCommit<T, R> {
  private queue: Pending<T, R>[] = [];
  private running = false;
  private scheduled = false;
  private readonly windowMs: number;
  private readonly maxBatch: number;
  private readonly name: string | undefined;
  private idle: Promise<void> = Promise.resolve();
  private markIdle: () => void = () => {};

  constructor(
    private readonly flush: (items: T[]) => Promise<Outcome<R>[]> | Outcome<R>[],
    options: GroupCommitOptions = {},
  ) {
    this.windowMs = options.windowMs ?? 0;
    this.maxBatch = options.maxBatch ?? 1000;
    this.name = options.name;
  }

  submit(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      if (this.queue.length === 0 && !this.running) this.idle = new Promise((done) => (this.markIdle = done));
      this.queue.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** Resolves once everything submitted so far has been flushed. */
  drain(): Promise<void> {
    return this.idle;
  }

  private schedule(): void {
    if (this.running || this.scheduled) return;
    this.scheduled = true;
    const run = () => {
      this.scheduled = false;
      void this.run();
    };
    if (this.windowMs > 0) setTimeout(run, this.windowMs);
    else setImmediate(run);
  }

  private async run(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, this.maxBatch);
        if (this.name) groupCommitBatchSize.observe({ writer: this.name }, batch.length);
        try {
          const outcomes = await this.flush(batch.map((p) => p.item));
          batch.forEach((p, i) => {
            const outcome = outcomes[i];
            if (outcome instanceof Error) p.reject(outcome);
            else p.resolve(outcome as R);
          });
        } catch (error) {
          for (const p of batch) p.reject(error);
        }
      }
    } finally {
      this.running = false;
      this.markIdle();
    }
  }
}
