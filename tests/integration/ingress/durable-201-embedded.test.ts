import assert from 'node:assert/strict';
import { test } from 'node:test';
import { walSyncOf } from '../../../shared/adapters/sqlite/wal-sync.ts';
import { openEmbeddedIngress } from '../../support/embedded-ingress.ts';
import { eventually } from '../../support/eventually.ts';

const BODY = { transcript: 'Rep: Hello Dana.\nDana: Hi, we use a spreadsheet today.', repName: 'Sam Seller' };

test('on the embedded default a 201 is sent only once the WAL holding the reservation and the CallSubmitted record is synced', async () => {
  const embedded = await openEmbeddedIngress();
  try {
    const { key } = await embedded.h.team();
    const sync = walSyncOf(embedded.sqlite.db)!;
    const real = sync.afterCommit.bind(sync);
    let open!: () => void;
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
      assert.equal((db.prepare("SELECT count(*) AS n FROM events WHERE type = 'CapacityReserved'").get() as { n: number }).n, 1);
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
    await embedded.close();
  }
});
