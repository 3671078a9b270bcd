/**
 * Erasure requests: the calls are fixed when the request is made, each is erased, the request
 * completes; one whose work failed (its process stopped, a backend was down) is taken up again
 * when it is read, and another team never sees it. The address is not stored.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import type { CallHistoryStore } from '../../../shared/ports/read-models.ts';
import type { CallEraser } from '../../../services/ingress/call-eraser.ts';
import { createErasureRequests } from '../../../services/ingress/erasure-requests.ts';
import { eventually } from '../../support/eventually.ts';
import { tempDir } from '../../support/temp-dir.ts';

test('an erasure request erases its calls and completes; a failed one is taken up again when read', async (t) => {
  const dir = tempDir();
  const opened = openSqlite(dir.path);
  const store = createSqliteEventStore(opened.db);
  t.after(async () => {
    await store.close();
    opened.close();
    dir.remove();
  });
  const callHistory = {
    callsOfEmail: async (teamId: string, email: string) =>
      teamId === 't1' && email === 'dana@acme.test' ? ['c1', 'c2'] : [],
  } as unknown as CallHistoryStore;
  const erased: string[] = [];
  let failOnce = true;
  const erase: CallEraser = async (_teamId, callId, cause, erasureId) => {
    assert.equal(cause, 'erasure_request');
    assert.ok(erasureId);
    if (callId === 'c2' && failOnce) {
      failOnce = false;
      throw new Error('backend down');
    }
    erased.push(callId);
    return 'erased';
  };
  const requests = createErasureRequests({ eventStore: store, callHistory, erase, log: { info() {}, error() {} } });

  const erasureId = await requests.request('t1', 'dana@acme.test');
  await requests.close();
  assert.deepEqual(erased, ['c1'], 'the work stopped at the failing call');
  assert.equal((await requests.get('t1', erasureId))?.status, 'pending');
  // Reading it took it up again.
  const done = await eventually(
    async () => {
      const view = await requests.get('t1', erasureId);
      if (view?.status !== 'completed') throw new Error(`erasure ${view?.status}`);
      return view;
    },
    { timeoutMs: 5_000, intervalMs: 20 },
  );
  assert.deepEqual(done.calls, ['c1', 'c2']);
  assert.ok(erased.includes('c2'));
  assert.equal(await requests.get('t2', erasureId), undefined);
  assert.ok(
    !JSON.stringify((await store.readStream(`erasure-${erasureId}`)).map((e) => e.data)).includes('dana@acme.test'),
    'the address is not stored',
  );
});
