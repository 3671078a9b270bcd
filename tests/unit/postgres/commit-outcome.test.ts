/**
 * A COMMIT cut off by the connection may have committed: `inTransaction` says so with
 * `CommitOutcomeUnknownError`, and the PostgreSQL event log answers a publish that met it as one
 * that may have been written (never "nothing was accepted"). Over a fake pool whose COMMIT fails
 * as the test says.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type pg from 'pg';
import {
  autocommit,
  CommitOutcomeUnknownError,
  inTransaction,
} from '../../../shared/adapters/postgres/postgres-pool.ts';
import { toEventLogError } from '../../../shared/adapters/event-log/sql-event-log-postgres.ts';
import { EventLogUnavailableError } from '../../../shared/ports/event-log.ts';
import { isRetriablePgError } from '../../../shared/adapters/postgres/pg-errors.ts';

/** A pool of one client whose statement `failing` fails with `error`; records the statements it ran and its releases. */
const poolFailing = (failing: string, error: Error) => {
  const statements: string[] = [];
  const releases: unknown[] = [];
  const client = {
    on: () => undefined,
    off: () => undefined,
    release: (broken?: unknown) => void releases.push(broken),
    query: async (sql: string) => {
      statements.push(sql);
      if (sql === failing) throw error;
      return { rows: [] };
    },
  };
  const pool = { connect: (callback: (error: Error | undefined, c: unknown) => void) => callback(undefined, client) };
  return { pool: pool as unknown as pg.Pool, statements, releases };
};

/** A pool of one client whose COMMIT fails with `commitError`. */
const poolFailingCommit = (commitError: Error) => poolFailing('COMMIT', commitError);

/** `pg`'s error for a statement past its `query_timeout`. */
const queryTimeout = () => new Error('Query read timeout');

const withCode = (message: string, code: string) => Object.assign(new Error(message), { code });

test('a COMMIT cut off by the connection: outcome unknown, still a connection failure; the log says the records may have been written', async () => {
  for (const cut of [withCode('read ECONNRESET', 'ECONNRESET'), new Error('Connection terminated unexpectedly')]) {
    const { pool, statements } = poolFailingCommit(cut);
    const error = await inTransaction(pool, async (client) => client.query('INSERT 1')).then(
      () => assert.fail('the transaction cannot succeed'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof CommitOutcomeUnknownError, String(error));
    assert.deepEqual(statements.slice(0, 3), ['BEGIN', 'INSERT 1', 'COMMIT']);
    assert.equal(isRetriablePgError(error), true, 'classified as the connection failure it is');
    const logError = toEventLogError(error);
    assert.ok(logError instanceof EventLogUnavailableError);
    assert.equal(logError.outcomeUnknown, true);
    assert.match(logError.message, /may have been written/);
  }
});

test('a COMMIT the server refused (rolled back) is not an unknown outcome: nothing was written', async () => {
  for (const refused of [
    withCode('could not serialize access', '40001'),
    // The transaction sat idle past idle_in_transaction_session_timeout (a busy event loop): rolled back.
    withCode('terminating connection due to idle-in-transaction timeout', '25P03'),
  ]) {
    const { pool } = poolFailingCommit(refused);
    const error = await inTransaction(pool, async () => undefined).then(
      () => assert.fail('the transaction cannot succeed'),
      (e: unknown) => e,
    );
    assert.equal(error instanceof CommitOutcomeUnknownError, false, refused.message);
    const logError = toEventLogError(error);
    assert.ok(logError instanceof EventLogUnavailableError, refused.message);
    assert.equal(logError.outcomeUnknown, false);
  }
});

test('a statement past its deadline in a transaction: no ROLLBACK sent behind it, the client destroyed', async () => {
  const { pool, statements, releases } = poolFailing('INSERT 1', queryTimeout());
  const error = await inTransaction(pool, async (client) => client.query('INSERT 1')).then(
    () => assert.fail('the transaction cannot succeed'),
    (e: unknown) => e,
  );
  assert.match(String(error), /Query read timeout/);
  assert.equal(error instanceof CommitOutcomeUnknownError, false, 'no COMMIT was sent: nothing was written');
  assert.deepEqual(statements, ['BEGIN', 'INSERT 1']);
  assert.equal(releases.length, 1);
  assert.ok(releases[0], 'released with the error, so the pool ends the client rather than reusing it');
});

test('a COMMIT past its deadline: outcome unknown, no ROLLBACK, the client destroyed', async () => {
  const { pool, statements, releases } = poolFailingCommit(queryTimeout());
  const error = await inTransaction(pool, async () => undefined).then(
    () => assert.fail('the transaction cannot succeed'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof CommitOutcomeUnknownError, String(error));
  assert.equal(isRetriablePgError(error), true);
  assert.equal((toEventLogError(error) as EventLogUnavailableError).outcomeUnknown, true);
  assert.deepEqual(statements, ['BEGIN', 'COMMIT']);
  assert.ok(releases[0]);
});

test('autocommit: a statement cut off or past its deadline may have committed; a refusal did not', async () => {
  for (const cut of [queryTimeout(), new Error('Connection terminated unexpectedly')]) {
    const { pool, releases } = poolFailing('SELECT append()', cut);
    const error = await autocommit(pool, 'SELECT append()', []).then(
      () => assert.fail('the statement cannot succeed'),
      (e: unknown) => e,
    );
    assert.ok(error instanceof CommitOutcomeUnknownError, String(error));
    assert.ok(releases[0], 'the client is destroyed');
  }
  // The session ended by idle_session_timeout before the statement: it never ran.
  const ended = withCode('terminating connection due to idle-session timeout', '57P05');
  const { pool: endedPool } = poolFailing('SELECT append()', ended);
  assert.equal(await autocommit(endedPool, 'SELECT append()', []).catch((e: unknown) => e), ended);
  const refused = withCode('invalid input syntax', '22P02');
  const { pool } = poolFailing('SELECT append()', refused);
  const error = await autocommit(pool, 'SELECT append()', []).then(
    () => assert.fail('the statement cannot succeed'),
    (e: unknown) => e,
  );
  assert.equal(error, refused);
});

test('autocommit: no client to be had sent nothing, and is thrown as it is', async () => {
  const refused = withCode('connect ECONNREFUSED', 'ECONNREFUSED');
  const pool = {
    connect: (callback: (error: Error | undefined, c: unknown) => void) => callback(refused, undefined),
  } as unknown as pg.Pool;
  const error = await autocommit(pool, 'SELECT 1', []).then(
    () => assert.fail('no client'),
    (e: unknown) => e,
  );
  assert.equal(error, refused);
});
