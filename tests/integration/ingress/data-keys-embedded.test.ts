import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createPersonalData } from '../../../shared/adapters/crypto/personal-data.ts';
import { createSqliteDataKeys } from '../../../shared/adapters/data-keys/sqlite-data-keys.ts';
import { createSqliteEventLog } from '../../../shared/adapters/event-log/sql-event-log.ts';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import type { DataKeyStore } from '../../../shared/ports/data-keys.ts';
import type { EventStore } from '../../../shared/ports/event-store.ts';
import { openEmbeddedPipeline, TEST_KEY_ENCRYPTION_KEY } from '../../support/embedded-pipeline.ts';
import { allTopics, TOPICS } from '../../../shared/topics.ts';
import { createHarness } from '../../support/ingress-harness.ts';
import { tempDir } from '../../support/temp-dir.ts';

const BODY = { transcript: 'Rep: Hello Dana.\nDana: Hi, we use a spreadsheet today.', repName: 'Sam Seller' };

const keyRows = (db: { prepare(sql: string): { all(...params: unknown[]): unknown[] } }) =>
  db.prepare('SELECT call_id, wrapped IS NOT NULL AS usable FROM data_keys ORDER BY call_id').all() as {
    call_id: string;
    usable: number;
  }[];

test('an accepted call has its one data key and a sealed record on the log; a call refused for capacity leaves no key behind', async () => {
  const embedded = await openEmbeddedPipeline({}, { erasure: true });
  try {
    const db = embedded.sqlite!.db;
    const empty = await embedded.h.team({ capacityHours: 0 });
    for (let i = 0; i < 3; i++) {
      const refused = await embedded.h.ingest({ key: empty.key, body: BODY });
      assert.equal(refused.statusCode, 402, refused.body);
    }
    assert.deepEqual(keyRows(db), [], 'no data key for a refused call');

    const { key } = await embedded.h.team();
    const accepted = await Promise.all([1, 2, 3].map(() => embedded.h.ingest({ key, body: BODY })));
    const callIds = accepted.map((res) => {
      assert.equal(res.statusCode, 201, res.body);
      return res.json<{ callId: string }>().callId;
    });
    assert.deepEqual(
      keyRows(db),
      [...callIds].sort().map((callId) => ({ call_id: callId, usable: 1 })),
      'one usable key per accepted call',
    );
    const records = db
      .prepare('SELECT value FROM log_records WHERE topic = ?')
      .all(embedded.h.topics.callsSubmitted) as { value: string }[];
    assert.equal(records.length, 3);
    for (const { value } of records) {
      const data = JSON.parse(value) as Record<string, unknown>;
      assert.match(String(data.sealed), /^v1\./, 'the record holds its personal fields sealed');
      assert.equal(data.transcript, undefined);
    }
  } finally {
    await embedded.close();
  }
});

test("an accepted call's data key is asked for in the turn of the event loop that reserves its capacity, not after it", async (t) => {
  const dir = tempDir();
  const opened = openSqlite(dir.path);
  const real = createSqliteDataKeys(opened.db, TEST_KEY_ENCRYPTION_KEY);
  const store = createSqliteEventStore(opened.db);
  const log = createSqliteEventLog(opened.db);
  await log.ensureTopics(allTopics(TOPICS).map((name) => ({ name, partitions: 1 })));
  // The loop's turns, counted in its check phase (where group commits flush).
  let turn = 0;
  let ticker = setImmediate(function tick() {
    turn += 1;
    ticker = setImmediate(tick);
  });
  const reservedIn: number[] = [];
  const keyAskedIn: number[] = [];
  const keys: DataKeyStore = {
    ...real,
    obtain(callId) {
      keyAskedIn.push(turn);
      return real.obtain(callId);
    },
  };
  const eventStore: EventStore = {
    ...store,
    append(streamId, events, options) {
      if (streamId.startsWith('team-') && events.some((e) => e.type === 'CapacityReserved')) reservedIn.push(turn);
      return store.append(streamId, events, options);
    },
  };
  const personalData = createPersonalData(keys);
  const h = await createHarness({ eventStore, eventLog: log, personalData, publishCoversStore: true });
  t.after(async () => {
    clearImmediate(ticker);
    await h.close();
    await personalData.close();
    await log.close();
    await store.close();
    opened.close();
    dir.remove();
  });
  const { key } = await h.team();
  for (let i = 0; i < 3; i++) {
    const res = await h.ingest({ key, body: BODY });
    assert.equal(res.statusCode, 201, res.body);
  }
  assert.equal(reservedIn.length, 3);
  assert.deepEqual(keyAskedIn, reservedIn, 'each key asked for in its reservation’s turn');
});
