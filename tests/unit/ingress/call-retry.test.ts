/**
 * An operator's retry whose append fails after the capacity was reserved, on the embedded event
 * store: the reservation is given back only when the call, read again, is seen not pending. When
 * the append's outcome is unknown and the call cannot be read either, the reservation stays (the
 * retry may have been stored, and the call then runs on it); the orphan sweep releases it later if
 * the call turns out not pending.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { callEvents } from '../../../shared/domain/call/call-catalogue.ts';
import { type EventStore, EventStoreUnavailableError } from '../../../shared/ports/event-store.ts';
import { createCallRetry } from '../../../services/ingress/call-retry.ts';
import { startOrphanSweep } from '../../../services/ingress/teams/orphan-reservations.ts';
import { events, submittedData } from '../../conformance/read-models-fixtures.ts';
import { type EmbeddedIngress, openEmbeddedIngress, overriding } from '../../support/embedded-ingress.ts';

/** What the next append of CallRetried does: lands then reports an unknown outcome, or fails unsent. */
const faults = {
  retryAppend: undefined as undefined | 'written-unconfirmed' | 'not-written',
  /** The store goes down for reads of calls once the append of CallRetried has failed. */
  thenReadsFail: false,
  readDown: false,
};

describe('a retry whose append fails after its reservation', () => {
  let embedded: EmbeddedIngress;
  let eventStore: EventStore;
  before(async () => {
    embedded = await openEmbeddedIngress();
    const store = embedded.eventStore;
    eventStore = overriding(store, {
      append: async (...args: Parameters<EventStore['append']>) => {
        const fault = args[1].some((e) => e.type === 'CallRetried') ? faults.retryAppend : undefined;
        if (fault === 'not-written') {
          faults.readDown = faults.thenReadsFail;
          throw new EventStoreUnavailableError('store down (test)');
        }
        const result = await store.append(...args);
        if (fault === 'written-unconfirmed') {
          faults.readDown = faults.thenReadsFail;
          throw new EventStoreUnavailableError('no answer in time (test)', { outcomeUnknown: true });
        }
        return result;
      },
      readStream: (...args: Parameters<EventStore['readStream']>) =>
        faults.readDown && args[0].startsWith('call-')
          ? Promise.reject(new EventStoreUnavailableError('store down (test)'))
          : store.readStream(...args),
    });
  });
  after(() => embedded.close());

  const warnings: string[] = [];
  const log = {
    warn: (_fields: unknown, message: string) => void warnings.push(message),
    error: () => {},
  } as never;

  /** A call of a new team that failed with a code a retry can change; its reservation was released at the failure. */
  const failedCall = async (callId: string) => {
    const { teamId } = await embedded.h.team();
    await embedded.eventStore.append(callEvents.streamId(callId), [
      callEvents.encode(events.submitted(submittedData({ callId, teamId }))),
      callEvents.encode(events.failed('processing_timeout', 'the deadline passed')),
    ]);
    return teamId;
  };
  const reserved = async (teamId: string) =>
    [...((await embedded.h.ingress.teams.load(teamId))?.reservations.entries() ?? [])].map(([callId]) => callId);
  const types = async (callId: string) =>
    (await embedded.eventStore.readStream(callEvents.streamId(callId))).map((e) => e.type);

  test('CallRetried stored but unconfirmed, and the call unreadable: the reservation stays with the call that now runs', async () => {
    const teamId = await failedCall('landed');
    const retry = createCallRetry({ eventStore, teams: embedded.h.ingress.teams });
    faults.retryAppend = 'written-unconfirmed';
    faults.thenReadsFail = true;
    try {
      await assert.rejects(retry('landed', log), EventStoreUnavailableError);
    } finally {
      Object.assign(faults, { retryAppend: undefined, thenReadsFail: false, readDown: false });
    }
    assert.equal((await types('landed')).at(-1), 'CallRetried', 'the retry was stored');
    assert.deepEqual(await reserved(teamId), ['landed'], 'the retried call keeps its reservation, to be settled');
    assert.ok(warnings.some((w) => /reservation stays/.test(w)));
  });

  test('the append surely failed and the call unreadable: the reservation stays until the orphan sweep sees the call failed', async () => {
    const teamId = await failedCall('not-landed');
    const retry = createCallRetry({ eventStore, teams: embedded.h.ingress.teams });
    faults.retryAppend = 'not-written';
    faults.thenReadsFail = true;
    try {
      await assert.rejects(retry('not-landed', log), EventStoreUnavailableError);
    } finally {
      Object.assign(faults, { retryAppend: undefined, thenReadsFail: false, readDown: false });
    }
    assert.equal((await types('not-landed')).at(-1), 'CallFailed');
    assert.deepEqual(await reserved(teamId), ['not-landed']);
    const sweep = startOrphanSweep({
      teams: embedded.h.ingress.teams,
      eventStore: embedded.eventStore,
      orphanAfterMs: 60_000,
      intervalMs: 3_600_000,
      log: { info: () => {}, warn: () => {} },
      now: () => new Date(Date.now() + 61_000),
    });
    try {
      await sweep.sweep();
    } finally {
      await sweep.stop();
    }
    assert.deepEqual(await reserved(teamId), [], 'the failed call is not pending: the sweep released its reservation');
  });

  test('the append surely failed and the call reads as failed: the reservation is given back at once', async () => {
    const teamId = await failedCall('read-back');
    const retry = createCallRetry({ eventStore, teams: embedded.h.ingress.teams });
    faults.retryAppend = 'not-written';
    faults.thenReadsFail = false;
    try {
      await assert.rejects(retry('read-back', log), EventStoreUnavailableError);
    } finally {
      Object.assign(faults, { retryAppend: undefined, thenReadsFail: false, readDown: false });
    }
    assert.deepEqual(await reserved(teamId), []);
  });
});
