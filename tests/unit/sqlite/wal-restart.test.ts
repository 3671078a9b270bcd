import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import { whenDurable } from '../../../shared/adapters/sqlite/wal-sync.ts';
import { registry } from '../../../shared/observability/metrics.ts';
import { tempDir } from '../../support/temp-dir.ts';

const MB = 1024 * 1024;

/**
 * `count` commits from concurrent writers while the feed is read between them, as followers do;
 * the largest WAL file seen. A commit always lands between two PASSIVE checkpoints, so without a
 * restart the WAL only grows (by about 1.8 KB a commit here).
 */
const steadyLoad = async (walRestartBytes: number, count: number): Promise<number> => {
  const dir = tempDir('wal-restart-');
  const sqlite = openSqlite(dir.path, { walRestartBytes, checkpointIntervalMs: 20 });
  const store = createSqliteEventStore(sqlite.db);
  const wal = join(sqlite.dataDir, 'calls.sqlite-wal');
  let largest = 0;
  try {
    const payload = 'x'.repeat(2_000);
    // Twenty writers back to back, as the service's requests are: a commit is always under way.
    // Each goes on once its commit returned, as the processor's steps do, not after the WAL sync: a
    // writer waiting for the sync leaves a pause in which, on a slow machine, a checkpoint can copy
    // the whole WAL, and SQLite then starts it again by itself (the run without a bound stayed
    // under 8 MB once).
    let next = 0;
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        for (let n = next++; n < count; n = next++) {
          await store.append(`s-${n % 50}`, [{ type: 'Written', data: { payload, n } }], { deferDurability: true });
          if (n % 10 === 0) await store.readAll({ maxCount: 10 });
          largest = Math.max(largest, statSync(wal).size);
        }
      }),
    );
    // The feed shows what is synced: the last commits once their sync has run.
    await whenDurable(sqlite.db);
    let kept = 0;
    for (let after = 0n; ;) {
      const page = await store.readAll({ after, maxCount: 100_000 }); // a read stops at about 4 MB
      if (page.length === 0) break;
      kept += page.length;
      after = page[page.length - 1]!.position;
    }
    assert.equal(kept, count, 'every commit is kept');
    return largest;
  } finally {
    await store.close();
    sqlite.close();
    dir.remove();
  }
};

test('under a steady flow of commits the WAL starts again from its beginning once it passes the bound, and keeps every commit', async () => {
  const holds = async () =>
    Number(/^sqlite_wal_restart_hold_seconds_count (\d+)$/m.exec(await registry.metrics())?.[1] ?? 0);
  const holdsBefore = await holds();
  const bounded = await steadyLoad(MB / 2, 20_000);
  const restarts = (await holds()) - holdsBefore;
  assert.ok(restarts >= 1, 'each restart is timed in sqlite_wal_restart_hold_seconds');
  const unbounded = await steadyLoad(1024 * MB, 20_000);
  assert.equal((await holds()) - holdsBefore, restarts, 'no restart without the bound');
  // The unbounded run shows the load was enough to pass the bound many times over. How far the
  // bounded one overshoots depends on how soon the checkpointer runs (a busy machine: later).
  assert.ok(unbounded > 8 * MB, `without a restart the WAL grew to ${unbounded} bytes`);
  assert.ok(
    bounded < unbounded / 2,
    `with a 0.5 MB bound the WAL reached ${bounded} bytes (${unbounded} without a restart)`,
  );
});
