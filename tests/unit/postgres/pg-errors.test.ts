import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pg from 'pg';
import { isRetriablePgError, translatePgError } from '../../../shared/adapters/postgres/pg-errors.ts';
import { EventStoreUnavailableError } from '../../../shared/ports/event-store.ts';

/** An error as the server reports it (pg's DatabaseError with a SQLSTATE). */
const serverError = (code: string, message = `server error ${code}`) =>
  Object.assign(new pg.DatabaseError(message, message.length, 'error'), { code });
/** A socket error as Node.js reports it. */
const socketError = (code: string) => Object.assign(new Error(`connect ${code} 127.0.0.1:5432`), { code });

describe('PostgreSQL error classifier', () => {
  for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN']) {
    test(`retriable: socket error ${code}`, () => assert.equal(isRetriablePgError(socketError(code)), true));
  }

  for (const [code, meaning] of [
    ['08000', 'connection exception'],
    ['08006', 'connection failure'],
    ['08P01', 'protocol violation'],
    ['57P01', 'admin shutdown (pg_terminate_backend)'],
    ['57P02', 'crash shutdown'],
    ['57P03', 'cannot connect now'],
    ['57P05', 'idle session timeout (idle_session_timeout ended the session)'],
    ['25P03', 'idle in transaction session timeout (the transaction was rolled back)'],
    ['53000', 'insufficient resources'],
    ['53100', 'disk full'],
    ['53300', 'too many connections'],
    ['25006', 'read-only transaction (a demoted primary after a failover)'],
    ['57014', 'query canceled (statement timeout)'],
    ['55P03', 'lock not available (lock timeout)'],
    ['40001', 'serialization failure'],
    ['40P01', 'deadlock detected'],
  ]) {
    test(`retriable: SQLSTATE ${code} (${meaning})`, () => assert.equal(isRetriablePgError(serverError(code!)), true));
  }

  for (const message of [
    'Connection terminated unexpectedly',
    'Connection terminated due to connection timeout',
    'timeout exceeded when trying to connect',
    'Query read timeout',
    'Client has encountered a connection error and is not queryable',
    'Client was closed and is not queryable',
    'Cannot use a pool after calling end on the pool',
  ]) {
    test(`retriable: pg's "${message}"`, () => assert.equal(isRetriablePgError(new Error(message)), true));
  }

  test('retriable: an AggregateError of connection attempts (IPv6 and IPv4 both refused)', () => {
    assert.equal(
      isRetriablePgError(new AggregateError([socketError('ECONNREFUSED'), socketError('ECONNREFUSED')], '')),
      true,
    );
  });

  for (const [code, meaning] of [
    ['22P05', 'untranslatable character (\\u0000 in jsonb)'],
    ['22021', 'character not in repertoire'],
    ['23505', 'unique violation'],
    ['42P01', 'undefined table'],
    ['42601', 'syntax error'],
    ['57P04', 'database dropped'],
  ]) {
    test(`not retriable: SQLSTATE ${code} (${meaning})`, () =>
      assert.equal(isRetriablePgError(serverError(code!)), false));
  }

  test('not retriable: a plain bug, and things that are not errors', () => {
    assert.equal(isRetriablePgError(new TypeError("Cannot read properties of undefined (reading 'rows')")), false);
    assert.equal(isRetriablePgError(undefined), false);
    assert.equal(isRetriablePgError('Connection terminated'), false);
  });

  test('a real refused connection is classified retriable', async () => {
    const client = new pg.Client({
      connectionString: 'postgres://postgres@127.0.0.1:1/none',
      connectionTimeoutMillis: 2000,
    });
    client.on('error', () => undefined);
    const error = await client.connect().then(
      () => undefined,
      (e: unknown) => e,
    );
    await client.end().catch(() => undefined);
    assert.ok(error, 'connecting to port 1 should fail');
    assert.equal(isRetriablePgError(error), true, (error as Error).message);
  });
});

describe('translatePgError', () => {
  const unavailable = (message: string, cause: unknown) => new EventStoreUnavailableError(message, { cause });

  test('a retriable failure becomes the adapter error, with the cause kept', () => {
    const cause = serverError('57P01', 'terminating connection due to administrator command');
    const translated = translatePgError(cause, unavailable);
    assert.ok(translated instanceof EventStoreUnavailableError);
    assert.equal(translated.retriable, true);
    assert.equal(translated.cause, cause);
    assert.match(translated.message, /administrator command/);
  });

  test('anything else is returned unchanged', () => {
    const dataError = serverError('22P05', 'unsupported Unicode escape sequence');
    assert.equal(translatePgError(dataError, unavailable), dataError);
  });

  test('an error already marked retriable is not wrapped again', () => {
    const already = new EventStoreUnavailableError('down');
    assert.equal(translatePgError(already, unavailable), already);
  });
});
