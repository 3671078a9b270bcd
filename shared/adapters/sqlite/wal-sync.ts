/**
 * Durability of the embedded database's commits without an fsync on the event loop
 * (docs/decisions/0015-embedded-durability-off-the-event-loop.md).
 *
 * The write connection runs WAL with `synchronous=NORMAL`: a COMMIT appends its frames to the WAL
 * with write(2) and returns, without fsync. What `synchronous=FULL` would do inside COMMIT — an
 * fdatasync of the WAL — runs here instead, in libuv's thread pool, and one such sync covers every
 * commit that returned before it began (the WAL is one file, written in commit order). Callers
 * that acknowledge a write (an append, a publish: the 201) wait for `whenDurable` after their
 * commit; the others (checkpoints, projections) need not, since the WAL is replayed as a prefix:
 * a commit is never kept without the ones before it.
 *
 * One sync runs at a time; commits that arrive during it share the next one (group fsync).
 */
import { closeSync, existsSync, fdatasyncSync, openSync } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { walSyncDuration } from '../../observability/metrics.ts';
import type { SqliteDb } from './sqlite-database.ts';

interface Waiting {
  promise: Promise<void>;
  resolve: () => void;
  reject: (error: unknown) => void;
}

const waiting = (): Waiting => {
  let resolve!: () => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
};

/**
 * An fsync of the WAL failed. After a failed fsync the kernel may have dropped the pages it could
 * not write and marked them clean, so a later fsync that succeeds proves nothing about the commits
 * before it: every later sync fails with this error until the database is opened again (what
 * SQLite then reads from the disk is the truth). Its code is SQLite's own for a failed fsync, so
 * the adapters answer it as the backend being unavailable.
 */
export class WalSyncFailedError extends Error {
  readonly code = 'SQLITE_IOERR_FSYNC';
}

/** Group fsync of one database's WAL file, in the thread pool. */
export class WalSync {
  private running = false;
  private next: Waiting | undefined;
  private syncs = 0;
  private failure: WalSyncFailedError | undefined;

  constructor(
    private readonly walPath: string,
    /** The fsync itself (a test makes it fail). */
    private readonly datasync: (handle: FileHandle) => Promise<void> = (handle) => handle.datasync(),
  ) {}

  /**
   * Resolves once every commit that returned before this call is on disk; rejects with the
   * WalSyncFailedError once an fsync has failed.
   */
  afterCommit(): Promise<void> {
    if (this.failure) return Promise.reject(this.failure);
    this.next ??= waiting();
    const { promise } = this.next;
    if (!this.running) void this.run();
    return promise;
  }

  /** The failed fsync that stopped every later sync, if one has (reported by `/readyz`). */
  get failed(): WalSyncFailedError | undefined {
    return this.failure;
  }

  /** fsyncs done so far (a test reads it). */
  get count(): number {
    return this.syncs;
  }

  /** Syncs what is already written, on the calling thread (at open: whatever a killed process left). */
  syncNow(): void {
    if (!existsSync(this.walPath)) return;
    const fd = openSync(this.walPath, 'r');
    try {
      fdatasyncSync(fd);
    } finally {
      closeSync(fd);
    }
  }

  private async run(): Promise<void> {
    this.running = true;
    while (this.next) {
      const round = this.next;
      this.next = undefined;
      if (this.failure) {
        round.reject(this.failure);
        continue;
      }
      let handle: FileHandle;
      try {
        // Opened for each round: the file SQLite writes now, whatever happened to it before.
        handle = await open(this.walPath, 'r');
      } catch (error) {
        // No WAL file: nothing was committed through it since it was last checkpointed and removed.
        // Any other failure to open it left the pages as they were: the next round tries again.
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') round.resolve();
        else round.reject(error);
        continue;
      }
      try {
        const started = performance.now();
        await this.datasync(handle);
        walSyncDuration.observe((performance.now() - started) / 1000);
        this.syncs++;
        round.resolve();
      } catch (error) {
        this.failure = new WalSyncFailedError(
          `the embedded database could not make its commits durable: fsync of ${this.walPath} failed (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); restart the service, which reads what reached the disk`,
          { cause: error },
        );
        round.reject(this.failure);
      } finally {
        await handle.close().catch(() => undefined);
      }
    }
    this.running = false;
  }
}

const syncs = new WeakMap<SqliteDb, WalSync>();

/** Makes `db`'s acknowledged commits wait for `sync` (see `openSqlite`). */
export const attachWalSync = (db: SqliteDb, sync: WalSync): void => {
  syncs.set(db, sync);
};

/**
 * Resolves once the commits `db` has returned so far are durable. A connection without a
 * `WalSync` (opened with `synchronous=FULL`, or in memory) made them durable in COMMIT: at once.
 */
export const whenDurable = (db: SqliteDb): Promise<void> => syncs.get(db)?.afterCommit() ?? Promise.resolve();

/** How long a durable write waits for the WAL's sync by default: the Kafka publish's deadline. */
export const DEFAULT_SYNC_DEADLINE_MS = 10_000;

/**
 * `whenDurable`, waiting at most `deadlineMs`: a disk whose fsync hangs must not hold every
 * request with it. Rejects after the deadline with an error saying so; what was committed stays
 * committed, and becomes durable when the disk answers, so a caller must answer that it may have
 * been written, not that nothing was.
 */
export const whenDurableWithin = async (db: SqliteDb, deadlineMs = DEFAULT_SYNC_DEADLINE_MS): Promise<void> => {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`the disk did not confirm the WAL's sync within ${deadlineMs / 1000} s`)),
      deadlineMs,
    );
  });
  try {
    await Promise.race([whenDurable(db), deadline]);
  } finally {
    clearTimeout(timer);
  }
};

/** The `WalSync` of `db`, if it has one. */
export const walSyncOf = (db: SqliteDb): WalSync | undefined => syncs.get(db);
