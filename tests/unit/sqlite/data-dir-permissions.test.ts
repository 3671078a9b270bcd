import assert from 'node:assert/strict';
import { statSync, mkdirSync, chmodSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import { checkSecrets } from '../../../services/runtime/secrets.ts';
import { ConfigError, loadConfig } from '../../../shared/config.ts';
import { tempDir } from '../../support/temp-dir.ts';

const mode = (path: string) => statSync(path).mode & 0o777;

test('the embedded database holds every transcript: a DATA_DIR it creates is 0700, the database and its WAL 0600', () => {
  const dir = tempDir();
  try {
    const dataDir = join(dir.path, 'data');
    const opened = openSqlite(dataDir);
    opened.db.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1)');
    assert.equal(mode(dataDir), 0o700);
    assert.equal(mode(join(dataDir, 'calls.sqlite')), 0o600);
    assert.equal(mode(join(dataDir, 'calls.sqlite-wal')), 0o600);
    opened.close();
  } finally {
    dir.remove();
  }
});

test('a database file left readable by others is made 0600 on open; an existing directory keeps its mode', () => {
  const dir = tempDir();
  try {
    const dataDir = join(dir.path, 'shared');
    mkdirSync(dataDir, { mode: 0o755 });
    chmodSync(dataDir, 0o755);
    openSqlite(dataDir).close();
    chmodSync(join(dataDir, 'calls.sqlite'), 0o644);
    openSqlite(dataDir).close();
    assert.equal(mode(join(dataDir, 'calls.sqlite')), 0o600);
    assert.equal(mode(dataDir), 0o755);
  } finally {
    dir.remove();
  }
});

test('on a shared database, missing secrets are refused before any service starts, naming the variable', () => {
  const base = { DATABASE_URL: 'postgres://x@127.0.0.1/db' };
  assert.throws(
    () => checkSecrets(loadConfig(base)),
    (e) => e instanceof ConfigError && /ADMIN_TOKEN/.test(e.message),
  );
  assert.throws(
    () => checkSecrets(loadConfig({ ...base, ADMIN_TOKEN: 'a'.repeat(32) })),
    (e) => e instanceof ConfigError && /API_KEY_SECRET/.test(e.message),
  );
  assert.throws(
    () => checkSecrets(loadConfig({ ...base, ADMIN_TOKEN: 'a'.repeat(32), API_KEY_SECRET: 's'.repeat(32) })),
    (e) => e instanceof ConfigError && /DATA_KEY_SECRET/.test(e.message),
  );
  assert.doesNotThrow(() =>
    checkSecrets(
      loadConfig({
        ...base,
        ADMIN_TOKEN: 'a'.repeat(32),
        API_KEY_SECRET: 's'.repeat(32),
        DATA_KEY_SECRET: 'd'.repeat(32),
      }),
    ),
  );
  assert.doesNotThrow(() => checkSecrets(loadConfig({})), 'the embedded default generates them');
});
