/**
 * WAL checkpoints of the embedded database on a connection of their own, in a worker thread
 * (docs/decisions/0015-embedded-durability-off-the-event-loop.md). SQLite's automatic checkpoint
 * runs inside the COMMIT that crosses its threshold, on the committing connection: copying the
 * WAL's pages into the database and two fsyncs, on the event loop. The write connection turns it
 * off (`wal_autocheckpoint = 0`) and this worker checkpoints instead (PASSIVE: never blocks the
 * writer or a reader) every `intervalMs`. The writer restarts the
 * WAL from its beginning once a checkpoint has copied all of it, as with automatic checkpoints.
 *
 * Under a steady load that never happens by itself: a commit lands between any PASSIVE checkpoint
 * and the next write, so the WAL grew without end (about 2 GB in 30 s at full load on 2 cores),
 * and every page read searched a longer WAL index. So when a PASSIVE checkpoint finds more than
 * `restartBytes` in the WAL, the worker calls `onRestartDue` in the writer's thread, which holds
 * its write queue (no write transaction under way) while the worker finishes the checkpoint with
 * RESTART (`restart`): only what was written since the last checkpoint is left to copy, and the
 * copy and the database file's fsync run in the worker, not on the event loop (on the writer's
 * thread they took about 3 % of its time at full load).
 *
 * Its script is plain JavaScript because workers do not inherit the TypeScript loader.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

export interface WalCheckpointer {
  /**
   * Finishes a checkpoint in the worker and makes the next write start the WAL from its beginning
   * (RESTART), unless another connection is mid-checkpoint or reading an old snapshot: then it
   * leaves it to the next time. The worker waits for no lock. Call it while no write transaction
   * of this process is under way (in the connection's write queue). Resolves when done, or after
   * `RESTART_WAIT_MS` when the worker does not answer.
   */
  restart(): Promise<void>;
  /**
   * As `restart`, then empties the WAL file (TRUNCATE): no earlier frame stays in it, so what a
   * deletion removed from the database is not left behind in the WAL either. Resolves true when
   * done, false when the worker had to leave it (another connection reading an old snapshot, or
   * no answer within `RESTART_WAIT_MS`).
   */
  truncate(): Promise<boolean>;
  /** Asks the worker to close its connection and end; returns at once. */
  stop(): void;
  /**
   * Why no checkpoint is being made: the worker ended, and the one started again in its place has
   * not checkpointed yet. Undefined while checkpoints run.
   */
  readonly failure: Error | undefined;
}

/** The first pause before a worker that ended is started again; it doubles up to 30 s. */
const RESPAWN_FIRST_MS = 1_000;
const RESPAWN_MAX_MS = 30_000;

/** How long `restart` waits for the worker's answer before the writer goes on anyway. */
const RESTART_WAIT_MS = 5_000;

const WORKER = `
  const { parentPort, workerData } = require('node:worker_threads');
  const Database = require(workerData.driver);
  const db = new Database(workerData.path, { fileMustExist: true });
  db.pragma('busy_timeout = 5000');
  db.pragma('synchronous = FULL');
  // A checkpoint copies pages from the WAL to the file; it needs little cache of its own.
  db.pragma('cache_size = -512');
  // A WAL frame is a page and its 24-byte header.
  const frameBytes = db.pragma('page_size', { simple: true }) + 24;
  let checkpointed = false;
  const timer = setInterval(() => {
    try {
      // Copies what the WAL holds beyond the last checkpoint; nothing to do costs a read of the WAL index.
      const [{ log }] = db.pragma('wal_checkpoint(PASSIVE)');
      // The first one says the worker works (one that ended before it is then forgotten).
      if (!checkpointed) parentPort.postMessage({ working: true });
      checkpointed = true;
      if (log * frameBytes > workerData.restartBytes) parentPort.postMessage({ restartDue: true });
    } catch {
      // Busy or locked: the next tick tries again.
    }
  }, workerData.intervalMs);
  parentPort.on('message', (message) => {
    if (message.checkpoint !== undefined) {
      db.pragma('busy_timeout = 0');
      let done = false;
      try {
        const [{ busy }] = db.pragma(message.mode === 'TRUNCATE' ? 'wal_checkpoint(TRUNCATE)' : 'wal_checkpoint(RESTART)');
        done = busy === 0;
      } catch {
        // Busy: the next time it is due.
      } finally {
        db.pragma('busy_timeout = 5000');
      }
      parentPort.postMessage({ checkpointed: message.checkpoint, done });
    }
    if (message.stop) {
      clearInterval(timer);
      db.close();
      parentPort.close();
    }
  });
`;

/** The WAL is started again from its beginning once it holds more than this (see above). */
export const WAL_RESTART_BYTES = 64 * 1024 * 1024;

/**
 * Starts checkpointing the database file at `path` every `intervalMs` (50 ms). A restart copies,
 * while the writes are held, what was written since the last checkpoint: the interval bounds the
 * hold. At 250 ms the holds took up to 25–50 ms at 400 calls/s; at 50 ms, up to 10–25 ms
 * (docs/performance.md, "The WAL's restarts held the writes").
 */
export const startWalCheckpointer = (
  path: string,
  {
    intervalMs = 50,
    restartBytes = WAL_RESTART_BYTES,
    onRestartDue = () => {},
    onWorkerEnded = () => {},
  }: {
    intervalMs?: number;
    restartBytes?: number;
    onRestartDue?: () => void;
    /** The worker ended without being asked to (an error in it, its heap limit): it starts again in `restartInMs`. */
    onWorkerEnded?: (error: Error, restartInMs: number) => void;
  } = {},
): WalCheckpointer => {
  const checkpoints = new Map<number, (done: boolean) => void>();
  let nextCheckpoint = 0;
  let stopped = false;
  let failure: Error | undefined;
  let failures = 0;
  let respawn: NodeJS.Timeout | undefined;
  /** A checkpoint under way ends with its worker: its caller's hold ends now, not at its timeout. */
  const abandonCheckpoints = () => {
    for (const finish of [...checkpoints.values()]) finish(false);
  };

  /** The worker now checkpointing, or undefined between one that ended and the next. */
  let worker: Worker | undefined;
  const spawn = () => {
    const started = Date.now();
    let lastError: Error | undefined;
    const current = new Worker(WORKER, {
      eval: true,
      workerData: { driver: createRequire(import.meta.url).resolve('better-sqlite3'), path, intervalMs, restartBytes },
      // It holds almost nothing: a small heap keeps the process's memory at rest low.
      resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 12 },
    });
    // Never what keeps the process alive.
    current.unref();
    current.on('error', (error: Error) => {
      lastError = error;
    });
    current.on(
      'message',
      (message: { working?: boolean; restartDue?: boolean; checkpointed?: number; done?: boolean }) => {
        if (message.working) failure = undefined;
        if (message.restartDue) onRestartDue();
        if (message.checkpointed !== undefined) checkpoints.get(message.checkpointed)?.(message.done === true);
      },
    );
    current.on('exit', (code) => {
      if (worker === current) worker = undefined;
      abandonCheckpoints();
      if (stopped) return;
      // Without checkpoints the WAL grows without end (the writer makes none): started again, with
      // a growing pause while it keeps ending at once, and reported meanwhile (failure).
      failure = lastError ?? new Error(`the WAL checkpointer's worker ended with exit code ${code}`);
      failures = Date.now() - started > 60_000 ? 1 : failures + 1;
      const delayMs = Math.min(RESPAWN_MAX_MS, RESPAWN_FIRST_MS * 2 ** (failures - 1));
      onWorkerEnded(failure, delayMs);
      respawn = setTimeout(() => {
        respawn = undefined;
        if (!stopped) spawn();
      }, delayMs);
      respawn.unref();
    });
    worker = current;
  };
  spawn();

  const checkpoint = (mode: 'RESTART' | 'TRUNCATE'): Promise<boolean> => {
    // No worker (between one that ended and the next): nothing to wait for.
    if (stopped || !worker) return Promise.resolve(false);
    const id = nextCheckpoint++;
    const target = worker;
    return new Promise<boolean>((resolve) => {
      const finish = (done: boolean) => {
        clearTimeout(timer);
        checkpoints.delete(id);
        resolve(done);
      };
      const timer = setTimeout(() => finish(false), RESTART_WAIT_MS);
      checkpoints.set(id, finish);
      target.postMessage({ checkpoint: id, mode });
    });
  };
  return {
    async restart() {
      await checkpoint('RESTART');
    },
    truncate: () => checkpoint('TRUNCATE'),
    stop() {
      if (stopped) return;
      stopped = true;
      clearTimeout(respawn);
      worker?.postMessage({ stop: true });
      abandonCheckpoints();
    },
    get failure() {
      return failure;
    },
  };
};
