/**
 * A process that did not make a call's data key (the projections and processors on the servers)
 * looks it up when it first opens the call's events. Events of one call opened at the same moment
 * share one lookup; and an erasure that lands while a lookup is under way wins over it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createPersonalData } from '../../../shared/adapters/crypto/personal-data.ts';
import { createSqliteDataKeys } from '../../../shared/adapters/data-keys/sqlite-data-keys.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import type { DataKeyStore } from '../../../shared/ports/data-keys.ts';
import { TEST_KEY_ENCRYPTION_KEY } from '../../support/embedded-pipeline.ts';
import { tempDir } from '../../support/temp-dir.ts';

const CALL_ID = '0193a1b2-0000-7000-8000-000000000002';
const analysed = (title: string) => ({
  title,
  summary: `summary of ${title}`,
  components: [],
  insights: [],
  score: 70,
});

/** The real embedded key store, counting `find` and able to hold it until released. */
const keyStore = (t: { after: (fn: () => void | Promise<void>) => void }) => {
  const dir = tempDir();
  const opened = openSqlite(dir.path);
  const real = createSqliteDataKeys(opened.db, TEST_KEY_ENCRYPTION_KEY);
  let finds = 0;
  let gate: Promise<void> | undefined;
  const store: DataKeyStore = {
    ...real,
    async find(callId) {
      finds += 1;
      const key = await real.find(callId);
      await gate;
      return key;
    },
  };
  t.after(async () => {
    await real.close();
    opened.close();
    dir.remove();
  });
  return {
    store,
    finds: () => finds,
    hold: () => {
      let release!: () => void;
      gate = new Promise((resolve) => (release = resolve));
      return () => {
        gate = undefined;
        release();
      };
    },
  };
};

test('the events of one call opened at the same moment look its key up once, and each reads in clear', async (t) => {
  const keys = keyStore(t);
  const writer = createPersonalData(keys.store);
  const sealed = await Promise.all(
    ['one', 'two', 'three'].map((title) => writer.seal(CALL_ID, 'CallAnalysed', analysed(title))),
  );
  assert.ok(sealed.every((data) => writer.isSealed(data)));

  // Another process: its cache starts empty.
  const reader = createPersonalData(keys.store);
  const opened = await Promise.all(sealed.map((data) => reader.open(CALL_ID, 'CallAnalysed', data)));
  assert.deepEqual(
    opened.map((data) => (data as { title: string }).title),
    ['one', 'two', 'three'],
  );
  assert.equal(keys.finds(), 1, 'one lookup for the three openings');
});

test('an erasure that lands while a lookup of the key is under way wins: the key is not kept', async (t) => {
  const keys = keyStore(t);
  const writer = createPersonalData(keys.store);
  const sealed = await writer.seal(CALL_ID, 'CallAnalysed', analysed('before'));

  const reader = createPersonalData(keys.store);
  const release = keys.hold();
  const opening = reader.opened(CALL_ID, 'CallAnalysed', sealed);
  await reader.erase(CALL_ID);
  release();
  await opening;

  const after = await reader.opened(CALL_ID, 'CallAnalysed', sealed);
  assert.equal(after.erased, true, 'read as erased once the erasure is done');
  assert.equal((after.data as { title: string }).title, '');
});
