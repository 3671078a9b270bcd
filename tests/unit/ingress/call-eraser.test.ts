/**
 * The call eraser on the embedded event store: a pending call's reservation is released only once
 * CallErased is stored, so an append that fails leaves the call pending with its reservation (it is
 * still charged when it runs), and a process that stops between the append and the release leaves
 * a reservation the orphan sweep releases. A call accepted (its reservation held) but not stored
 * within the wait is a retriable CallNotYetStoredError, never "absent"; one with no reservation and
 * no stream is absent.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { PersonalData } from '../../../shared/adapters/crypto/personal-data.ts';
import { callEvents } from '../../../shared/domain/call/call-catalogue.ts';
import { type EventStore, EventStoreUnavailableError } from '../../../shared/ports/event-store.ts';
import { CallNotYetStoredError, createCallEraser } from '../../../services/ingress/call-eraser.ts';
import { createCallRetry } from '../../../services/ingress/call-retry.ts';
import { isRetriableError } from '../../../shared/ports/unavailable.ts';
import { startOrphanSweep } from '../../../services/ingress/teams/orphan-reservations.ts';
import type { TeamService } from '../../../services/ingress/teams/team-service.ts';
import { submittedData } from '../../conformance/read-models-fixtures.ts';
import { type EmbeddedIngress, openEmbeddedIngress, overriding } from '../../support/embedded-ingress.ts';

describe('the call eraser and capacity reservations', () => {
  let embedded: EmbeddedIngress;
  before(async () => {
    embedded = await openEmbeddedIngress();
  });
  after(() => embedded.close());

  const destroyed: string[] = [];
  const personalData = { erase: async (callId: string) => void destroyed.push(callId) } as unknown as PersonalData;

  /** A call of a new team, accepted (its reservation held) and stored, not yet processed. */
  const pendingCall = async (callId: string) => {
    const { h, eventStore } = embedded;
    const { teamId } = await h.team();
    await h.ingress.teams.reserve(teamId, callId, 30);
    await eventStore.append(callEvents.streamId(callId), [
      callEvents.encode({ type: 'CallSubmitted', data: submittedData({ callId, teamId }) }),
    ]);
    return teamId;
  };
  const reserved = async (teamId: string) =>
    [...((await embedded.h.ingress.teams.load(teamId))?.reservations.entries() ?? [])].map(([callId]) => callId);
  const lastEvent = async (callId: string) =>
    (await embedded.eventStore.readStream(callEvents.streamId(callId))).at(-1)!.type;

  test('erasing a pending call releases its reservation', async () => {
    const teamId = await pendingCall('erased-whole');
    const erase = createCallEraser({ eventStore: embedded.eventStore, teams: embedded.h.ingress.teams, personalData });
    assert.equal(await erase(teamId, 'erased-whole', 'deleted'), 'erased');
    assert.equal(await lastEvent('erased-whole'), 'CallErased');
    assert.deepEqual(await reserved(teamId), []);
    assert.ok(destroyed.includes('erased-whole'));
  });

  test("an operator's retry that lands between the eraser's read and its erasure leaves no reservation behind", async () => {
    const { h, eventStore } = embedded;
    const { teamId } = await h.team();
    const callId = 'erase-vs-retry';
    await eventStore.append(callEvents.streamId(callId), [
      callEvents.encode({ type: 'CallSubmitted', data: submittedData({ callId, teamId }) }),
      callEvents.encode({
        type: 'CallFailed',
        data: { code: 'processing_timeout', reason: 'timed out', at: new Date().toISOString() },
      }),
    ]);
    const retry = createCallRetry({ eventStore, teams: h.ingress.teams });
    let raced = false;
    const racing = overriding<EventStore>(eventStore, {
      append: async (...args: Parameters<EventStore['append']>) => {
        // The eraser read the call failed; the retry reserves capacity again and makes it pending first.
        if (!raced && args[1].some((e) => e.type === 'CallErased')) {
          raced = true;
          await retry(callId, { warn() {}, error() {}, info() {} } as never);
        }
        return eventStore.append(...args);
      },
    });
    const erase = createCallEraser({ eventStore: racing, teams: h.ingress.teams, personalData });
    assert.equal(await erase(teamId, callId, 'deleted'), 'erased');
    assert.ok(raced);
    assert.deepEqual(
      (await eventStore.readStream(callEvents.streamId(callId))).map((e) => e.type),
      ['CallSubmitted', 'CallFailed', 'CallRetried', 'CallErased'],
    );
    assert.deepEqual(await reserved(teamId), []);
  });

  test('an append of CallErased that fails leaves the call pending with its reservation', async () => {
    const teamId = await pendingCall('append-fails');
    const eventStore = overriding(embedded.eventStore, {
      append: (...args: Parameters<EventStore['append']>) =>
        args[1].some((e) => e.type === 'CallErased')
          ? Promise.reject(new EventStoreUnavailableError('store down (test)'))
          : embedded.eventStore.append(...args),
    });
    const erase = createCallEraser({ eventStore, teams: embedded.h.ingress.teams, personalData });
    await assert.rejects(erase(teamId, 'append-fails', 'deleted'), EventStoreUnavailableError);
    assert.equal(await lastEvent('append-fails'), 'CallSubmitted');
    assert.deepEqual(
      await reserved(teamId),
      ['append-fails'],
      'the call may still run: it keeps its reservation, to be settled',
    );
  });

  test('a process that stops between CallErased and the release leaves a reservation the orphan sweep releases', async () => {
    const teamId = await pendingCall('stopped-before-release');
    const teams = overriding<TeamService>(embedded.h.ingress.teams, {
      release: () => Promise.reject(new Error('the process stopped here (test)')),
    });
    const erase = createCallEraser({ eventStore: embedded.eventStore, teams, personalData });
    await assert.rejects(erase(teamId, 'stopped-before-release', 'deleted'), /stopped here/);
    assert.equal(await lastEvent('stopped-before-release'), 'CallErased');
    assert.deepEqual(await reserved(teamId), ['stopped-before-release']);

    const sweep = startOrphanSweep({
      teams: embedded.h.ingress.teams,
      eventStore: embedded.eventStore,
      orphanAfterMs: 60_000,
      intervalMs: 3_600_000,
      log: { info: () => {}, warn: () => {} },
      now: () => new Date(Date.now() + 61_000),
    });
    try {
      const swept = await sweep.sweep();
      assert.ok(swept.stale >= 1, JSON.stringify(swept));
    } finally {
      await sweep.stop();
    }
    assert.deepEqual(await reserved(teamId), [], 'the erased call is no longer pending: its reservation is released');
  });

  test('a call accepted but not stored within the wait is not yet stored, never absent; once stored it is erased', async () => {
    const { h, eventStore } = embedded;
    const { teamId } = await h.team();
    // Accepted: the team holds its reservation; its CallSubmitted is on the log, not in its stream.
    await h.ingress.teams.reserve(teamId, 'not-stored-yet', 30);
    const erase = createCallEraser({ eventStore, teams: h.ingress.teams, personalData, submissionWaitMs: 200 });
    const started = Date.now();
    const refused = await erase(teamId, 'not-stored-yet', 'deleted').then(
      (outcome) => assert.fail(`a call not stored yet was answered ${outcome}`),
      (error: unknown) => error,
    );
    assert.ok(refused instanceof CallNotYetStoredError, String(refused));
    assert.equal(refused.callId, 'not-stored-yet');
    assert.ok(isRetriableError(refused), 'the caller is to try again');
    assert.ok(Date.now() - started >= 200, 'it waited for the call first');
    assert.deepEqual(await reserved(teamId), ['not-stored-yet'], 'nothing was released');

    await eventStore.append(callEvents.streamId('not-stored-yet'), [
      callEvents.encode({ type: 'CallSubmitted', data: submittedData({ callId: 'not-stored-yet', teamId }) }),
    ]);
    assert.equal(await erase(teamId, 'not-stored-yet', 'deleted'), 'erased');
    assert.deepEqual(await reserved(teamId), []);

    assert.equal(
      await erase(teamId, 'never-accepted', 'deleted'),
      'absent',
      'no reservation, no stream: absent at once',
    );
  });
});
