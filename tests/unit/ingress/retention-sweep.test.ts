/**
 * The retention sweep, on the embedded event store with the real call eraser: a call that cannot be
 * erased (its stream holds an event this version does not decode) is logged by its id, counted and
 * passed over, so the calls and teams after it are still erased, at this pass and every later one;
 * a backend outage still ends the pass, to be taken up by the next.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { PersonalData } from '../../../shared/adapters/crypto/personal-data.ts';
import { callEvents } from '../../../shared/domain/call/call-catalogue.ts';
import { EventStoreUnavailableError } from '../../../shared/ports/event-store.ts';
import type { CallHistoryStore, SubmittedCall } from '../../../shared/ports/read-models.ts';
import { type CallEraser, createCallEraser } from '../../../services/ingress/call-eraser.ts';
import { startRetentionSweep } from '../../../services/ingress/retention-sweep.ts';
import { submittedData } from '../../conformance/read-models-fixtures.ts';
import { type EmbeddedIngress, openEmbeddedIngress } from '../../support/embedded-ingress.ts';

let embedded: EmbeddedIngress;

/** A call history whose due calls are `expired`'s lists, in order, paged as the stores page them. */
const historyOf = (expired: Record<string, string[]>) =>
  ({
    submittedBefore: async (teamId: string, _before: string, limit: number, after?: SubmittedCall) =>
      (expired[teamId] ?? [])
        .map((callId, i) => ({ callId, submittedAtMs: i }))
        .filter((call) => after === undefined || call.submittedAtMs > after.submittedAtMs)
        .slice(0, limit),
  }) as unknown as CallHistoryStore;

/** A call whose stream holds an event this version does not decode: loading it fails, never retriably. */
const unreadable = async (eventStore: EmbeddedIngress['eventStore'], teamId: string, callId: string) => {
  await eventStore.append(callEvents.streamId(callId), [
    callEvents.encode({ type: 'CallSubmitted', data: submittedData({ callId, teamId }) }),
  ]);
  await eventStore.append(callEvents.streamId(callId), [{ type: 'TranscriptRecorded', data: { source: 42 } }]);
};
before(async () => {
  embedded = await openEmbeddedIngress();
});
after(() => embedded.close());

test('a call that cannot be erased is logged, counted and passed over; the calls and teams after it are erased, at every pass', async () => {
  const { h, eventStore } = embedded;
  const first = await h.team();
  const second = await h.team();
  const submit = (teamId: string, callId: string) =>
    eventStore.append(callEvents.streamId(callId), [
      callEvents.encode({ type: 'CallSubmitted', data: submittedData({ callId, teamId }) }),
    ]);
  await submit(first.teamId, 'unreadable');
  // A step's event this version does not decode: loading the call fails, never retriably.
  await eventStore.append(callEvents.streamId('unreadable'), [{ type: 'TranscriptRecorded', data: { source: 42 } }]);
  await submit(first.teamId, 'after-it');
  await submit(second.teamId, 'other-team');
  // No team has a period while the sweep starts, so its pass at start erases nothing.
  let retained: string[] = [];
  const expired: Record<string, string[]> = {
    [first.teamId]: ['unreadable', 'after-it'],
    [second.teamId]: ['other-team'],
  };
  const callHistory = historyOf(expired);
  const destroyed: string[] = [];
  const personalData = { erase: async (callId: string) => void destroyed.push(callId) } as unknown as PersonalData;
  const eraser = createCallEraser({ eventStore, teams: h.ingress.teams, personalData });
  let down = false;
  const erase: CallEraser = (...args) =>
    down ? Promise.reject(new EventStoreUnavailableError('store down (test)')) : eraser(...args);
  const warnings: Array<{ fields: Record<string, unknown>; message: string }> = [];
  const log = {
    info: () => {},
    debug: () => {},
    warn: (fields: Record<string, unknown>, message: string) => void warnings.push({ fields, message }),
  };
  const sweep = startRetentionSweep({
    teams: { directoryTeams: () => retained.map((teamId) => ({ teamId, retentionDays: 30 })) as never },
    callHistory,
    erase,
    log: log as never,
    intervalMs: 3_600_000,
  });
  try {
    retained = [first.teamId, second.teamId];
    const firstPass = await sweep.sweep();
    assert.deepEqual(firstPass, { erased: 2, failed: 1 });
    assert.deepEqual(destroyed.sort(), ['after-it', 'other-team']);
    for (const callId of ['after-it', 'other-team'])
      assert.equal((await eventStore.readStream(callEvents.streamId(callId))).at(-1)!.type, 'CallErased');
    assert.notEqual((await eventStore.readStream(callEvents.streamId('unreadable'))).at(-1)!.type, 'CallErased');
    const warned = warnings.find((w) => /cannot be erased/.test(w.message));
    assert.ok(warned, JSON.stringify(warnings.map((w) => w.message)));
    assert.equal(warned.fields.callId, 'unreadable');
    assert.equal(warned.fields.teamId, first.teamId);

    // The erased calls leave the history; the unreadable one stays there, and the next pass tries it
    // again without stopping before a call that fell due since.
    await submit(second.teamId, 'due-since');
    expired[first.teamId] = ['unreadable'];
    expired[second.teamId] = ['due-since'];
    assert.deepEqual(await sweep.sweep(), { erased: 1, failed: 1 });
    assert.ok(destroyed.includes('due-since'));

    // An outage is no call's fault: it ends the pass, and the next pass is the retry.
    down = true;
    retained = [second.teamId];
    await assert.rejects(sweep.sweep(), EventStoreUnavailableError);
  } finally {
    await sweep.stop();
  }
});

test('however many calls cannot be erased, the calls after them are erased in the same pass, and each is warned of once', async () => {
  const { h, eventStore } = embedded;
  const { teamId } = await h.team();
  // More than one page (500) of calls that cannot be erased, before one that can.
  const stuck = Array.from({ length: 520 }, (_, i) => `stuck-${String(i).padStart(3, '0')}`);
  for (const callId of stuck) await unreadable(eventStore, teamId, callId);
  await eventStore.append(callEvents.streamId('erasable'), [
    callEvents.encode({ type: 'CallSubmitted', data: submittedData({ callId: 'erasable', teamId }) }),
  ]);
  const expired = { [teamId]: [...stuck, 'erasable'] };
  const personalData = { erase: async () => undefined } as unknown as PersonalData;
  const eraser = createCallEraser({ eventStore, teams: h.ingress.teams, personalData });
  const warned: string[] = [];
  const debugged: string[] = [];
  const log = {
    info: () => {},
    warn: (fields: { callId: string }) => void warned.push(fields.callId),
    debug: (fields: { callId: string }) => void debugged.push(fields.callId),
  };
  let retained: string[] = [];
  const sweep = startRetentionSweep({
    teams: { directoryTeams: () => retained.map((id) => ({ teamId: id, retentionDays: 30 })) as never },
    callHistory: historyOf(expired),
    erase: eraser,
    log: log as never,
    intervalMs: 3_600_000,
  });
  try {
    retained = [teamId];
    assert.deepEqual(await sweep.sweep(), { erased: 1, failed: stuck.length });
    assert.equal((await eventStore.readStream(callEvents.streamId('erasable'))).at(-1)!.type, 'CallErased');
    assert.deepEqual(warned, stuck);
    expired[teamId] = stuck;
    assert.deepEqual(await sweep.sweep(), { erased: 0, failed: stuck.length });
    assert.equal(warned.length, stuck.length, 'no second warning of a call');
    assert.deepEqual(debugged, stuck);
  } finally {
    await sweep.stop();
  }
});
