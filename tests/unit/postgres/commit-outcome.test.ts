/**
 * A COMMIT cut off by the connection may have committed: `inTransaction` says so with
 * `CommitOutcomeUnknownError`, and the PostgreSQL event log answers a publish that met it as one
 * that may have been written (never "nothing was accepted"). Over a fake pool whose COMMIT fails
 * as the test says.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type pg from 'pg';
import { CommitOutcomeUnknownError, inTransaction } from '../../../shared/adapters/postgres/postgres-pool.ts';
import { toEventLogError } from '../../../shared/adapters/event-log/sql-event-log-postgres.ts';
import { EventLogUnavailableError } from '../../../shared/ports/event-log.ts';
import { isRetriablePgError } from '../../../shared/adapters/postgres/pg-errors.ts';

/** A pool of one client whose COMMIT fails with `commitError`; records the statements it ran. */
const poolFailingCommit = (commitError: Error) => {
  const statements: string[] = [];
  const client = {
    on: () => undefined,
    off: () => undefined,
    release: () => undefined,
    query: async (sql: string) => {
      statements.push(sql);
      if (sql === 'COMMIT') throw commitError;
      return { rows: [] };
    },
  };
  const pool = { connect: (callback: (error: Error | undefined, c: unknown) => void) => callback(undefined, client) };
  return { pool: pool as unknown as pg.Pool, statements };
};

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
  const { pool } = poolFailingCommit(withCode('could not serialize access', '40001'));
  const error = await inTransaction(pool, async () => undefined).then(
    () => assert.fail('the transaction cannot succeed'),
    (e: unknown) => e,
  );
  assert.equal(error instanceof CommitOutcomeUnknownError, false);
  const logError = toEventLogError(error);
  assert.ok(logError instanceof EventLogUnavailableError);
  assert.equal(logError.outcomeUnknown, false);
});
