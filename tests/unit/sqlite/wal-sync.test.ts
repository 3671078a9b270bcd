import assert from 'node:assert/strict';
import { mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { createSqliteEventLog } from '../../../shared/adapters/event-log/sql-event-log.ts';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import { attachWalSync, WalSync, WalSyncFailedError, walSyncOf } from '../../../shared/adapters/sqlite/wal-sync.ts';
import { isBackendUnavailable } from '../../../shared/ports/unavailable.ts';
import { registerEmbeddedDatabase } from '../../../services/runtime/embedded-database-health.ts';
import { Health } from '../../../services/runtime/health.ts';
import { registry } from '../../../shared/observability/metrics.ts';
import { eventually } from '../../support/eventually.ts';
import { tempDir } from '../../support/temp-dir.ts';

const opened = () => {
  const dir = tempDir('wal-sync-');
  const sqlite = openSqlite(dir.path);
  return {
    sqlite,
    sync: walSyncOf(sqlite.db)!,
    close() {
      sqlite.close();
      dir.remove();
    },
  };
};

/** Holds every sync until `open()`: what the store and the log do while their commit is not yet on disk. */
const holdSyncs = (sync: NonNullable<ReturnType<typeof walSyncOf>>) => {
  const real = sync.afterCommit.bind(sync);
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  sync.afterCommit = () => gate.then(real);
  return { open };
};

test('the embedded database commits without fsync and syncs its WAL after; concurrent appends share syncs', async () => {
  const files = opened();
  try {
    assert.equal(
      files.sqlite.db.pragma('synchronous', { simple: true }),
      1,
      'synchronous=NORMAL on the write connection',
    );
    const store = createSqliteEventStore(files.sqlite.db);
    const before = files.sync.count;
    await Promise.all(Array.from({ length: 200 }, (_, i) => store.append(`s-${i % 20}`, [{ type: 'E', data: { i } }])));
    const syncs = files.sync.count - before;
    assert.ok(syncs >= 1, 'at least one WAL sync before the appends resolved');
    assert.ok(syncs < 200, `appends share syncs (${syncs} for 200)`);
    await store.close();
  } finally {
    files.close();
  }
});

test('an append and a publish resolve only once their commit is synced, and the feed shows only synced events', async () => {
  const files = opened();
  try {
    const store = createSqliteEventStore(files.sqlite.db);
    const log = createSqliteEventLog(files.sqlite.db);
    await log.ensureTopics([{ name: 't', partitions: 1 }]);
    await store.append('a', [{ type: 'First', data: {} }]);
    const held = holdSyncs(files.sync);
    let appended = false;
    let published = false;
    const append = store.append('a', [{ type: 'Second', data: {} }]).then(() => (appended = true));
    const publish = log.publish('t', [{ key: 'k', value: 'v' }]).then(() => (published = true));
    // Committed: another connection reads both rows.
    const raw = new Database(join(files.sqlite.dataDir, 'calls.sqlite'), { readonly: true });
    try {
      await eventually(() => {
        assert.equal((raw.prepare('SELECT count(*) AS n FROM events').get() as { n: number }).n, 2);
        assert.equal((raw.prepare('SELECT count(*) AS n FROM log_records').get() as { n: number }).n, 1);
      });
    } finally {
      raw.close();
    }
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(appended, false, 'the append waits for the sync');
    assert.equal(published, false, 'the publish waits for the sync');
    assert.deepEqual(
      (await store.readAll()).map((e) => e.type),
      ['First'],
      'the feed stops at the last synced event',
    );
    assert.equal(await store.headPosition(), 1n);
    held.open();
    await Promise.all([append, publish]);
    assert.deepEqual(
      (await store.readAll()).map((e) => e.type),
      ['First', 'Second'],
    );
    await log.close();
    await store.close();
  } finally {
    files.close();
  }
});

test("checkpoints run beside the write connection: the database file takes the WAL's pages without a checkpoint on it", async () => {
  const files = opened();
  try {
    assert.equal(
      files.sqlite.db.pragma('wal_autocheckpoint', { simple: true }),
      0,
      'no automatic checkpoint inside COMMIT',
    );
    const store = createSqliteEventStore(files.sqlite.db);
    const file = join(files.sqlite.dataDir, 'calls.sqlite');
    const sizeBefore = statSync(file).size;
    await Promise.all(
      Array.from({ length: 50 }, (_, i) => store.append(`s-${i}`, [{ type: 'E', data: { text: 'x'.repeat(4000) } }])),
    );
    await eventually(() => assert.ok(statSync(file).size > sizeBefore + 100_000, 'the checkpointer copied the pages'), {
      timeoutMs: 10_000,
    });
    await store.close();
  } finally {
    files.close();
  }
});

test('deferDurability: an append resolves once committed, and a later durable publish on the database covers it', async () => {
  const files = opened();
  try {
    const store = createSqliteEventStore(files.sqlite.db);
    const log = createSqliteEventLog(files.sqlite.db);
    await log.ensureTopics([{ name: 't', partitions: 1 }]);
    const held = holdSyncs(files.sync);
    const deferred = await store.append('team-1', [{ type: 'CapacityReserved', data: {} }], { deferDurability: true });
    assert.equal(deferred.position, 1n, 'resolved while every sync is held');
    let durableAppend = false;
    let published = false;
    const append = store.append('team-1', [{ type: 'Other', data: {} }]).then(() => (durableAppend = true));
    const publish = log.publish('t', [{ key: 'k', value: 'v' }]).then(() => (published = true));
    await eventually(() =>
      assert.equal((files.sqlite.db.prepare('SELECT count(*) AS n FROM log_records').get() as { n: number }).n, 1),
    );
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(durableAppend, false, 'without deferDurability an append waits for the sync');
    assert.equal(published, false);
    assert.deepEqual(await store.readAll(), [], 'the feed waits for the sync, deferred or not');
    held.open();
    await Promise.all([append, publish]);
    assert.deepEqual(
      (await store.readAll()).map((e) => e.type),
      ['CapacityReserved', 'Other'],
    );
    await log.close();
    await store.close();
  } finally {
    files.close();
  }
});

test('an fsync of the WAL that fails stops every later sync until the database is opened again: appends and publishes answer unavailable, and /readyz says why', async () => {
  const files = opened();
  try {
    let failing = false;
    const sync = new WalSync(join(files.sqlite.dataDir, 'calls.sqlite-wal'), async (handle) => {
      if (failing) throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
      await handle.datasync();
    });
    attachWalSync(files.sqlite.db, sync);
    const health = new Health(60_000);
    registerEmbeddedDatabase({ sqlite: files.sqlite }, health);
    const store = createSqliteEventStore(files.sqlite.db);
    const log = createSqliteEventLog(files.sqlite.db);
    await log.ensureTopics([{ name: 't', partitions: 1 }]);
    await store.append('a', [{ type: 'First', data: {} }]);
    assert.equal(health.report().ready, true);

    failing = true;
    await assert.rejects(store.append('a', [{ type: 'Second', data: {} }]), (error: unknown) => {
      assert.ok(isBackendUnavailable(error), `unavailable, not ${String(error)}`);
      return true;
    });
    // The disk would take an fsync again, but the pages the failed one could not write may be gone:
    // a sync that succeeds now would not prove the commits before it durable.
    failing = false;
    await assert.rejects(store.append('a', [{ type: 'Third', data: {} }]), (error: unknown) =>
      isBackendUnavailable(error),
    );
    await assert.rejects(log.publish('t', [{ key: 'k', value: 'v' }]), (error: unknown) => {
      assert.ok(isBackendUnavailable(error) && error.outcomeUnknown, 'a publish of unknown outcome');
      return true;
    });
    assert.ok(sync.failed instanceof WalSyncFailedError);
    const report = health.report();
    assert.equal(report.ready, false);
    assert.match(
      String(report.components['embedded-database']?.reason),
      /fsync of .*calls\.sqlite-wal failed \(EIO\); restart the service/,
    );
    await store.close();
    await log.close();
  } finally {
    files.close();
  }
});

test('a WAL that cannot be opened for one sync is tried again at the next: only a failed fsync is final', async () => {
  const dir = tempDir('wal-open-');
  try {
    // A file where the WAL's directory should be: opening the WAL fails (ENOTDIR), nothing is synced.
    writeFileSync(join(dir.path, 'db'), '');
    const sync = new WalSync(join(dir.path, 'db', 'calls.sqlite-wal'));
    await assert.rejects(sync.afterCommit(), (error: unknown) => (error as NodeJS.ErrnoException).code === 'ENOTDIR');
    assert.equal(sync.failed, undefined, 'no fsync failed');
    rmSync(join(dir.path, 'db'));
    mkdirSync(join(dir.path, 'db'));
    writeFileSync(join(dir.path, 'db', 'calls.sqlite-wal'), 'frames');
    const before = sync.count;
    await sync.afterCommit();
    assert.equal(sync.count, before + 1, 'the next round synced');
  } finally {
    dir.remove();
  }
});

test('each fsync of the WAL is timed in sqlite_wal_sync_duration_seconds', async () => {
  const files = opened();
  try {
    const count = async () =>
      Number(/^sqlite_wal_sync_duration_seconds_count (\d+)$/m.exec(await registry.metrics())?.[1] ?? 0);
    const store = createSqliteEventStore(files.sqlite.db);
    const before = await count();
    const syncsBefore = files.sync.count;
    await store.append('timed', [{ type: 'E', data: {} }]);
    assert.ok(files.sync.count > syncsBefore);
    assert.equal(await count(), before + (files.sync.count - syncsBefore), 'one observation per fsync');
    await store.close();
  } finally {
    files.close();
  }
});

/**
 * A WAL sync on `files` whose fsync hangs from `hang()` until `answer()`: a disk that stops
 * answering, then comes back.
 */
const hangingDisk = (files: ReturnType<typeof opened>) => {
  let hanging: Promise<void> | undefined;
  let release!: () => void;
  attachWalSync(
    files.sqlite.db,
    new WalSync(join(files.sqlite.dataDir, 'calls.sqlite-wal'), async (handle) => {
      if (hanging) await hanging;
      await handle.datasync();
    }),
  );
  return {
    hang: () => void (hanging = new Promise<void>((resolve) => (release = resolve))),
    answer: () => {
      hanging = undefined;
      release();
    },
  };
};

/** A refusal at the sync deadline of 200 ms that says the write may have been made. */
const refusedAtDeadline = (error: unknown): boolean => {
  assert.ok(isBackendUnavailable(error) && error.outcomeUnknown, `unknown outcome, not ${String(error)}`);
  assert.match((error as Error).message, /did not confirm the WAL's sync within 0\.2 s/);
  return true;
};

test('a publish waits for a hung fsync only until its deadline, then answers that its records may have been written', async () => {
  const files = opened();
  try {
    const disk = hangingDisk(files);
    const log = createSqliteEventLog(files.sqlite.db, { syncDeadlineMs: 200 });
    await log.ensureTopics([{ name: 't', partitions: 1 }]);
    disk.hang();
    const started = Date.now();
    await assert.rejects(log.publish('t', [{ key: 'k', value: 'v1' }]), refusedAtDeadline);
    assert.ok(Date.now() - started < 5_000, 'answered at its deadline, not when the disk came back');
    disk.answer();
    // The disk answers again: the record that waited is there, and the next publish is durable.
    await log.publish('t', [{ key: 'k', value: 'v2' }]);
    assert.deepEqual(
      (await log.read('t', { limit: 10 })).map((r) => r.value),
      ['v1', 'v2'],
    );
    await log.close();
  } finally {
    files.close();
  }
});

test('a durable append waits for a hung fsync only until its deadline, then answers that it may have been written', async () => {
  const files = opened();
  try {
    const disk = hangingDisk(files);
    const store = createSqliteEventStore(files.sqlite.db, { syncDeadlineMs: 200 });
    disk.hang();
    const started = Date.now();
    await assert.rejects(store.append('s-1', [{ type: 'Written', data: { n: 1 } }]), refusedAtDeadline);
    assert.ok(Date.now() - started < 5_000, 'answered at its deadline, not when the disk came back');
    disk.answer();
    // The disk answers again: the event that waited is there, and the next append is durable.
    await store.append('s-1', [{ type: 'Written', data: { n: 2 } }], { expectedVersion: 0 });
    assert.deepEqual(
      (await store.readStream('s-1')).map((e) => (e.data as { n: number }).n),
      [1, 2],
    );
    await store.close();
  } finally {
    files.close();
  }
});
