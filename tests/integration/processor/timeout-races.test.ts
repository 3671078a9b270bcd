/**
 * The processing deadline's timer against the call's actor, on the embedded pipeline: each
 * changes the team's capacity before it appends the call's end, in two writes. A call whose
 * actor settled it but could not store CallCompleted before the deadline is completed by the
 * timer, not failed (it would be failed and charged, and charged again on a retry).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type EventStore, EventStoreUnavailableError } from '../../../shared/ports/event-store.ts';
import { overriding } from '../../support/embedded-ingress.ts';
import { type EmbeddedPipeline, openEmbeddedPipeline } from '../../support/embedded-pipeline.ts';

const TIMEOUT_MS = 1000;

describe('processing deadline against the call actor', () => {
  let embedded: EmbeddedPipeline;
  /** CallCompleted cannot be appended until then (epoch ms). */
  let completionsFailUntil = 0;

  before(async () => {
    embedded = await openEmbeddedPipeline(
      { processingTimeoutMs: TIMEOUT_MS },
      {
        wrapEventStore: (store: EventStore) =>
          overriding(store, {
            append: (...args: Parameters<EventStore['append']>) =>
              Date.now() < completionsFailUntil && args[1].some((e) => e.type === 'CallCompleted')
                ? Promise.reject(new EventStoreUnavailableError('store down for CallCompleted (test)'))
                : store.append(...args),
          }),
      },
    );
  });
  after(() => embedded.close());

  test('settled by its actor, CallCompleted not stored by the deadline: the timer completes the call, charged once', async () => {
    const { h } = embedded;
    const { teamId, key } = await h.team();
    completionsFailUntil = Date.now() + TIMEOUT_MS + 100;
    const res = await h.ingest({ key, body: { transcript: 'Rep: Hello there.\nDana: Hi, glad to talk.' } });
    assert.equal(res.statusCode, 201, res.body);
    const { callId } = res.json<{ callId: string }>();
    const events = await h.callEvents(callId, undefined, 15_000);
    assert.deepEqual(
      events.filter((e) => e.type === 'CallCompleted' || e.type === 'CallFailed').map((e) => e.type),
      ['CallCompleted'],
    );
    const capacity = (await h.eventStore.readStream(`team-${teamId}`))
      .filter((e) => (e.data as { callId?: string }).callId === callId)
      .map((e) => e.type);
    assert.deepEqual(capacity, ['CapacityReserved', 'CapacitySettled']);
  });
});
