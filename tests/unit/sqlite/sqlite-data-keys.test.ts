import assert from 'node:assert/strict';
import { test } from 'node:test';
import { keyEncryptionKey } from '../../../shared/adapters/crypto/aes-gcm.ts';
import { createSqliteDataKeys } from '../../../shared/adapters/data-keys/sqlite-data-keys.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import { walSyncOf } from '../../../shared/adapters/sqlite/wal-sync.ts';
import { settled } from '../../support/deferred.ts';
import { tempDir } from '../../support/temp-dir.ts';
import { isBackendUnavailable, isRetriableError } from '../../../shared/ports/unavailable.ts';

const opened = () => {
  const dir = tempDir('sqlite-data-keys-');
  const sqlite = openSqlite(dir.path);
  const keys = createSqliteDataKeys(sqlite.db, keyEncryptionKey('a data key secret of at least 32 characters'));
  return {
    keys,
    db: sqlite.db,
    async close() {
      await keys.close();
      sqlite.close();
      dir.remove();
    },
  };
};

test('concurrent first obtains of one call (one write batch) all get the key that was stored', async () => {
  const files = opened();
  try {
    const obtained = await Promise.all([1, 2, 3].map(() => files.keys.obtain('call-1')));
    const stored = await files.keys.find('call-1');
    assert.ok(stored && stored.length === 32);
    for (const key of obtained) assert.deepEqual(key, stored);
    assert.deepEqual(await files.keys.obtain('call-1'), stored, 'a later obtain reads the same key');
    assert.notDeepEqual(await files.keys.obtain('call-2'), stored, 'another call gets its own key');
  } finally {
    await files.close();
  }
});

test('a destroyed key is not made again: obtain after destroy gives no key', async () => {
  const files = opened();
  try {
    assert.ok(await files.keys.obtain('call-1'));
    await files.keys.destroy('call-1');
    assert.equal(await files.keys.obtain('call-1'), undefined);
    await files.keys.destroy('never-made');
    assert.equal(await files.keys.obtain('never-made'), undefined, 'a tombstone written first also stays');
  } finally {
    await files.close();
  }
});

test('obtain gives the key another store made (it is read on the write connection, not made again)', async () => {
  const files = opened();
  try {
    const made = await files.keys.obtain('call-1');
    const other = createSqliteDataKeys(files.db, keyEncryptionKey('a data key secret of at least 32 characters'));
    try {
      assert.deepEqual(await other.obtain('call-1'), made);
    } finally {
      await other.close();
    }
  } finally {
    await files.close();
  }
});

test('a key that does not open with this secret is a retriable failure of the key store that names DATA_KEY_SECRET', async () => {
  const dir = tempDir('sqlite-data-keys-');
  const files = openSqlite(dir.path);
  const keys = createSqliteDataKeys(files.db, keyEncryptionKey('a data key secret of at least 32 characters'));
  const key = await keys.obtain('call-1');
  assert.ok(key);
  const otherSecret = createSqliteDataKeys(files.db, keyEncryptionKey('another data key secret, also 32 characters'));
  await assert.rejects(otherSecret.find('call-1'), (error: unknown) => {
    assert.ok(isRetriableError(error), String(error));
    assert.ok(isBackendUnavailable(error));
    assert.match((error as Error).message, /DATA_KEY_SECRET/);
    return true;
  });
  await otherSecret.close();
  await keys.close();
  files.close();
  dir.remove();
});

test('a new key is durable before obtain resolves, unless the next write covers it', async () => {
  const dir = tempDir('sqlite-data-keys-');
  const files = openSqlite(dir.path);
  const sync = walSyncOf(files.db)!;
  const kek = keyEncryptionKey('a data key secret of at least 32 characters');
  const own = createSqliteDataKeys(files.db, kek);
  const covered = createSqliteDataKeys(files.db, kek, { coveredByNextWrite: true });
  // Every WAL sync is held until `open`.
  const real = sync.afterCommit.bind(sync);
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  sync.afterCommit = () => gate.then(real);
  try {
    let resolved = false;
    const waiting = own.obtain('call-own').then((key) => {
      resolved = true;
      return key;
    });
    assert.ok(await covered.obtain('call-covered'), 'covered: resolves once committed');
    await settled(5);
    assert.equal(resolved, false, 'its own: waits for the WAL sync');
    open();
    assert.ok(await waiting);
  } finally {
    sync.afterCommit = real;
    await own.close();
    await covered.close();
    files.close();
    dir.remove();
  }
});
