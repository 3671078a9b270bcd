import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import {
  isRetriableSqliteError,
  isSqliteDataError,
  translateSqliteError,
} from '../../../shared/adapters/sqlite/sqlite-errors.ts';
import { DataAtFaultError, isDataAtFault } from '../../../shared/ports/data-at-fault.ts';
import { EventStoreUnavailableError } from '../../../shared/ports/event-store.ts';
import { isRetriableError } from '../../../shared/ports/unavailable.ts';
import { tempDir } from '../../support/temp-dir.ts';

/** Two connections on one file: `holder` takes the write lock, `db` gives up at once when busy. */
const lockedDatabase = () => {
  const dir = tempDir();
  const file = join(dir.path, 'db.sqlite');
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 0');
  const holder = new Database(file);
  return {
    db,
    lock: () => holder.exec('BEGIN IMMEDIATE'),
    unlock: () => holder.exec('ROLLBACK'),
    close() {
      holder.close();
      db.close();
      dir.remove();
    },
  };
};

test('SQLITE_BUSY (another connection holds the write lock) is retriable; a constraint violation is not', () => {
  const files = lockedDatabase();
  try {
    files.db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY)');
    files.db.exec('INSERT INTO t VALUES (1)');
    const duplicate = (() => {
      try {
        files.db.exec('INSERT INTO t VALUES (1)');
      } catch (error) {
        return error;
      }
    })();
    assert.match(String((duplicate as { code?: string }).code), /^SQLITE_CONSTRAINT/);
    assert.equal(isRetriableSqliteError(duplicate), false);

    files.lock();
    const busy = (() => {
      try {
        files.db.exec('INSERT INTO t VALUES (2)');
      } catch (error) {
        return error;
      }
    })();
    assert.match(String((busy as { code?: string }).code), /^SQLITE_BUSY/);
    assert.equal(isRetriableSqliteError(busy), true);
  } finally {
    files.close();
  }
});

test('the SQLite event store answers a busy database with a retriable EventStoreUnavailableError, and appends once the lock is gone', async () => {
  const files = lockedDatabase();
  const store = createSqliteEventStore(files.db);
  try {
    files.lock();
    const error = await store.append('s-1', [{ type: 'Happened', data: {} }]).catch((e: unknown) => e);
    assert.ok(error instanceof EventStoreUnavailableError, String(error));
    assert.equal(isRetriableError(error), true);
    files.unlock();
    const appended = await store.append('s-1', [{ type: 'Happened', data: {} }], { expectedVersion: 'no_stream' });
    assert.equal(appended.nextExpectedVersion, 0);
  } finally {
    await store.close();
    files.close();
  }
});

test('faults of the machine, not of the statement, are retriable: a full, failing or read-only disk, a file that cannot be opened or is damaged, memory, a closed database', () => {
  const coded = (code: string) => Object.assign(new Error(code), { code });
  for (const code of [
    'SQLITE_FULL',
    'SQLITE_IOERR',
    'SQLITE_IOERR_WRITE',
    'SQLITE_IOERR_FSYNC',
    'SQLITE_CANTOPEN',
    'SQLITE_NOMEM',
    'SQLITE_READONLY',
    'SQLITE_READONLY_DBMOVED',
    'SQLITE_CORRUPT',
    'SQLITE_NOTADB',
    'SQLITE_PROTOCOL',
    'SQLITE_INTERRUPT',
    'SQLITE_BUSY_SNAPSHOT',
    'SQLITE_LOCKED_SHAREDCACHE',
    'SQLITE_SOMETHING_NEW',
  ]) {
    assert.equal(isRetriableSqliteError(coded(code)), true, code);
    assert.equal(isSqliteDataError(coded(code)), false, code);
  }
  for (const code of ['SQLITE_CONSTRAINT_PRIMARYKEY', 'SQLITE_CONSTRAINT_CHECK', 'SQLITE_MISMATCH', 'SQLITE_TOOBIG']) {
    assert.equal(isRetriableSqliteError(coded(code)), false, code);
    assert.equal(isSqliteDataError(coded(code)), true, code);
  }
  for (const code of ['SQLITE_ERROR', 'SQLITE_MISUSE', 'SQLITE_RANGE']) {
    assert.equal(isRetriableSqliteError(coded(code)), false, code);
    assert.equal(isSqliteDataError(coded(code)), false, code);
  }
  const db = new Database(':memory:');
  db.close();
  const closed = (() => {
    try {
      db.exec('SELECT 1');
    } catch (error) {
      return error;
    }
  })();
  assert.equal(isRetriableSqliteError(closed), true, String(closed));
});

test('translated: a fault of the machine is the adapter error, refused values are DataAtFaultError, a bug passes unchanged', () => {
  const unavailable = (message: string, cause: unknown) => new EventStoreUnavailableError(message, { cause });
  const coded = (code: string) => Object.assign(new Error(`${code} (test)`), { code });
  for (const code of ['SQLITE_IOERR_WRITE', 'SQLITE_FULL', 'SQLITE_CANTOPEN', 'SQLITE_NOMEM', 'SQLITE_READONLY']) {
    const translated = translateSqliteError(coded(code), unavailable);
    assert.ok(translated instanceof EventStoreUnavailableError, code);
    assert.equal(isDataAtFault(translated), false, code);
  }
  const refused = translateSqliteError(coded('SQLITE_CONSTRAINT_CHECK'), unavailable);
  assert.ok(refused instanceof DataAtFaultError);
  assert.equal(isDataAtFault(refused), true);
  const bug = coded('SQLITE_ERROR');
  assert.equal(translateSqliteError(bug, unavailable), bug);
});
