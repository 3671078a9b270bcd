/**
 * WAL checkpoints of the embedded database on a connection of their own, in a worker thread
 * (docs/decisions/0015-embedded-durability-off-the-event-loop.md). SQLite's automatic checkpoint
 * runs inside the COMMIT that crosses its threshold, on the committing connection: copying the
 * WAL's pages into the database and two fsyncs, on the event loop. The write connection turns it
 * off (`wal_autocheckpoint = 0`) and this worker checkpoints instead (PASSIVE: never blocks the
 * writer or a reader) every `intervalMs`. The writer restarts the
 * WAL from its beginning once a checkpoint has copied all of it, as with automatic checkpoints.
 *
 * Its script is plain JavaScript because workers do not inherit the TypeScript loader.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

export interface WalCheckpointer {
  /** Asks the worker to close its connection and end; returns at once. */
  stop(): void;
}

const WORKER = `
  const { parentPort, workerData } = require('node:worker_threads');
  const Database = require(workerData.driver);
  const db = new Database(workerData.path, { fileMustExist: true });
  db.pragma('busy_timeout = 5000');
  db.pragma('synchronous = FULL');
  // A checkpoint copies pages from the WAL to the file; it needs little cache of its own.
  db.pragma('cache_size = -512');
  const timer = setInterval(() => {
    try {
      // Copies what the WAL holds beyond the last checkpoint; nothing to do costs a read of the WAL index.
      db.pragma('wal_checkpoint(PASSIVE)');
    } catch {
      // Busy or locked: the next tick tries again.
    }
  }, workerData.intervalMs);
  parentPort.on('message', (message) => {
    if (message.stop) {
      clearInterval(timer);
      db.close();
      parentPort.close();
    }
  });
`;

/** Starts checkpointing the database file at `path` every `intervalMs`. */
export const startWalCheckpointer = (path: string, { intervalMs = 250 } = {}): WalCheckpointer => {
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: { driver: createRequire(import.meta.url).resolve('better-sqlite3'), path, intervalMs },
    // It holds almost nothing: a small heap keeps the process's memory at rest low.
    resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 12 },
  });
  // Never what keeps the process alive.
  worker.unref();
  worker.on('error', () => undefined);
  let stopped = false;
  return {
    stop() {
      if (stopped) return;
      stopped = true;
      worker.postMessage({ stop: true });
    },
  };
};
