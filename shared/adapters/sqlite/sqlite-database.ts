import Database from 'better-sqlite3';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { startWalCheckpointer, type WalCheckpointer, WAL_RESTART_BYTES } from './wal-checkpointer.ts';
import { attachWalSync, WalSync } from './wal-sync.ts';
import { isSqliteBusy } from './sqlite-errors.ts';
import { walRestartHold } from '../../observability/metrics.ts';

export type SqliteDb = Database.Database;

/** One queue per connection, shared by every adapter writing through it. */
const queues = new WeakMap<SqliteDb, { tail: Promise<unknown> }>();

/**
 * Runs `work` when no other work queued on this connection is running. Every adapter that writes
 * through a shared connection (event store, event log, read models) goes through here, so a
 * transaction whose body awaits can never have another adapter's statements land inside it.
 */
export const serialised = <T>(db: SqliteDb, work: () => Promise<T> | T): Promise<T> => {
  let queue = queues.get(db);
  if (!queue) {
    queue = { tail: Promise.resolve() };
    queues.set(db, queue);
  }
  const run = queue.tail.then(work);
  queue.tail = run.catch(() => undefined);
  return run;
};

const scrubbers = new WeakMap<SqliteDb, () => void>();

/**
 * Asks for the WAL to be emptied soon. Call it after a write that deletes personal data for an
 * erasure (a data key destroyed, a read model's rows deleted): `secure_delete` overwrites what the
 * database file held, but the WAL still holds the pages as they were before, until later writes
 * overwrite them, which at a light load may be never (docs/decisions/0014-erasure-crypto-shredding.md).
 * A connection that openSqlite did not open (`:memory:`, a test's) has no WAL to empty.
 */
export const requestWalScrub = (db: SqliteDb): void => scrubbers.get(db)?.();

const checkpointers = new WeakMap<SqliteDb, WalCheckpointer>();

/** Why the database's WAL is not being checkpointed now (its worker ended; see wal-checkpointer.ts), or undefined. */
export const walCheckpointerFailure = (db: SqliteDb): Error | undefined => checkpointers.get(db)?.failure;

/** How long after a request the WAL is emptied: the erasure's other writes (projections) land first. */
export const WAL_SCRUB_DELAY_MS = 1_000;

/** Another process holds the data directory. */
export class DataDirLockedError extends Error {
  readonly code = 'DATA_DIR_LOCKED';
  constructor(
    readonly dataDir: string,
    readonly holder: string,
  ) {
    super(`data directory ${dataDir} is in use by ${holder}; stop that process or set DATA_DIR to another directory`);
    this.name = 'DataDirLockedError';
  }
}

export interface OpenedSqlite {
  db: SqliteDb;
  dataDir: string;
  /** Closes the database (checkpointing the WAL) and releases the directory lock. */
  close(): void;
}

const LOCK_FILE = 'LOCK';
const DB_FILE = 'calls.sqlite';

/** The file whose lock the kernel holds for the opener (see lockDataDir). */
const LOCK_DB_FILE = 'LOCK.sqlite';

/** Who `LOCK` names; nothing when it is missing or unreadable. */
const readHolder = (holderPath: string): { pid?: number; host?: string; since?: string } => {
  try {
    const holder = JSON.parse(readFileSync(holderPath, 'utf8')) as { pid?: unknown; host?: unknown; since?: unknown };
    return {
      ...(typeof holder.pid === 'number' ? { pid: holder.pid } : {}),
      ...(typeof holder.host === 'string' ? { host: holder.host } : {}),
      ...(typeof holder.since === 'string' ? { since: holder.since } : {}),
    };
  } catch {
    return {};
  }
};

/** Whether `pid` is a live Node.js process on this host (its id not reused by another program). */
const isLiveNode = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    return /node/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8'));
  } catch {
    return true; // alive, and no /proc to say what it runs
  }
};

/**
 * Takes the data directory for this process. The lock is the kernel's: an exclusive lock on
 * `LOCK.sqlite` that SQLite takes and this process holds until it closes the directory, so it is
 * gone the moment the process is, however it ended (kill -9, power loss, an OOM kill). A process
 * id would not do: after a crash the id in a lock file may belong to a live process, the new one
 * itself included (a container's PID 1 restarted on the same volume), or to another host's.
 * `LOCK` only names the holder, for the error a second opener gets.
 */
const lockDataDir = (dataDir: string): (() => void) => {
  const holderPath = join(dataDir, LOCK_FILE);
  const lockPath = join(dataDir, LOCK_DB_FILE);
  if (!existsSync(lockPath)) closeSync(openSync(lockPath, 'a', 0o600));
  const lock = new Database(lockPath, { timeout: 0 });
  try {
    lock.pragma('locking_mode = EXCLUSIVE');
    // It holds no data: no journal file beside it while the process runs.
    lock.pragma('journal_mode = MEMORY');
    // Written once, the file stays locked until the connection closes (locking_mode EXCLUSIVE).
    lock.exec('BEGIN EXCLUSIVE; CREATE TABLE IF NOT EXISTS holder (pid INTEGER); COMMIT');
  } catch (error) {
    lock.close();
    if (!isSqliteBusy(error)) throw error;
    // Not written yet, or by a version before this one: the lock is held all the same.
    const holder = readHolder(holderPath);
    throw new DataDirLockedError(
      dataDir,
      holder.pid === undefined
        ? 'another process'
        : `process ${holder.pid} on ${holder.host ?? 'this host'} (since ${holder.since ?? 'unknown'})`,
    );
  }
  // Asked once per directory, under the kernel's lock (so two starts cannot both pass it): a
  // directory an earlier version used was locked by `LOCK` alone, so a live process named there may
  // be an earlier build still running on it, holding no kernel lock. Refused until it stops; the
  // mark that the question was answered is set only once it was.
  if (lock.pragma('user_version', { simple: true }) === 0) {
    const earlier = readHolder(holderPath);
    if (
      earlier.pid !== undefined &&
      earlier.pid !== process.pid &&
      earlier.host === hostname() &&
      isLiveNode(earlier.pid)
    ) {
      lock.close();
      throw new DataDirLockedError(
        dataDir,
        `process ${earlier.pid} on ${earlier.host} (since ${earlier.since ?? 'unknown'}), named in its LOCK file: an earlier version of the service that does not take the kernel's lock; if no such process uses the directory, remove LOCK`,
      );
    }
    lock.pragma('user_version = 1');
  }
  writeFileSync(holderPath, JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() }), {
    mode: 0o644,
  });
  return () => {
    rmSync(holderPath, { force: true });
    lock.close();
  };
};

/**
 * Opens the embedded database in `dataDir`: WAL journal, one process at a time. A committed
 * transaction survives power loss once `whenDurable` has resolved after it: the WAL is synced in
 * the thread pool instead of inside COMMIT (`synchronous=NORMAL` plus `WalSync`), and checkpoints
 * run in a worker (docs/decisions/0015-embedded-durability-off-the-event-loop.md). It holds every transcript: a directory
 * it creates is 0700, and the database file 0600 (SQLite gives its -wal and -shm files the same
 * mode); an existing directory keeps its mode, since it may be shared.
 */
export const openSqlite = (
  dataDir: string,
  options: {
    /** The WAL is started again from its beginning once it holds more than this (see wal-checkpointer.ts). */
    walRestartBytes?: number;
    /** How often the checkpointer worker copies the WAL into the database file. */
    checkpointIntervalMs?: number;
    /** How long after `requestWalScrub` the WAL is emptied (WAL_SCRUB_DELAY_MS). */
    walScrubDelayMs?: number;
    /** The checkpointer's worker ended without being asked to; it starts again in `restartInMs`. */
    onCheckpointerEnded?: (error: Error, restartInMs: number) => void;
  } = {},
): OpenedSqlite => {
  const walRestartBytes = options.walRestartBytes ?? WAL_RESTART_BYTES;
  const dir = resolve(dataDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const unlock = lockDataDir(dir);
  try {
    const file = join(dir, DB_FILE);
    if (!existsSync(file)) closeSync(openSync(file, 'a', 0o600));
    chmodSync(file, 0o600);
    const db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('wal_autocheckpoint = 0');
    db.pragma('busy_timeout = 5000');
    db.pragma('foreign_keys = ON');
    // Deleted content is overwritten, not left in free pages (docs/decisions/0014-erasure-crypto-shredding.md).
    db.pragma('secure_delete = ON');
    const walSync = new WalSync(`${file}-wal`);
    // What a killed process committed is in the page cache: make it durable before building on it.
    walSync.syncNow();
    // A process that ended before it emptied the WAL after an erasure (requestWalScrub) left the
    // deleted pages in it: copied into the database file and emptied now, before anything else opens it.
    db.pragma('wal_checkpoint(TRUNCATE)');
    attachWalSync(db, walSync);
    // Once the WAL starts again from its beginning, the file shrinks back to this.
    db.pragma(`journal_size_limit = ${walRestartBytes}`);
    let restarting = false;
    let closed = false;
    const checkpointer = startWalCheckpointer(file, {
      restartBytes: walRestartBytes,
      ...(options.checkpointIntervalMs === undefined ? {} : { intervalMs: options.checkpointIntervalMs }),
      ...(options.onCheckpointerEnded ? { onWorkerEnded: options.onCheckpointerEnded } : {}),
      onRestartDue: () => {
        if (restarting) return;
        restarting = true;
        // The write queue is held (no transaction under way) while the worker restarts the WAL.
        void serialised(db, async () => {
          if (!db.open) return;
          const held = performance.now();
          await checkpointer.restart();
          // A restart cut short by close held nothing worth timing.
          if (!closed) walRestartHold.observe((performance.now() - held) / 1000);
        })
          .catch(() => undefined)
          .finally(() => (restarting = false));
      },
    });
    // Emptying the WAL holds the write queue, as a restart does; a reader of an old snapshot makes
    // the worker leave it, and it is tried again.
    let scrubTimer: NodeJS.Timeout | undefined;
    const scheduleScrub = (delayMs = options.walScrubDelayMs ?? WAL_SCRUB_DELAY_MS): void => {
      if (closed || scrubTimer) return;
      scrubTimer = setTimeout(() => {
        scrubTimer = undefined;
        void serialised(db, () => (db.open ? checkpointer.truncate() : true)).then(
          (done) => done || scheduleScrub(),
          () => scheduleScrub(),
        );
      }, delayMs);
      scrubTimer.unref();
    };
    scrubbers.set(db, scheduleScrub);
    checkpointers.set(db, checkpointer);
    return {
      db,
      dataDir: dir,
      close() {
        if (closed) return;
        closed = true;
        clearTimeout(scrubTimer);
        checkpointer.stop();
        db.close();
        unlock();
      },
    };
  } catch (error) {
    unlock();
    throw error;
  }
};
