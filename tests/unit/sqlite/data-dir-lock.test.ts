import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
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

test('while open, the lock leaves only LOCK and LOCK.sqlite beside the database files', () => {
  const dir = tempDir();
  const opened = openSqlite(dir.path);
  try {
    assert.deepEqual(
      readdirSync(dir.path)
        .filter((name) => name.startsWith('LOCK'))
        .sort(),
      ['LOCK', 'LOCK.sqlite'],
    );
  } finally {
    opened.close();
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

test("a lock file naming a live process that does not hold the directory is taken over: the id of a crashed holder reused, by this very process or another host's", () => {
  const dir = tempDir();
  try {
    // A container's PID 1 killed and started again on the same volume finds its own id in LOCK.
    for (const holder of [
      { pid: process.pid, host: hostname() },
      { pid: 1, host: 'another-host' },
    ]) {
      writeFileSync(join(dir.path, 'LOCK'), JSON.stringify({ ...holder, since: new Date().toISOString() }));
      const opened = openSqlite(dir.path);
      assert.equal(JSON.parse(readFileSync(join(dir.path, 'LOCK'), 'utf8')).pid, process.pid);
      opened.close();
    }
  } finally {
    dir.remove();
  }
});

test('a holder in another process keeps the directory while it runs, and loses it the moment it is killed (kill -9)', async () => {
  const dir = tempDir();
  const holder = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      '-e',
      `import('${new URL('../../../shared/adapters/sqlite/sqlite-database.ts', import.meta.url).pathname}').then((m) => { m.openSqlite(${JSON.stringify(dir.path)}); console.log('held'); setInterval(() => {}, 1000); })`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    const [line] = (await once(holder.stdout, 'data')) as [Buffer];
    assert.match(line.toString(), /held/);
    assert.throws(
      () => openSqlite(dir.path),
      (error: unknown) => error instanceof DataDirLockedError && error.message.includes(`process ${holder.pid}`),
    );
    holder.kill('SIGKILL');
    await once(holder, 'exit');
    const opened = openSqlite(dir.path);
    opened.close();
  } finally {
    holder.kill('SIGKILL');
    dir.remove();
  }
});

test('the first start with the kernel lock refuses a directory an earlier version still runs on (named in LOCK alone), and takes it once that process is gone', async () => {
  const dir = tempDir();
  // An earlier version's holder: a live Node.js process named in LOCK, no LOCK.sqlite.
  const earlier = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  try {
    writeFileSync(
      join(dir.path, 'LOCK'),
      JSON.stringify({ pid: earlier.pid, host: hostname(), since: new Date().toISOString() }),
    );
    for (let attempt = 0; attempt < 2; attempt++)
      assert.throws(
        () => openSqlite(dir.path),
        (error: unknown) =>
          error instanceof DataDirLockedError &&
          error.message.includes(`process ${earlier.pid}`) &&
          error.message.includes('earlier version'),
      );
    earlier.kill('SIGKILL');
    await once(earlier, 'exit');
    const opened = openSqlite(dir.path);
    assert.equal(JSON.parse(readFileSync(join(dir.path, 'LOCK'), 'utf8')).pid, process.pid);
    opened.close();
  } finally {
    earlier.kill('SIGKILL');
    dir.remove();
  }
});
