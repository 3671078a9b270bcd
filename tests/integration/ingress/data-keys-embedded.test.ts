import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openEmbeddedPipeline } from '../../support/embedded-pipeline.ts';

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
