/** Every answer carries X-Request-Id (the caller's when sane, a new UUID otherwise), and so does every log line of the request. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createSqliteEventLog } from '../../../shared/adapters/event-log/sql-event-log.ts';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite, type OpenedSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import type { EventLog } from '../../../shared/ports/event-log.ts';
import type { EventStore } from '../../../shared/ports/event-store.ts';
import { ALL_TOPICS } from '../../../shared/topics.ts';
import { createHarness, type Harness } from '../../support/ingress-harness.ts';
import { tempDir } from '../../support/temp-dir.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('X-Request-Id', () => {
  const dir = tempDir();
  let opened: OpenedSqlite;
  let eventStore: EventStore;
  let eventLog: EventLog;
  let h: Harness;
  let key: string;

  before(async () => {
    opened = openSqlite(dir.path);
    eventStore = createSqliteEventStore(opened.db);
    eventLog = createSqliteEventLog(opened.db);
    await eventLog.ensureTopics(ALL_TOPICS.map((name) => ({ name, partitions: 3 })));
    h = await createHarness({ eventStore, eventLog });
    ({ key } = await h.team());
  });
  after(async () => {
    await h.close();
    await eventLog.close();
    await eventStore.close();
    opened.close();
    dir.remove();
  });

  test("the caller's id comes back on the answer and is on every log line of the request", async () => {
    const res = await h.ingest({ key, body: { transcript: 'Rep: hi\nDana: hello' }, headers: { 'x-request-id': 'sync-7f3a.42' } });
    assert.equal(res.statusCode, 201);
    assert.equal(res.headers['x-request-id'], 'sync-7f3a.42');
    const lines = h.logLines.filter((line) => line.includes('"reqId":"sync-7f3a.42"'));
    assert.ok(lines.some((line) => line.includes('call accepted')), 'the acceptance log line carries the id');
  });

  test('an id that is not a sane token is replaced by a new UUID; errors carry one too', async () => {
    for (const given of ['has spaces', 'x'.repeat(129), '<script>']) {
      const res = await h.ingest({ key, body: { transcript: 'Rep: hi\nDana: hello' }, headers: { 'x-request-id': given } });
      assert.match(String(res.headers['x-request-id']), UUID, given);
    }
    const refused = await h.ingest({ key: 'pk_wrong', body: {} });
    assert.equal(refused.statusCode, 401);
    assert.match(String(refused.headers['x-request-id']), UUID);
    const missing = await h.ingress.app.inject({ method: 'GET', url: '/nowhere' });
    assert.equal(missing.statusCode, 404);
    assert.match(String(missing.headers['x-request-id']), UUID);
  });
});
