/**
 * The engine behind every event-log consumer: records of a partition are pushed in log order;
 * records with the same key run one at a time in that order, records with different keys run
 * concurrently up to `concurrency`. Per partition it tracks the committable offset: one past the
 * highest offset such that it and every earlier pushed offset of that partition are done.
 *
 * A handler error stops dispatch: records waiting behind any key are dropped, `push` rejects, and
 * the failed record (with everything after it in its partition) is never counted committable.
 *
 * Each record's handler gets its partition's abort signal, aborted by `abandon` when the member
 * gives the partition up before its records are finished: a handler retrying in place then stops
 * and throws, which counts as no failure, and the record goes uncommitted to the next owner.
 */
import type { LogRecord, PartitionRef } from '../../ports/event-log.ts';

export interface KeyedDispatcherOptions {
  /** Most records accepted and not yet finished (running or waiting behind their key); default 64. */
  concurrency?: number;
  /** Called whenever a record settles, e.g. to wake a poller that waits for capacity. */
  onSettled?: () => void;
}

type JobState = 'queued' | 'running' | 'done' | 'failed' | 'dropped';

interface Job {
  record: LogRecord;
  track: PartitionTrack;
  state: JobState;
}

interface PartitionTrack {
  /** Pushed jobs not yet committable, in offset order. */
  pending: Job[];
  committable?: bigint;
  lastPushed?: bigint;
  /** Aborted once the partition is abandoned; its handlers get the signal. */
  abandoned: AbortController;
}

interface Waiter {
  record: LogRecord;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** Map key of a partition: topic and partition number. */
export const partitionKey = (ref: PartitionRef): string => `${ref.topic}\u0000${ref.partition}`;

const isOpen = (job: Job): boolean => job.state === 'queued' || job.state === 'running';

export class KeyedDispatcher {
  private readonly concurrency: number;
  private readonly partitions = new Map<string, PartitionTrack>();
  /** Per partition and key: jobs in order; the first one runs. */
  private readonly lanes = new Map<string, Job[]>();
  private readonly waiters: Waiter[] = [];
  private inFlight = 0;
  private failedWith: { error: unknown } | undefined;
  private markFailed: (error: unknown) => void = () => {};
  private changed: Promise<void>;
  private markChanged: () => void = () => {};

  /** Resolves with the first handler error; never rejects. */
  readonly failure: Promise<unknown> = new Promise((resolve) => (this.markFailed = resolve));

  constructor(
    private readonly handler: (record: LogRecord, signal: AbortSignal) => Promise<void>,
    private readonly options: KeyedDispatcherOptions = {},
  ) {
    this.concurrency = Math.max(1, options.concurrency ?? 64);
    this.changed = new Promise((resolve) => (this.markChanged = resolve));
  }

  /** The first handler error, if a handler failed. */
  get error(): unknown {
    return this.failedWith?.error;
  }

  get failed(): boolean {
    return this.failedWith !== undefined;
  }

  /** How many more records `push` accepts without waiting. */
  get capacity(): number {
    return this.failedWith ? 0 : Math.max(0, this.concurrency - this.inFlight - this.waiters.length);
  }

  /**
   * Hands over the next record of its partition. Resolves once the record is accepted (waits while
   * `concurrency` records are in flight), not when it is handled. A record at or below the last
   * offset pushed for its partition is ignored. Rejects once a handler has failed.
   */
  push(record: LogRecord): Promise<void> {
    if (this.failedWith) return Promise.reject(this.failedWith.error);
    if (this.waiters.length === 0 && this.inFlight < this.concurrency) {
      this.accept(record);
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => this.waiters.push({ record, resolve, reject }));
  }

  /** Offset to commit for the partition (the next one to read), once any of its records is done. */
  committable(ref: PartitionRef): bigint | undefined {
    return this.partitions.get(partitionKey(ref))?.committable;
  }

  /** Offset after the last record pushed for the partition, if any was pushed. */
  position(ref: PartitionRef): bigint | undefined {
    const last = this.partitions.get(partitionKey(ref))?.lastPushed;
    return last === undefined ? undefined : last + 1n;
  }

  /**
   * Waits until no record of the given partitions (default: all) runs, waits behind its key or
   * waits to be accepted. Stop pushing those partitions first. Never rejects; check `error` after.
   */
  async drain(refs?: PartitionRef[]): Promise<void> {
    const keys = refs && new Set(refs.map(partitionKey));
    const matches = (key: string) => !keys || keys.has(key);
    const busy = (key: string) => this.partitions.get(key)?.pending.some(isOpen) === true;
    for (;;) {
      // Only the partitions asked for are looked at: this runs again on every settled record.
      const open =
        [...(keys ?? this.partitions.keys())].some(busy) || this.waiters.some((w) => matches(partitionKey(w.record)));
      if (!open) return;
      await this.changed;
    }
  }

  /**
   * Gives the partitions' unfinished records up (their partition is revoked while some still run):
   * those not started are dropped, and the handlers that run are told so by their signal; one that
   * then throws is no failure. Nothing of them is counted committable; `drain` waits for the running
   * ones to end, and `drop` forgets the partitions.
   */
  abandon(refs: PartitionRef[]): void {
    const keys = new Set(refs.map(partitionKey));
    for (const key of keys) {
      const track = this.partitions.get(key);
      if (!track) continue;
      track.abandoned.abort(new Error('partition given up'));
      for (const job of track.pending) if (job.state === 'queued') this.settle(job, 'dropped');
    }
    for (const [laneKey, lane] of this.lanes) {
      const kept = lane.filter((job) => job.state === 'running' || job.state === 'queued');
      if (kept.length === 0) this.lanes.delete(laneKey);
      else this.lanes.set(laneKey, kept);
    }
    this.signal();
  }

  /**
   * Forgets the partitions (after a revoke): their records that have not started are dropped,
   * running ones finish unobserved, and a later push starts tracking afresh.
   */
  drop(refs: PartitionRef[]): void {
    const keys = new Set(refs.map(partitionKey));
    for (const key of keys) {
      const track = this.partitions.get(key);
      this.partitions.delete(key);
      for (const job of track?.pending ?? []) if (job.state === 'queued') this.settle(job, 'dropped');
    }
    for (const [laneKey, lane] of this.lanes) {
      const kept = lane.filter((job) => job.state === 'running' || job.state === 'queued');
      if (kept.length === 0) this.lanes.delete(laneKey);
      else this.lanes.set(laneKey, kept);
    }
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const waiter = this.waiters[i]!;
      if (!keys.has(partitionKey(waiter.record))) continue;
      this.waiters.splice(i, 1);
      waiter.resolve();
    }
    this.signal();
  }

  private accept(record: LogRecord): void {
    const pKey = partitionKey(record);
    let track = this.partitions.get(pKey);
    if (!track) {
      track = { pending: [], abandoned: new AbortController() };
      this.partitions.set(pKey, track);
    }
    if (track.lastPushed !== undefined && record.offset <= track.lastPushed) return;
    track.lastPushed = record.offset;
    const job: Job = { record, track, state: 'queued' };
    track.pending.push(job);
    this.inFlight++;
    const laneKey = `${pKey}\u0000${record.key}`;
    const lane = this.lanes.get(laneKey);
    if (lane) lane.push(job);
    else {
      this.lanes.set(laneKey, [job]);
      this.start(job, laneKey);
    }
  }

  private start(job: Job, laneKey: string): void {
    job.state = 'running';
    const run = async () => this.handler(job.record, job.track.abandoned.signal);
    run().then(
      () => this.next(job, laneKey, 'done'),
      (error: unknown) => {
        if (
          !this.failedWith &&
          !job.track.abandoned.signal.aborted &&
          this.partitions.get(partitionKey(job.record)) === job.track
        ) {
          this.failedWith = { error };
          this.markFailed(error);
        }
        this.next(job, laneKey, 'failed');
      },
    );
  }

  /** After `job` ran: start the next job of its lane, or after a failure abandon all queued jobs. */
  private next(job: Job, laneKey: string, outcome: 'done' | 'failed'): void {
    this.settle(job, outcome);
    const lane = this.lanes.get(laneKey);
    if (lane?.[0] === job) lane.shift();
    if (this.failedWith) this.abandonQueued();
    else if (lane && lane.length > 0) this.start(lane[0]!, laneKey);
    else this.lanes.delete(laneKey);
    this.admitWaiters();
    this.signal();
    this.options.onSettled?.();
  }

  private settle(job: Job, state: 'done' | 'failed' | 'dropped'): void {
    if (!isOpen(job)) return;
    job.state = state;
    this.inFlight--;
    const { track } = job;
    while (track.pending[0]?.state === 'done') track.committable = track.pending.shift()!.record.offset + 1n;
  }

  /** After a failure nothing new starts: queued jobs settle without running, waiters are refused. */
  private abandonQueued(): void {
    for (const [laneKey, lane] of this.lanes) {
      for (const job of lane) if (job.state === 'queued') this.settle(job, 'dropped');
      const running = lane.filter((job) => job.state === 'running');
      if (running.length === 0) this.lanes.delete(laneKey);
      else this.lanes.set(laneKey, running);
    }
    for (const waiter of this.waiters.splice(0)) waiter.reject(this.failedWith?.error);
  }

  private admitWaiters(): void {
    while (!this.failedWith && this.waiters.length > 0 && this.inFlight < this.concurrency) {
      const waiter = this.waiters.shift()!;
      this.accept(waiter.record);
      waiter.resolve();
    }
  }

  private signal(): void {
    const mark = this.markChanged;
    this.changed = new Promise((resolve) => (this.markChanged = resolve));
    mark();
  }
}
