/**
 * An erased call leaves nothing of its title or rep in the embedded search index. The index is a
 * contentless FTS5 table of trigrams; without FTS5's secure-delete a delete only adds a marker, and
 * the call's trigrams stayed in the index's blocks (so in the database file) until segments merged,
 * enough to piece a rep's name together on a quiet database.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { createSqliteReadModels } from '../../../shared/adapters/read-models/sqlite-read-models.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import { appendCall, catchUp, events, submitCall } from '../../conformance/read-models-fixtures.ts';
import { tempDir } from '../../support/temp-dir.ts';

const REP = 'Qxzjvkwpfh Ybgmcltrnd';
const TITLE = 'Wvqzhkbx Jpfydmcg renewal';
/** The trigrams of a text as the index keeps them (case-folded). */
const trigrams = (text: string) => {
  const folded = text.toLowerCase();
  return Array.from({ length: folded.length - 2 }, (_, i) => folded.slice(i, i + 3)).filter((t) => !t.includes(' '));
};

test("an erased call's title and rep leave the search index's blocks, not only its matches", async (t) => {
  const dir = tempDir();
  const opened = openSqlite(dir.path);
  const store = createSqliteEventStore(opened.db);
  const models = createSqliteReadModels(opened.db);
  t.after(async () => {
    await models.close();
    await store.close();
    opened.close();
    dir.remove();
  });
  const blocks = () =>
    opened.db
      .prepare<[], { block: Buffer }>('SELECT block FROM call_search_v1_data')
      .all()
      .map((row) => row.block.toString('latin1'))
      .join('\n');
  const kept = await submitCall(store, {
    teamId: 'team-a',
    submission: { repName: 'Kim Kept', callTitle: 'Kept call', aiTitleEnabled: false },
  });
  const erased = await submitCall(store, {
    teamId: 'team-a',
    submission: { repName: REP, callTitle: TITLE, aiTitleEnabled: false },
  });
  await catchUp(store, models.callHistory);
  const before = trigrams(`${REP} ${TITLE}`).filter((gram) => blocks().includes(gram));
  assert.ok(before.length > 10, `the index holds the call's trigrams at first (${before.length})`);

  await appendCall(store, erased.callId, [events.erased()]);
  await catchUp(store, models.callHistory);
  assert.equal(await models.callHistory.get('team-a', erased.callId), undefined);
  assert.ok(await models.callHistory.get('team-a', kept.callId));
  assert.deepEqual(
    trigrams(`${REP} ${TITLE}`).filter((gram) => blocks().includes(gram)),
    [],
    'trigrams of the erased call left in the index',
  );
});

test('a search table made before secure-delete gets the setting when the read models open', async (t) => {
  const dir = tempDir();
  const opened = openSqlite(dir.path);
  const first = createSqliteReadModels(opened.db);
  // As a database written by a build before the setting: FTS5 keeps it in the table's config.
  opened.db.exec("INSERT INTO call_search_v1 (call_search_v1, rank) VALUES ('secure-delete', 0)");
  await first.close();
  const setting = () =>
    opened.db.prepare<[], { v: number }>("SELECT v FROM call_search_v1_config WHERE k = 'secure-delete'").get()?.v;
  assert.equal(setting(), 0);
  const models = createSqliteReadModels(opened.db);
  t.after(async () => {
    await models.close();
    opened.close();
    dir.remove();
  });
  assert.equal(setting(), 1);
});
