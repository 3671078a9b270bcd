/**
 * Text that did not come through the ingress rules — events stored before them, a title from a
 * remote analyser — still never reaches SQLite's FTS5 index as an unpaired surrogate or U+0000
 * (which corrupted it: "database disk image is malformed", and history stopped for every team).
 * The events are appended to the embedded event store directly, as an older version stored them.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, test } from 'node:test';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { createSqliteReadModels } from '../../../shared/adapters/read-models/sqlite-read-models.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import type { EventStore } from '../../../shared/ports/event-store.ts';
import type { ReadModels } from '../../../shared/ports/read-models.ts';
import { appendCall, catchUp, events, submitCall } from '../../conformance/read-models-fixtures.ts';
import { tempDir } from '../../support/temp-dir.ts';

let dir: ReturnType<typeof tempDir>;
let opened: ReturnType<typeof openSqlite>;
let store: EventStore;
let readModels: ReadModels;

before(() => {
  dir = tempDir();
  opened = openSqlite(dir.path);
  store = createSqliteEventStore(opened.db);
  readModels = createSqliteReadModels(opened.db);
});

after(async () => {
  await readModels.close();
  await store.close();
  opened.close();
  dir.remove();
});

test('a stored call whose rep name, tags and AI title hold unpaired surrogates and U+0000 is indexed, and history goes on', async () => {
  const teamId = `team-${randomUUID()}`;
  // Submitted, then folded alone: the row is written once with its generic title…
  const poisoned = await submitCall(store, {
    teamId,
    submission: { repName: 'Sam \ud800 X\u0000', tags: ['vip\udc00\ud800', 'x\u0000'], aiTitleEnabled: true },
  });
  await catchUp(store, readModels.callHistory);
  // …then rewritten: the index entry of the old title is deleted and the new one, from a remote
  // analyser's answer with a lone surrogate, inserted.
  await appendCall(store, poisoned.callId, [
    events.started(),
    events.transcript('Rep: hi'),
    events.analysed('Pricing with Dana \udbff\u0000'),
    events.completed(),
  ]);
  await catchUp(store, readModels.callHistory);
  const normal = await submitCall(store, { teamId, submission: { repName: 'Dana Reyes' } }, [
    events.started(),
    events.transcript('Rep: hi'),
    events.analysed('Renewal with Priya'),
    events.completed(),
  ]);
  await catchUp(store, readModels.callHistory);

  const listed = await readModels.callHistory.list(teamId, { limit: 10 });
  assert.deepEqual(listed.calls.map((c) => c.callId).sort(), [poisoned.callId, normal.callId].sort());
  const row = await readModels.callHistory.get(teamId, poisoned.callId);
  assert.equal(row?.status, 'completed');
  assert.equal(row?.repName, 'Sam \ud800 X\u0000', 'the row keeps the text as recorded');
  const search = async (term: string) =>
    (await readModels.callHistory.list(teamId, { search: term })).calls.map((c) => c.callId);
  assert.deepEqual(await search('pricing with dana'), [poisoned.callId], 'the title is found by its well-formed part');
  assert.deepEqual(await search('sam \ufffd x'), [poisoned.callId], 'the unpaired surrogate is indexed as U+FFFD');
  assert.deepEqual(await search('renewal with'), [normal.callId]);
  assert.deepEqual(
    (await readModels.callHistory.list(teamId, { tags: ['vip\ufffd\ufffd'] })).calls.map((c) => c.callId),
    [poisoned.callId],
  );
  // FTS5's own check reads every index entry back.
  const indexes = opened.db
    .prepare<[], { name: string }>(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'call_search_v%'`)
    .all()
    .map((r) => r.name)
    .filter((name) => /^call_search_v\d+$/.test(name));
  assert.ok(indexes.length > 0);
  for (const name of indexes) opened.db.prepare(`INSERT INTO ${name} (${name}) VALUES ('integrity-check')`).run();
});
