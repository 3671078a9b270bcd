/**
 * The embedded database's WAL checkpointer runs in a worker thread (wal-checkpointer.ts). When that
 * worker ends without being asked to (an error in it, its heap limit), it is said (a log line,
 * /readyz's embedded-database part) and started again: checkpoints go on, the WAL stays bounded,
 * and an erasure's scrub empties it. It ended silently before: the WAL grew without end and each
 * scrub held every write for 5 s, again and again.
 */
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Worker as WorkerThread } from 'node:worker_threads';
import { eventually } from '../../support/eventually.ts';
import { tempDir } from '../../support/temp-dir.ts';

// Every worker this process starts, so the test can end the checkpointer's as a crash would.
const threads = createRequire(import.meta.url)('node:worker_threads') as typeof import('node:worker_threads');
const workers: WorkerThread[] = [];
const Original = threads.Worker;
class Recorded extends Original {
  constructor(...args: ConstructorParameters<typeof Original>) {
    super(...args);
    workers.push(this);
  }
}
(threads as { Worker: unknown }).Worker = Recorded;
syncBuiltinESMExports();

test('a checkpointer whose worker ends is reported, started again, and keeps the WAL bounded and scrubbed', async (t) => {
  const { openSqlite, requestWalScrub, walCheckpointerFailure } =
    await import('../../../shared/adapters/sqlite/sqlite-database.ts');
  const { createSqliteEventStore } = await import('../../../shared/adapters/event-store/sqlite-event-store.ts');
  const dir = tempDir();
  const ended: Array<{ error: Error; restartInMs: number }> = [];
  const opened = openSqlite(dir.path, {
    walRestartBytes: 1024 * 1024,
    walScrubDelayMs: 100,
    onCheckpointerEnded: (error, restartInMs) => ended.push({ error, restartInMs }),
  });
  t.after(() => {
    opened.close();
    dir.remove();
  });
  const store = createSqliteEventStore(opened.db);
  assert.equal(workers.length, 1, 'the checkpointer is the one worker');
  await eventually(() => assert.equal(walCheckpointerFailure(opened.db), undefined));

  // The worker ends, as an uncaught error or its heap limit would end it.
  await workers[0]!.terminate();
  assert.equal(ended.length, 1, 'said once');
  assert.equal(ended[0]!.restartInMs, 1_000);
  assert.match(walCheckpointerFailure(opened.db)!.message, /worker ended/);

  // Started again: it checkpoints, and the failure is forgotten.
  await eventually(() => assert.equal(walCheckpointerFailure(opened.db), undefined), { timeoutMs: 10_000 });
  assert.equal(workers.length, 2, 'a new worker');

  // The WAL stays near its bound (1 MiB) under 12 MB of appends: once restarted, the next write
  // starts it from its beginning and cuts the file back to the bound.
  const payload = 'x'.repeat(4000);
  for (let i = 0; i < 3000; i++) await store.append(`call-${i}`, [{ type: 'CallNoted', data: { payload } }]);
  const wal = join(dir.path, 'calls.sqlite-wal');
  await eventually(
    async () => {
      await store.append('call-last', [{ type: 'CallNoted', data: {} }]);
      assert.ok(statSync(wal).size < 4 * 1024 * 1024, `WAL ${statSync(wal).size} bytes`);
    },
    { timeoutMs: 10_000, intervalMs: 100 },
  );

  // An erasure's scrub empties it.
  requestWalScrub(opened.db);
  await eventually(() => assert.equal(statSync(wal).size, 0), { timeoutMs: 10_000 });
});
