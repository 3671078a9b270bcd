import assert from 'node:assert/strict';
import { test } from 'node:test';
import { walSyncOf } from '../../../shared/adapters/sqlite/wal-sync.ts';
import { openEmbeddedIngress } from '../../support/embedded-ingress.ts';
import { openEmbeddedPipeline } from '../../support/embedded-pipeline.ts';
import { eventually } from '../../support/eventually.ts';

const BODY = { transcript: 'Rep: Hello Dana.\nDana: Hi, we use a spreadsheet today.', repName: 'Sam Seller' };

test('on the embedded default a 201 is sent only once the WAL holding the reservation and the CallSubmitted record is synced', async () => {
  const embedded = await openEmbeddedIngress();
  let open = () => {};
  try {
    const { key } = await embedded.h.team();
    const sync = walSyncOf(embedded.sqlite.db)!;
    const real = sync.afterCommit.bind(sync);
    const gate = new Promise<void>((resolve) => (open = resolve));
    sync.afterCommit = () => gate.then(real);

    let answered = false;
    const response = embedded.h.ingest({ key, body: BODY }).then((res) => {
      answered = true;
      return res;
    });
    const db = embedded.sqlite.db;
    // Both are committed: the reservation on the team stream and the record on the log.
    await eventually(() => {
      assert.equal(
        (db.prepare("SELECT count(*) AS n FROM events WHERE type = 'CapacityReserved'").get() as { n: number }).n,
        1,
      );
      assert.equal((db.prepare('SELECT count(*) AS n FROM log_records').get() as { n: number }).n, 1);
    });
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(answered, false, 'no answer before the sync');
    const before = sync.count;
    open();
    const res = await response;
    assert.equal(res.statusCode, 201, res.body);
    assert.ok(sync.count > before, 'answered after a sync');
  } finally {
    open();
    await embedded.close();
  }
});

test("on the embedded default the processor's steps do not wait for the disk: a call completes while every sync is held, and the feed shows it after", async () => {
  const embedded = await openEmbeddedPipeline();
  let open = () => {};
  try {
    const { key } = await embedded.h.team();
    const db = embedded.sqlite!.db;
    const sync = walSyncOf(db)!;
    const real = sync.afterCommit.bind(sync);
    const gate = new Promise<void>((resolve) => (open = resolve));
    // Held from before the call is submitted, so it cannot complete and reach the disk first; its
    // 201 waits for the sync too, and comes once the gate opens.
    sync.afterCommit = () => gate.then(real);
    const response = embedded.h.ingest({ key, body: BODY });
    await eventually(() =>
      assert.equal(
        (db.prepare("SELECT count(*) AS n FROM events WHERE type = 'CallCompleted'").get() as { n: number }).n,
        1,
      ),
    );
    assert.ok(
      !(await embedded.h.eventStore.readAll({ maxCount: 10_000 })).some((e) => e.type === 'CallCompleted'),
      'the feed holds back what is not on disk',
    );
    open();
    const res = await response;
    assert.equal(res.statusCode, 201, res.body);
    await eventually(async () =>
      assert.ok((await embedded.h.eventStore.readAll({ maxCount: 10_000 })).some((e) => e.type === 'CallCompleted')),
    );
  } finally {
    // Whatever failed, the held commits go to disk so that everything can stop.
    open();
    await embedded.close();
  }
});
