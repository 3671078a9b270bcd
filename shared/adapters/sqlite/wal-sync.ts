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
import { open } from 'node:fs/promises';
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

/** Group fsync of one database's WAL file, in the thread pool. */
export class WalSync {
  private running = false;
  private next: Waiting | undefined;
  private syncs = 0;

  constructor(private readonly walPath: string) {}

  /** Resolves once every commit that returned before this call is on disk. */
  afterCommit(): Promise<void> {
    this.next ??= waiting();
    const { promise } = this.next;
    if (!this.running) void this.run();
    return promise;
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
      try {
        // Opened for each round: the file SQLite writes now, whatever happened to it before.
        const handle = await open(this.walPath, 'r');
        try {
          await handle.datasync();
        } finally {
          await handle.close();
        }
        this.syncs++;
        round.resolve();
      } catch (error) {
        // No WAL file: nothing was committed through it since it was last checkpointed and removed.
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') round.resolve();
        else round.reject(error);
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

/** The `WalSync` of `db`, if it has one. */
export const walSyncOf = (db: SqliteDb): WalSync | undefined => syncs.get(db);
