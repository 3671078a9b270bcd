/**
 * The open-call tracker on the embedded event store: it folds the events that open and close a
 * call and leaves the steps' results undecoded, so a step event that does not decode never reaches
 * it, while one it folds that does not decode is reported and skipped, the other calls going on.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { type TestContext, test } from 'node:test';
import { callEvents } from '../../../shared/domain/call/call-catalogue.ts';
import type { EventDecodeError } from '../../../shared/domain/event-catalogue.ts';
import { OPEN_CALLS_SNAPSHOT, OpenCalls } from '../../../services/processor/open-calls.ts';
import { submittedData } from '../../conformance/read-models-fixtures.ts';
import { overriding } from '../../support/embedded-ingress.ts';
import { openEmbeddedStore } from '../../support/embedded-backends.ts';
import { eventually } from '../../support/eventually.ts';

/** A fresh embedded event store, closed after the test, and a way to submit a call of one team to it. */
const embeddedStore = (t: TestContext) => {
  const store = openEmbeddedStore(t);
  const teamId = randomUUID();
  const submit = (callId: string) =>
    store.append(callEvents.streamId(callId), [
      callEvents.encode({ type: 'CallSubmitted', data: submittedData({ callId, teamId }) }),
    ]);
  return { store, submit };
};

test('steps are not decoded; an undecodable event it folds is reported and skipped, and the open set stays right', async (t) => {
  const { store, submit } = embeddedStore(t);
  const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
  for (const callId of [a, b, c]) await submit(callId);
  // A step's result that does not decode (a transcript without text): not the tracker's business.
  await store.append(callEvents.streamId(a), [{ type: 'TranscriptRecorded', data: { source: 'inline' } }]);
  // A CallFailed that does not decode: the tracker cannot close b, says so and goes on.
  await store.append(callEvents.streamId(b), [{ type: 'CallFailed', data: { code: 42 } }]);
  await store.append(callEvents.streamId(c), [
    callEvents.encode({
      type: 'CallFailed',
      data: { code: 'transcription_failed', reason: 'x', at: new Date().toISOString() },
    }),
  ]);

  const undecodable: EventDecodeError[] = [];
  const changes: string[] = [];
  const tracker = new OpenCalls((call, change) => changes.push(`${change} ${call.callId}`), {
    snapshotEveryMs: 60_000,
    onUndecodable: (error) => undecodable.push(error),
  });
  await tracker.start(store);
  t.after(() => tracker.stop());

  assert.deepEqual(
    undecodable.map((e) => `${e.streamId}@${e.revision}`),
    [`${callEvents.streamId(b)}@1`],
  );
  assert.deepEqual(
    tracker
      .all()
      .map((call) => call.callId)
      .sort(),
    [a, b].sort(),
  );
  assert.deepEqual(changes, [`opened ${a}`, `opened ${b}`, `opened ${c}`, `closed ${c}`]);
});

test('a feed that fails on an error it does not retry itself is followed again from where it stopped', async (t) => {
  const { store, submit } = embeddedStore(t);
  const first = randomUUID();
  await submit(first);
  // The feed's next batch after the start fails once with a plain error (not a backend outage).
  let failNextRead = false;
  const flaky = overriding(store, {
    subscribeToAll: (options: Parameters<typeof store.subscribeToAll>[0]) =>
      store.subscribeToAll({
        ...options,
        handler: async (events) => {
          if (failNextRead) {
            failNextRead = false;
            throw new Error('a batch the subscription does not retry (test)');
          }
          return options.handler(events);
        },
      }),
  });
  const failures: unknown[] = [];
  const tracker = new OpenCalls(() => undefined, {
    snapshotEveryMs: 60_000,
    onFailed: (error) => failures.push(error),
  });
  await tracker.start(flaky);
  t.after(() => tracker.stop());
  failNextRead = true;
  const second = randomUUID();
  await submit(second);
  await eventually(() => assert.equal(failures.length, 1, 'the feed failed once'), { timeoutMs: 10_000 });
  await eventually(
    () =>
      assert.deepEqual(
        tracker
          .all()
          .map((c) => c.callId)
          .sort(),
        [first, second].sort(),
      ),
    { timeoutMs: 10_000 },
  );
  await tracker.caughtUp();
  assert.equal(tracker.status().state === 'failed', false, JSON.stringify(tracker.status()));
});

test('once an event it folds does not decode, no snapshot is stored past it: a start reads that event again', async (t) => {
  const { store, submit } = embeddedStore(t);
  const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
  await submit(a);
  const tracker = new OpenCalls(() => undefined, { snapshotEveryMs: 60_000 });
  await tracker.start(store);
  t.after(() => tracker.stop());
  await tracker.snapshot();
  const before = await store.readSnapshot(OPEN_CALLS_SNAPSHOT);
  assert.ok(before, 'a snapshot of the set before the undecodable event');
  // A CallSubmitted this version cannot decode: the call is not in the set, and a version that
  // decodes it must still meet it at start, so no snapshot may cover it.
  await store.append(callEvents.streamId(b), [{ type: 'CallSubmitted', data: { callId: 42 } }]);
  await submit(c);
  await tracker.caughtUp();
  assert.deepEqual(
    tracker
      .all()
      .map((call) => call.callId)
      .sort(),
    [a, c].sort(),
  );
  await tracker.snapshot();
  const after = await store.readSnapshot(OPEN_CALLS_SNAPSHOT);
  assert.equal(after?.position, before.position, 'the snapshot before the undecodable event stays');
});
