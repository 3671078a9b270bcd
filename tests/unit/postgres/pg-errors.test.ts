import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pg from 'pg';
import { isPgDataError, isRetriablePgError, translatePgError } from '../../../shared/adapters/postgres/pg-errors.ts';
import { DataAtFaultError, isDataAtFault } from '../../../shared/ports/data-at-fault.ts';
import { EventStoreUnavailableError } from '../../../shared/ports/event-store.ts';

/** An error as the server reports it (pg's DatabaseError with a SQLSTATE and a severity). */
const serverError = (code: string, message = `server error ${code}`, severity = 'ERROR') =>
  Object.assign(new pg.DatabaseError(message, message.length, 'error'), { code, severity });
/** The server's refusal of a connection: a FATAL before the session began. */
const refusedAtConnect = (code: string, message: string) => serverError(code, message, 'FATAL');
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

  for (const [code, message] of [
    ['55000', 'database "calls" is not currently accepting connections'],
    ['28P01', 'password authentication failed for user "calls" (a rotated password)'],
    ['28000', 'no pg_hba.conf entry for host "10.0.0.7", user "calls", database "calls"'],
    ['3D000', 'database "calls" does not exist'],
    ['42501', 'permission denied for database "calls" (CONNECT revoked)'],
    ['53300', 'sorry, too many clients already'],
    ['57P03', 'the database system is starting up'],
    ['22023', 'invalid value for parameter "search_path" (a class that would blame the data, at connect)'],
  ]) {
    test(`retriable: SQLSTATE ${code} at connect, severity FATAL (${message})`, () =>
      assert.equal(isRetriablePgError(refusedAtConnect(code!, message!)), true));
  }

  for (const [code, meaning] of [
    ['55000', 'object not in prerequisite state'],
    ['42501', 'insufficient privilege (a grant revoked)'],
    ['57P04', 'database dropped'],
    ['58030', 'I/O error'],
    ['58P01', 'undefined file'],
    ['XX000', 'internal error'],
    ['XX001', 'data corrupted'],
    ['XX002', 'index corrupted'],
    ['F0000', 'configuration file error'],
    ['72000', 'snapshot too old'],
    ['25P02', 'in failed SQL transaction'],
    ['ZZ999', 'a code this classifier never heard of'],
  ]) {
    test(`retriable, the database's state: SQLSTATE ${code} (${meaning})`, () =>
      assert.equal(isRetriablePgError(serverError(code!)), true));
  }

  for (const [code, meaning] of [
    ['22P05', 'untranslatable character (\\u0000 in jsonb)'],
    ['22021', 'character not in repertoire'],
    ['22P02', 'invalid text representation'],
    ['22003', 'numeric value out of range'],
    ['23505', 'unique violation'],
    ['23514', 'check violation'],
  ]) {
    test(`the data's fault, not retriable: SQLSTATE ${code} (${meaning})`, () => {
      assert.equal(isPgDataError(serverError(code!)), true);
      assert.equal(isRetriablePgError(serverError(code!)), false);
    });
  }

  for (const [code, meaning] of [
    ['42P01', 'undefined table'],
    ['42601', 'syntax error'],
    ['42703', 'undefined column'],
    ['0A000', 'feature not supported'],
  ]) {
    test(`a bug in the statement, neither retriable nor the data's: SQLSTATE ${code} (${meaning})`, () => {
      assert.equal(isRetriablePgError(serverError(code!)), false);
      assert.equal(isPgDataError(serverError(code!)), false);
    });
  }

  test('retriable: a TLS failure of the connection, and any failed system call', () => {
    assert.equal(isRetriablePgError(socketError('DEPTH_ZERO_SELF_SIGNED_CERT')), true);
    assert.equal(isRetriablePgError(socketError('ERR_TLS_CERT_ALTNAME_INVALID')), true);
    assert.equal(isRetriablePgError(new Error('The server does not support SSL connections')), true);
    assert.equal(
      isRetriablePgError(Object.assign(new Error('read ENOBUFS'), { code: 'ENOBUFS', syscall: 'read' })),
      true,
    );
  });

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

  test("the server refusing a connection (FATAL 55000) becomes the adapter error: a 503, retried, never the record's fault", () => {
    const cause = refusedAtConnect('55000', 'database "calls" is not currently accepting connections');
    const translated = translatePgError(cause, unavailable);
    assert.ok(translated instanceof EventStoreUnavailableError);
    assert.equal(isDataAtFault(translated), false);
    assert.match(translated.message, /not currently accepting connections/);
  });

  test('values the server refuses become DataAtFaultError, with the cause kept', () => {
    const dataError = serverError('22P05', 'unsupported Unicode escape sequence');
    const translated = translatePgError(dataError, unavailable);
    assert.ok(translated instanceof DataAtFaultError);
    assert.equal(isDataAtFault(translated), true);
    assert.equal(translated.cause, dataError);
    assert.match(translated.message, /unsupported Unicode escape sequence/);
  });

  test('a bug in the statement is returned unchanged', () => {
    const syntax = serverError('42601', 'syntax error at or near "SELEC"');
    assert.equal(translatePgError(syntax, unavailable), syntax);
  });

  test('an error already marked retriable is not wrapped again', () => {
    const already = new EventStoreUnavailableError('down');
    assert.equal(translatePgError(already, unavailable), already);
  });
});
