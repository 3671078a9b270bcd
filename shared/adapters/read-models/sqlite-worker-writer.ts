/**
 * Write transactions on a SQLite connection of their own, in a worker thread: a rebuild's long
 * writes run beside the event loop instead of blocking it, and a replay folds its next window
 * while the last one is written. better-sqlite3 is synchronous, so on the caller's connection a
 * write of 50,000 events' rows stops the process for its whole length.
 *
 * The worker only executes: the caller decides every statement and parameter (row numbers
 * included, so nothing needs to come back) and sends them as flat lists, which cost little to copy
 * between threads. A transaction travels in parts: the worker runs one while the caller prepares
 * the next, and commits after the last (a failure rolls everything back). Its script is plain
 * JavaScript because workers do not inherit the TypeScript loader; its loop is runStatements. A
 * database without a file (`:memory:`) has no second connection: the transactions run on the
 * caller's.
 *
 * SQLite has one writer at a time. Callers hold the connection's queue (`serialised`) while a write
 * runs here, so writers on the shared connection wait their turn instead of busy-waiting for this
 * one's lock.
 */
import type Database from 'better-sqlite3';
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { SqliteDb } from '../sqlite/sqlite-database.ts';

/** One statement run once per `arity` parameters of `params`. */
export interface StatementRuns {
  sql: string;
  arity: number;
  params: Array<string | number | null>;
}

/** What one transaction does, in order. */
export interface WriteTransaction {
  /** Runs first: unless it returns a row, the transaction fails with Error(message). */
  guard: { sql: string; params: Array<string | number>; message: string };
  /** The statements, in parts made one at a time as the transaction goes. */
  readonly parts: () => Iterable<StatementRuns[]>;
}

export interface SqliteWorkerWriter {
  /** Runs `transaction` (BEGIN IMMEDIATE … COMMIT); rejects when it fails or the writer is closed. */
  write(transaction: WriteTransaction): Promise<void>;
  /** Closes the connection and ends the worker; later writes reject. */
  close(): Promise<void>;
  /** True once closed or failed: open another to write again. */
  readonly closed: boolean;
}

type Prepare = (sql: string) => Database.Statement<unknown[]>;

/** Runs each statement once per `arity` of its parameters, in order; `prepare` gives a statement for its SQL. */
export const runStatements = (prepare: Prepare, runs: readonly StatementRuns[]): void => {
  for (const { sql, arity, params } of runs) {
    const statement = prepare(sql);
    for (let i = 0; i < params.length; i += arity) statement.run(params.slice(i, i + arity));
  }
};

/** Prepares each SQL text once. */
export const statementCache = (db: SqliteDb): Prepare => {
  const statements = new Map<string, Database.Statement<unknown[]>>();
  return (sql) => {
    let statement = statements.get(sql);
    if (!statement) {
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
};

/**
 * The worker: per transaction id, `begin` (BEGIN IMMEDIATE and the guard), `part`s (runStatements)
 * and `commit`, which answers; after a failure it rolls back, skips the rest and answers with it.
 */
const WORKER = `
  const { parentPort, workerData } = require('node:worker_threads');
  const Database = require(workerData.driver);
  const db = new Database(workerData.path, { fileMustExist: true });
  db.pragma('busy_timeout = 5000');
  db.pragma('synchronous = FULL');
  db.pragma('secure_delete = ON');
  const statements = new Map();
  const prepare = (sql) => {
    let statement = statements.get(sql);
    if (!statement) {
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
  let failed;
  const step = (work) => {
    if (failed) return;
    try {
      work();
    } catch (error) {
      failed = { message: error.message, code: error.code };
      if (db.inTransaction) db.exec('ROLLBACK');
    }
  };
  parentPort.on('message', (message) => {
    if (message.close) {
      db.close();
      parentPort.close();
    } else if (message.begin) {
      failed = undefined;
      step(() => {
        db.exec('BEGIN IMMEDIATE');
        const { sql, params, message: refusal } = message.begin;
        if (prepare(sql).get(params) === undefined) throw new Error(refusal);
      });
    } else if (message.part) {
      step(() => {
        for (const { sql, arity, params } of message.part) {
          const statement = prepare(sql);
          for (let i = 0; i < params.length; i += arity) statement.run(params.slice(i, i + arity));
        }
      });
    } else if (message.commit) {
      step(() => db.exec('COMMIT'));
      parentPort.postMessage(failed ? { id: message.id, error: failed } : { id: message.id });
    } else if (message.abort) {
      step(() => {
        throw new Error('aborted');
      });
    }
  });
`;

const closedError = () => new Error('the SQLite writer is closed');

/** A writer beside `db`, on the same database file (on `db` itself when it has none). */
export const openSqliteWorkerWriter = (db: SqliteDb): SqliteWorkerWriter =>
  db.memory ? inThreadWriter(db) : workerWriter(db);

const inThreadWriter = (db: SqliteDb): SqliteWorkerWriter => {
  const prepare = statementCache(db);
  const execute = db.transaction(({ guard, parts }: WriteTransaction) => {
    if (prepare(guard.sql).get(guard.params) === undefined) throw new Error(guard.message);
    for (const runs of parts()) runStatements(prepare, runs);
  });
  let closed = false;
  return {
    async write(transaction) {
      if (closed) throw closedError();
      execute.immediate(transaction);
    },
    async close() {
      closed = true;
    },
    get closed() {
      return closed;
    },
  };
};

const workerWriter = (db: SqliteDb): SqliteWorkerWriter => {
  const worker = new Worker(WORKER, {
    eval: true,
    workerData: { driver: createRequire(import.meta.url).resolve('better-sqlite3'), path: db.name },
  });
  // An idle writer never keeps the process alive; one with writes in flight does.
  worker.unref();
  const waiting = new Map<number, { resolve: () => void; reject: (error: Error) => void }>();
  let nextId = 0;
  let failure: Error | undefined;
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  const failAll = (error: Error) => {
    failure ??= error;
    for (const { reject } of waiting.values()) reject(failure);
    waiting.clear();
    worker.unref();
  };
  worker.on('message', ({ id, error }: { id: number; error?: { message: string; code?: string } }) => {
    const pending = waiting.get(id);
    if (!pending) return;
    waiting.delete(id);
    if (waiting.size === 0) worker.unref();
    if (error)
      pending.reject(Object.assign(new Error(error.message), error.code === undefined ? {} : { code: error.code }));
    else pending.resolve();
  });
  worker.on('error', (error: Error) => failAll(error));
  worker.on('exit', () => failAll(closedError()));
  return {
    write({ guard, parts }) {
      if (failure) return Promise.reject(failure);
      const id = nextId++;
      const answered = new Promise<void>((resolve, reject) => waiting.set(id, { resolve, reject }));
      worker.ref();
      worker.postMessage({ id, begin: guard });
      try {
        for (const part of parts()) worker.postMessage({ id, part });
      } catch (error) {
        // The parts could not be made: nothing of them commits.
        worker.postMessage({ id, abort: true });
        worker.postMessage({ id, commit: true });
        return answered.then(
          () => Promise.reject(error),
          () => Promise.reject(error),
        );
      }
      worker.postMessage({ id, commit: true });
      return answered;
    },
    async close() {
      if (!failure) {
        failure = closedError();
        worker.ref(); // until it has exited
        worker.postMessage({ close: true });
      }
      await exited;
    },
    get closed() {
      return failure !== undefined;
    },
  };
};
