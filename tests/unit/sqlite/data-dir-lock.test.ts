import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { DataDirLockedError, openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import { tempDir } from '../../support/temp-dir.ts';

test('only one opener of a data directory: a second one is refused with the holder named', () => {
  const dir = tempDir();
  const first = openSqlite(dir.path);
  try {
    assert.throws(
      () => openSqlite(dir.path),
      (error: unknown) =>
        error instanceof DataDirLockedError &&
        error.message.includes(`process ${process.pid}`) &&
        error.message.includes('DATA_DIR'),
    );
  } finally {
    first.close();
    dir.remove();
  }
});

test('closing releases the directory for the next opener', () => {
  const dir = tempDir();
  try {
    openSqlite(dir.path).close();
    openSqlite(dir.path).close();
  } finally {
    dir.remove();
  }
});

test('a lock left by a process that died (kill -9) is taken over', () => {
  const dir = tempDir();
  try {
    // A real process id that no longer runs: a child that has exited.
    const dead = spawnSync(process.execPath, ['-e', '0']).pid;
    writeFileSync(
      join(dir.path, 'LOCK'),
      JSON.stringify({ pid: dead, host: hostname(), since: new Date().toISOString() }),
    );
    const opened = openSqlite(dir.path);
    assert.equal(JSON.parse(readFileSync(join(dir.path, 'LOCK'), 'utf8')).pid, process.pid);
    opened.close();
  } finally {
    dir.remove();
  }
});
