/**
 * Content deleted for an erasure does not stay behind in the WAL: secure_delete overwrites the
 * database file's copy, and the WAL is emptied soon after a request, or at the next open when the
 * process ended before it could.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { openSqlite, requestWalScrub } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import { keyEncryptionKey } from '../../../shared/adapters/crypto/aes-gcm.ts';
import { createSqliteDataKeys } from '../../../shared/adapters/data-keys/sqlite-data-keys.ts';
import { eventually } from '../../support/eventually.ts';
import { tempDir } from '../../support/temp-dir.ts';

const holds = (path: string, needle: Buffer): boolean => existsSync(path) && readFileSync(path).includes(needle);

test('a deleted row is gone from the WAL file soon after a scrub is asked for, and from the database file', async () => {
  const dir = tempDir();
  const opened = openSqlite(dir.path, { walScrubDelayMs: 20 });
  const wal = join(dir.path, 'calls.sqlite-wal');
  const needle = Buffer.from('SECRET-NEEDLE-Zanzibar-0042');
  try {
    const { db } = opened;
    db.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)');
    db.prepare('INSERT INTO notes (body) VALUES (?)').run(needle.toString());
    for (let i = 0; i < 50; i++)
      db.prepare('INSERT INTO notes (body) VALUES (?)').run(`filler ${i} ${'x'.repeat(500)}`);
    db.prepare('DELETE FROM notes WHERE body = ?').run(needle.toString());
    db.prepare('INSERT INTO notes (body) VALUES (?)').run('after');
    assert.ok(holds(wal, needle), 'the WAL holds the row as it was before the delete');
    requestWalScrub(db);
    await eventually(() => assert.ok(!holds(wal, needle), 'the WAL no longer holds the row'), { timeoutMs: 5_000 });
    assert.ok(!holds(join(dir.path, 'calls.sqlite'), needle), 'nor does the database file');
    assert.equal(
      (db.prepare('SELECT count(*) AS n FROM notes').get() as { n: number }).n,
      51,
      'what was not deleted is all there',
    );
  } finally {
    opened.close();
    dir.remove();
  }
});

test("a destroyed data key's wrapped bytes leave the WAL without anything else asking", async () => {
  const dir = tempDir();
  const opened = openSqlite(dir.path, { walScrubDelayMs: 20 });
  const wal = join(dir.path, 'calls.sqlite-wal');
  try {
    const keys = createSqliteDataKeys(opened.db, keyEncryptionKey('a data key secret of at least 32 characters'));
    await keys.obtain('call-1');
    const wrapped = opened.db.prepare('SELECT wrapped FROM data_keys WHERE call_id = ?').get('call-1') as {
      wrapped: Buffer;
    };
    assert.ok(holds(wal, wrapped.wrapped));
    await keys.destroy('call-1');
    await eventually(() => assert.ok(!holds(wal, wrapped.wrapped)), { timeoutMs: 5_000 });
    assert.ok(!holds(join(dir.path, 'calls.sqlite'), wrapped.wrapped));
    await keys.close();
  } finally {
    opened.close();
    dir.remove();
  }
});

test('a WAL left by a process that ended before emptying it is emptied at the next open', () => {
  const dir = tempDir();
  const wal = join(dir.path, 'calls.sqlite-wal');
  const needle = Buffer.from('SECRET-NEEDLE-left-behind-0043');
  try {
    const first = openSqlite(dir.path);
    first.db.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)');
    first.db.prepare('INSERT INTO notes (body) VALUES (?)').run(needle.toString());
    first.db.prepare('DELETE FROM notes').run();
    assert.ok(holds(wal, needle));
    // As a killed process leaves it: the WAL is not checkpointed by a close.
    first.db.pragma('wal_checkpoint(PASSIVE)');
    const copy = readFileSync(wal);
    first.close();
    writeFileSync(wal, copy);
    const second = openSqlite(dir.path);
    try {
      assert.ok(!holds(wal, needle), 'the WAL is empty');
      assert.ok(!holds(join(dir.path, 'calls.sqlite'), needle));
    } finally {
      second.close();
    }
  } finally {
    dir.remove();
  }
});
