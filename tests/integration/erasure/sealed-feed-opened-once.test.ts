/**
 * The followers of the embedded feed share each stored event, so its sealed personal fields are
 * opened once for all of them, even when they read the same batch at the same moment (they are
 * woken by the same append). Each follower still gets the fields in clear.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { createSealedEventStore } from '../../../shared/adapters/event-store/sealed-event-store.ts';
import { createPersonalData, type PersonalData } from '../../../shared/adapters/crypto/personal-data.ts';
import { createSqliteDataKeys } from '../../../shared/adapters/data-keys/sqlite-data-keys.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import { DataKeysUnavailableError } from '../../../shared/ports/data-keys.ts';
import type { RecordedEvent } from '../../../shared/ports/event-store.ts';
import { TEST_KEY_ENCRYPTION_KEY } from '../../support/embedded-pipeline.ts';
import { tempDir } from '../../support/temp-dir.ts';

const CALL_ID = '0193a1b2-0000-7000-8000-000000000001';
const submitted = {
  callId: CALL_ID,
  teamId: 't1',
  keyId: 'k1',
  submittedAt: '2026-11-20T10:00:00.000Z',
  submission: {
    aiTitleEnabled: true,
    tags: [],
    transcript: { text: 'Rep: hello\nProspect: secret budget', truncated: false, originalBytes: 35 },
    notes: 'secret notes',
  },
  capacity: { reservedMinutes: 1, autoRechargedMinutes: 0 },
  warnings: [],
};

/**
 * A sealed store over a fresh embedded database and its data keys, whose openings go through
 * `through` (given the real one), so a test can count or fail them.
 */
const sealedStore = (t: TestContext, through: (real: PersonalData['opened']) => PersonalData['opened']) => {
  const dir = tempDir();
  const opened = openSqlite(dir.path);
  const personal = createPersonalData(createSqliteDataKeys(opened.db, TEST_KEY_ENCRYPTION_KEY));
  const watched: PersonalData = {
    ...personal,
    opened: through((callId, type, data) => personal.opened(callId, type, data)),
    open: async (callId, type, data) => (await watched.opened(callId, type, data)).data,
  };
  const stored = createSqliteEventStore(opened.db);
  const store = createSealedEventStore(stored, watched);
  t.after(async () => {
    await personal.close();
    await store.close();
    opened.close();
    dir.remove();
  });
  return { personal, stored, store };
};

test('three followers woken by one append open its sealed fields once, and each reads them in clear', async (t) => {
  let opens = 0;
  const { personal, stored, store } = sealedStore(t, (real) => (callId, type, data) => {
    opens += 1;
    return real(callId, type, data);
  });

  const received: RecordedEvent[][] = [[], [], []];
  const followers = received.map((events) =>
    store.subscribeToAll({ categories: ['call'], handler: async (batch) => void events.push(...batch) }),
  );
  t.after(() => Promise.all(followers.map((f) => f.stop())));

  await store.append(`call-${CALL_ID}`, [{ type: 'CallSubmitted', data: submitted }]);
  await Promise.all(followers.map((f) => f.caughtUp()));

  const asStored = await stored.readStream(`call-${CALL_ID}`);
  assert.ok(personal.isSealed(asStored[0]!.data), 'the event is stored sealed');
  assert.doesNotMatch(JSON.stringify(asStored[0]!.data), /secret/);
  for (const events of received) {
    assert.equal(events.length, 1);
    const data = events[0]!.data as typeof submitted;
    assert.equal(data.submission.notes, 'secret notes');
    assert.equal(data.submission.transcript.text, submitted.submission.transcript.text);
  }
  assert.equal(opens, 1, 'the followers share one opening of the event');
});

test('an opening that failed is not kept: the next read opens the event again', async (t) => {
  let attempts = 0;
  const { store } = sealedStore(t, (real) => async (callId, type, data) => {
    attempts += 1;
    if (attempts === 1) throw new DataKeysUnavailableError('the data keys are away');
    return real(callId, type, data);
  });

  await store.append(`call-${CALL_ID}`, [{ type: 'CallSubmitted', data: submitted }]);
  await assert.rejects(store.readAll({ categories: ['call'] }), DataKeysUnavailableError);
  const events = await store.readAll({ categories: ['call'] });
  assert.equal((events[0]!.data as typeof submitted).submission.notes, 'secret notes');
  assert.equal(attempts, 2);
});

test("a batch's events are opened together, so the keys of its calls can be looked up in one query", async (t) => {
  let inFlight = 0;
  let most = 0;
  const { store } = sealedStore(t, (real) => async (callId, type, data) => {
    inFlight += 1;
    most = Math.max(most, inFlight);
    // A key store's round trip: the openings of one batch overlap only when issued together.
    await new Promise((resolve) => setTimeout(resolve, 5));
    inFlight -= 1;
    return real(callId, type, data);
  });
  const callIds = [1, 2, 3].map((n) => `0193a1b2-0000-7000-8000-00000000010${n}`);
  for (const callId of callIds)
    await store.append(`call-${callId}`, [
      { type: 'CallSubmitted', data: { ...submitted, callId, submission: { ...submitted.submission, notes: callId } } },
    ]);

  const events = await store.readAll({ categories: ['call'] });
  assert.deepEqual(
    events.map((event) => (event.data as typeof submitted).submission.notes),
    callIds,
    'each in clear, in the order of the feed',
  );
  assert.equal(most, 3, 'the three openings were under way together');
});
