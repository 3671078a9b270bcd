/**
 * What an Idempotency-Key does to the calls it names, followed through the whole embedded pipeline
 * (ingress, processor, projections): a retry that takes over a key whose 201 was not stored, after
 * its call ran, answers that 201 again and reserves nothing, or a 404 once that call was erased; a
 * key used again after its 24 hours names a new call, which runs (docs/decisions/0006-idempotency-key.md).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  IDEMPOTENCY_CLAIM_LEASE_MS,
  IDEMPOTENCY_WINDOW_MS,
} from '../../../shared/domain/idempotency/idempotency-decider.ts';
import { type EventStore, EventStoreUnavailableError } from '../../../shared/ports/event-store.ts';
import { type EmbeddedPipeline, openEmbeddedPipeline } from '../../support/embedded-pipeline.ts';
import { overriding } from '../../support/embedded-ingress.ts';
import { eventData } from '../../support/pipeline-harness.ts';

const TRANSCRIPT = 'Rep: Hello Dana, thanks for joining.\nDana: Happy to be here.';

describe('Idempotency-Key: the calls a key names, through the pipeline', () => {
  let embedded: EmbeddedPipeline;
  /** How far the ingress's clock runs ahead of the wall clock. */
  let ahead = 0;
  let failStoredResponses = false;

  before(async () => {
    embedded = await openEmbeddedPipeline(
      {},
      {
        erasure: true,
        now: () => new Date(Date.now() + ahead),
        wrapEventStore: (store: EventStore) =>
          overriding(store, {
            append: (...args: Parameters<EventStore['append']>) =>
              failStoredResponses && args[1].some((e) => e.type === 'IdempotentResponseStored')
                ? Promise.reject(new EventStoreUnavailableError('store down (test)'))
                : store.append(...args),
          }),
      },
    );
  });
  after(() => embedded.close());

  const capacity = async (teamId: string) =>
    (await embedded.h.admin('GET', `/api/admin/teams/${teamId}`)).json<{
      capacity: { remainingMinutes: number; reservedCalls: number };
    }>().capacity;
  const recordsOf = async (callId: string) =>
    (await embedded.h.eventLog.read(embedded.h.topics.callsSubmitted, { limit: 100_000 })).filter(
      (r) => r.key === callId,
    );

  test('a retry after the lease of a call that ran, whose 201 was not stored: the same 201, no second reservation or record', async () => {
    const { h } = embedded;
    const { teamId, key } = await h.team();
    const body = { transcript: TRANSCRIPT, callTitle: 'Once only' };
    failStoredResponses = true;
    let first;
    try {
      first = await h.ingest({ key, body, headers: { 'idempotency-key': 'crm-7' } });
    } finally {
      failStoredResponses = false;
    }
    assert.equal(first.statusCode, 201, first.body);
    const { callId } = first.json<{ callId: string }>();
    await h.callEvents(callId);
    const settled = await capacity(teamId);
    assert.equal(settled.reservedCalls, 0, 'the call ran and settled its reservation');

    ahead += IDEMPOTENCY_CLAIM_LEASE_MS;
    const retry = await h.ingest({ key, body, headers: { 'idempotency-key': 'crm-7' } });
    assert.equal(retry.statusCode, 201, retry.body);
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.deepEqual(retry.json(), first.json());
    assert.deepEqual(await capacity(teamId), settled, 'nothing reserved again');
    assert.equal((await recordsOf(callId)).length, 1, 'nothing published again');

    const third = await h.ingest({ key, body, headers: { 'idempotency-key': 'crm-7' } });
    assert.equal(third.statusCode, 201, third.body);
    assert.equal(third.headers['idempotent-replayed'], 'true', 'the answer is stored now');
    assert.deepEqual(third.json(), first.json());
  });

  test('a retry after the lease of a call erased since, whose 201 was not stored: 404, nothing submitted again', async () => {
    const { h } = embedded;
    const { key } = await h.team();
    const body = { transcript: TRANSCRIPT, callTitle: 'Erased before the retry' };
    failStoredResponses = true;
    let first;
    try {
      first = await h.ingest({ key, body, headers: { 'idempotency-key': 'crm-8' } });
    } finally {
      failStoredResponses = false;
    }
    assert.equal(first.statusCode, 201, first.body);
    const { callId } = first.json<{ callId: string }>();
    await h.callEvents(callId);
    const erased = await h.ingress.app.inject({
      method: 'DELETE',
      url: `/api/calls/${callId}`,
      headers: { 'x-api-key': key },
    });
    assert.equal(erased.statusCode, 202, erased.body);

    ahead += IDEMPOTENCY_CLAIM_LEASE_MS;
    for (const attempt of ['the retry', 'the one after']) {
      const retry = await h.ingest({ key, body, headers: { 'idempotency-key': 'crm-8' } });
      assert.equal(retry.statusCode, 404, `${attempt}: ${retry.body}`);
      assert.equal(retry.json<{ code: string }>().code, 'NOT_FOUND');
    }
    assert.equal((await recordsOf(callId)).length, 1, 'nothing published again');
  });

  test('a key used again after its 24 hours names a new call, which runs with the new body', async () => {
    const { h } = embedded;
    const { key } = await h.team();
    const first = await h.ingest({
      key,
      body: { transcript: TRANSCRIPT, callTitle: 'Monday' },
      headers: { 'idempotency-key': 'deal-42' },
    });
    assert.equal(first.statusCode, 201, first.body);
    const firstId = first.json<{ callId: string }>().callId;
    await h.callEvents(firstId);

    ahead += IDEMPOTENCY_WINDOW_MS;
    for (const callTitle of ['Tuesday', 'Monday']) {
      const again = await h.ingest({
        key,
        body: { transcript: TRANSCRIPT, callTitle },
        headers: { 'idempotency-key': 'deal-42' },
      });
      assert.equal(again.statusCode, 201, again.body);
      assert.equal(again.headers['idempotent-replayed'], undefined);
      const againId = again.json<{ callId: string }>().callId;
      assert.notEqual(againId, firstId, 'a new call, not the one the key named a day before');
      const events = await h.callEvents(againId);
      assert.ok(eventData(events, 'CallCompleted'), events.map((e) => e.type).join());
      assert.equal(eventData(events, 'CallSubmitted')?.submission.callTitle, callTitle);
      ahead += IDEMPOTENCY_WINDOW_MS;
    }
  });
});
