/**
 * A publish whose outcome is unknown keeps the capacity reservation and the body bound to its
 * Idempotency-Key, and a retry with that key submits the same call (the key's claim names it);
 * a publish that surely failed gives everything back; a 201 whose response could not be stored
 * is still a 201; a reservation whose call never appears is released by the orphan sweep. On the
 * embedded backends, with the log's publish and the idempotency store made to fail on demand.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { type EventLog, EventLogUnavailableError } from '../../../shared/ports/event-log.ts';
import { type EventStore, EventStoreUnavailableError } from '../../../shared/ports/event-store.ts';
import { TOPICS } from '../../../shared/topics.ts';
import { idempotencyStreamId } from '../../../shared/domain/idempotency/idempotency-decider.ts';
import { callIdForKey } from '../../../services/ingress/ingest-route.ts';
import { startOrphanSweep } from '../../../services/ingress/teams/orphan-reservations.ts';
import { type EmbeddedIngress, openEmbeddedIngress, overriding } from '../../support/embedded-ingress.ts';
import { type Deferred, deferred } from '../../support/deferred.ts';
import { eventually } from '../../support/eventually.ts';
import { IDEMPOTENCY_CLAIM_LEASE_MS } from '../../../shared/domain/idempotency/idempotency-decider.ts';
import type { Harness } from '../../support/ingress-harness.ts';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
const TRANSCRIPT = 'Rep: Hello Dana, thanks for joining.\nDana: Happy to be here.';

/**
 * `written-unconfirmed`: the records reach the log, then the publish fails all the same (a lost
 * acknowledgement). `gate`: the next publish waits for it, then fails as "not sent" if it rejects.
 */
const faults = {
  publish: undefined as undefined | 'written-unconfirmed' | 'not-sent',
  storeResponse: false,
  /** How many of the next releases of an Idempotency-Key the store refuses as unavailable. */
  failReleases: 0,
  gate: undefined as undefined | { entered: Deferred<void>; release: Deferred<void> },
};
/** How far the ingress's clock runs ahead of the wall clock. */
let ahead = 0;

describe('ambiguous publishes, Idempotency-Key retries and orphaned reservations', () => {
  let embedded: EmbeddedIngress;
  let eventStore: EventStore;
  let eventLog: EventLog;
  let h: Harness;

  before(async () => {
    embedded = await openEmbeddedIngress(
      ({ eventStore: store, eventLog: log }) => ({
        eventLog: overriding(log, {
          publish: async (...args: Parameters<EventLog['publish']>) => {
            const gate = faults.gate;
            if (gate) {
              faults.gate = undefined;
              gate.entered.resolve();
              await gate.release.promise.catch((error: unknown) => {
                throw new EventLogUnavailableError('broker refused the connection (test)', { cause: error });
              });
            }
            if (faults.publish === 'not-sent')
              throw new EventLogUnavailableError('broker refused the connection (test)');
            const positions = await log.publish(...args);
            if (faults.publish === 'written-unconfirmed')
              throw new EventLogUnavailableError('no acknowledgement in time (test)', { outcomeUnknown: true });
            return positions;
          },
        }),
        eventStore: overriding(store, {
          append: (...args: Parameters<EventStore['append']>) => {
            if (faults.storeResponse && args[1].some((e) => e.type === 'IdempotentResponseStored'))
              return Promise.reject(new EventStoreUnavailableError('store down (test)'));
            if (faults.failReleases > 0 && args[1].some((e) => e.type === 'IdempotencyKeyReleased')) {
              faults.failReleases--;
              return Promise.reject(new EventStoreUnavailableError('store down (test)'));
            }
            return store.append(...args);
          },
        }),
      }),
      { now: () => new Date(Date.now() + ahead) },
    );
    ({ h, eventStore, eventLog } = embedded);
  });

  after(() => embedded.close());

  const capacity = async (teamId: string) =>
    (await h.admin('GET', `/api/admin/teams/${teamId}`)).json<{
      capacity: { remainingMinutes: number; reservedCalls: number };
    }>().capacity;
  const recordsOf = async (callId: string) =>
    (await eventLog.read(TOPICS.callsSubmitted, { limit: 100_000 })).filter((r) => r.key === callId);

  test('unknown outcome: 503 "may have been accepted", the reservation stays, and the retry with the same key names the same call', async () => {
    const { teamId, key } = await h.team();
    const before = await capacity(teamId);
    faults.publish = 'written-unconfirmed';
    let first;
    try {
      first = await h.ingest({ key, body: { transcript: TRANSCRIPT }, headers: { 'idempotency-key': 'sync-1' } });
    } finally {
      faults.publish = undefined;
    }
    assert.equal(first.statusCode, 503, first.body);
    assert.match(first.json<{ detail: string }>().detail, /may have been accepted/);
    const held = await capacity(teamId);
    assert.equal(held.reservedCalls, before.reservedCalls + 1, 'the reservation of a call that may exist is kept');

    const other = await h.ingest({
      key,
      body: { transcript: `${TRANSCRIPT}\nRep: another body` },
      headers: { 'idempotency-key': 'sync-1' },
    });
    assert.equal(other.statusCode, 422, 'the key stays bound to the body whose call may exist');

    const retry = await h.ingest({ key, body: { transcript: TRANSCRIPT }, headers: { 'idempotency-key': 'sync-1' } });
    assert.equal(retry.statusCode, 201, retry.body);
    const { callId } = retry.json<{ callId: string }>();
    assert.match(callId, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const records = await recordsOf(callId);
    assert.equal(records.length, 2, 'both attempts carry the same call id: the processor keeps the first');
    assert.equal((await capacity(teamId)).reservedCalls, held.reservedCalls, 'the retry reserved nothing more');
  });

  test('a retry of an unknown outcome whose own publish surely failed keeps the key bound to the call that may exist', async () => {
    const { key, teamId } = await h.team();
    const body = { transcript: TRANSCRIPT, callTitle: 'bound' };
    const attempt = async (fault: typeof faults.publish, sent = body) => {
      faults.publish = fault;
      try {
        return await h.ingest({ key, body: sent, headers: { 'idempotency-key': 'sync-5' } });
      } finally {
        faults.publish = undefined;
      }
    };
    const before = await capacity(teamId);
    assert.equal((await attempt('written-unconfirmed')).statusCode, 503);
    const failed = await attempt('not-sent');
    assert.equal(failed.statusCode, 503, failed.body);
    assert.match(
      failed.json<{ detail: string }>().detail,
      /may have been accepted/,
      'the first attempt may have landed',
    );
    assert.equal(
      (await capacity(teamId)).reservedCalls,
      before.reservedCalls + 1,
      "the first attempt's reservation stays: its record is on the log",
    );
    assert.equal((await attempt(undefined, { ...body, callTitle: 'other' })).statusCode, 422);
    const retry = await attempt(undefined);
    assert.equal(retry.statusCode, 201, retry.body);
    assert.equal(
      (await recordsOf(retry.json<{ callId: string }>().callId)).length,
      2,
      'the first attempt and this one',
    );
  });

  test('an attempt that outlives its lease leaves the attempt that took over alone: its reservation, its key, its 201', async () => {
    const { key, teamId } = await h.team();
    const before = await capacity(teamId);
    const body = { transcript: TRANSCRIPT, callTitle: 'slow' };
    const gate = { entered: deferred(), release: deferred() };
    faults.gate = gate;
    const slow = h.ingest({ key, body, headers: { 'idempotency-key': 'sync-6' } });
    await gate.entered.promise;
    ahead = IDEMPOTENCY_CLAIM_LEASE_MS;
    let retry;
    try {
      retry = await h.ingest({ key, body, headers: { 'idempotency-key': 'sync-6' } });
    } finally {
      ahead = 0;
    }
    assert.equal(retry.statusCode, 201, retry.body);
    const { callId } = retry.json<{ callId: string }>();
    gate.release.reject(new Error('the slow attempt gives up (test)'));
    const late = await slow;
    assert.equal(late.statusCode, 503, late.body);
    assert.match(late.json<{ detail: string }>().detail, /may have been accepted/);
    assert.equal(
      (await capacity(teamId)).reservedCalls,
      before.reservedCalls + 1,
      'the call on the log keeps its reservation',
    );
    const again = await h.ingest({ key, body, headers: { 'idempotency-key': 'sync-6' } });
    assert.equal(again.statusCode, 201, again.body);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.json<{ callId: string }>().callId, callId);
    assert.equal((await recordsOf(callId)).length, 1);
  });

  test('a claim stored before claims named their call: the retry after its lease submits the call the key derives', async () => {
    const { key, keyId } = await h.team();
    const payload = JSON.stringify({ transcript: TRANSCRIPT });
    const id = `${keyId}-${sha256('legacy-1').slice(0, 32)}`;
    // What an earlier version wrote for a request that died after its claim.
    await eventStore.append(idempotencyStreamId(id), [
      {
        type: 'IdempotencyKeyClaimed',
        data: { bodyHash: sha256(payload), at: new Date(Date.now() - 60_000).toISOString() },
      },
    ]);
    const retry = await h.ingest({ key, payload, headers: { 'idempotency-key': 'legacy-1' } });
    assert.equal(retry.statusCode, 201, retry.body);
    assert.equal(retry.json<{ callId: string }>().callId, callIdForKey(id));
  });

  test('a publish that surely failed gives the reservation back and frees the key for another body', async () => {
    const { teamId, key } = await h.team();
    const before = await capacity(teamId);
    faults.publish = 'not-sent';
    try {
      const res = await h.ingest({ key, body: { transcript: TRANSCRIPT }, headers: { 'idempotency-key': 'sync-2' } });
      assert.equal(res.statusCode, 503);
      assert.match(res.json<{ detail: string }>().detail, /nothing was accepted/);
    } finally {
      faults.publish = undefined;
    }
    assert.deepEqual(await capacity(teamId), before);
    const res = await h.ingest({
      key,
      body: { transcript: `${TRANSCRIPT}\nRep: fixed` },
      headers: { 'idempotency-key': 'sync-2' },
    });
    assert.equal(res.statusCode, 201, res.body);
  });

  test('a 201 whose response could not be stored is answered all the same; the key is held only for its lease', async () => {
    const { key } = await h.team();
    faults.storeResponse = true;
    let res;
    try {
      res = await h.ingest({ key, body: { transcript: TRANSCRIPT }, headers: { 'idempotency-key': 'sync-3' } });
    } finally {
      faults.storeResponse = false;
    }
    assert.equal(res.statusCode, 201, res.body);
    assert.equal((await recordsOf(res.json<{ callId: string }>().callId)).length, 1);
    assert.ok(h.logLines.some((line) => line.includes('could not be stored for replay')));
    const again = await h.ingest({ key, body: { transcript: TRANSCRIPT }, headers: { 'idempotency-key': 'sync-3' } });
    assert.equal(again.statusCode, 409, 'within the lease the claim still holds the key');
    const retryAfter = Number(again.headers['retry-after']);
    assert.ok(
      retryAfter >= 1 && retryAfter <= IDEMPOTENCY_CLAIM_LEASE_MS / 1000,
      `Retry-After ${again.headers['retry-after']}`,
    );
  });

  test("a 409 while another request holds the key says in Retry-After when that claim's lease ends", async () => {
    const { key } = await h.team();
    const body = { transcript: TRANSCRIPT, callTitle: 'held' };
    const gate = { entered: deferred(), release: deferred() };
    faults.gate = gate;
    const first = h.ingest({ key, body, headers: { 'idempotency-key': 'sync-7' } });
    await gate.entered.promise;
    let held;
    try {
      held = await h.ingest({ key, body, headers: { 'idempotency-key': 'sync-7' } });
      assert.equal(held.statusCode, 409, held.body);
      assert.equal(held.json<{ code: string }>().code, 'CONFLICT');
      const fresh = Number(held.headers['retry-after']);
      assert.ok(
        fresh >= IDEMPOTENCY_CLAIM_LEASE_MS / 1000 - 2 && fresh <= IDEMPOTENCY_CLAIM_LEASE_MS / 1000,
        `${fresh}`,
      );
      ahead = IDEMPOTENCY_CLAIM_LEASE_MS - 10_000;
      const later = await h.ingest({ key, body, headers: { 'idempotency-key': 'sync-7' } });
      assert.equal(later.statusCode, 409, later.body);
      const left = Number(later.headers['retry-after']);
      assert.ok(left >= 8 && left <= 10, `20 s into the lease, Retry-After ${left}: what is left of it`);
    } finally {
      ahead = 0;
      gate.release.resolve();
    }
    assert.equal((await first).statusCode, 201);
  });

  test('a 503 whose key release the store did not take: Retry-After covers the rest of the lease, the release is stored in the background, and the retry then runs (no 409)', async () => {
    const { key, keyId } = await h.team();
    const body = { transcript: TRANSCRIPT, callTitle: 'released later' };
    faults.publish = 'not-sent';
    faults.failReleases = 1;
    let failed;
    try {
      failed = await h.ingest({ key, body, headers: { 'idempotency-key': 'sync-8' } });
    } finally {
      faults.publish = undefined;
    }
    assert.equal(failed.statusCode, 503, failed.body);
    assert.match(failed.json<{ detail: string }>().detail, /nothing was accepted/);
    const retryAfter = Number(failed.headers['retry-after']);
    assert.ok(
      retryAfter >= IDEMPOTENCY_CLAIM_LEASE_MS / 1000 - 2 && retryAfter <= IDEMPOTENCY_CLAIM_LEASE_MS / 1000,
      `Retry-After ${failed.headers['retry-after']}: the key is held until its release is stored, at most to the lease's end`,
    );
    assert.equal(faults.failReleases, 0, 'the release was tried before the answer');

    const stream = idempotencyStreamId(`${keyId}-${sha256('sync-8').slice(0, 32)}`);
    await eventually(
      async () => assert.equal((await eventStore.readStream(stream)).at(-1)?.type, 'IdempotencyKeyReleased'),
      { timeoutMs: 5000, intervalMs: 20 },
    );
    // Logged once the append it waited on has answered, which may come a moment after the event is readable.
    await eventually(() =>
      assert.ok(h.logLines.some((line) => line.includes('idempotency release stored after retrying'))),
    );
    const retry = await h.ingest({ key, body, headers: { 'idempotency-key': 'sync-8' } });
    assert.equal(retry.statusCode, 201, retry.body);
  });

  test('the orphan sweep releases a reservation whose call never reached the log, and only once it is old enough', async () => {
    const { teamId } = await h.team();
    const before = await capacity(teamId);
    // What an ingest that died between its two steps leaves behind: a reservation, no record.
    await h.ingress.teams.reserve(teamId, 'call-that-never-was', 30);
    assert.equal((await capacity(teamId)).reservedCalls, before.reservedCalls + 1);
    const log = { info: () => {}, warn: () => {} };
    const young = startOrphanSweep({ teams: h.ingress.teams, eventStore, orphanAfterMs: 60_000, log });
    assert.deepEqual(await young.sweep(), { orphaned: 0, stale: 0, failed: 0 });
    await young.stop();
    const later = startOrphanSweep({
      teams: h.ingress.teams,
      eventStore,
      orphanAfterMs: 60_000,
      log,
      now: () => new Date(Date.now() + 61_000),
    });
    const swept = await later.sweep();
    await later.stop();
    // Calls accepted by the tests above count too: no processor runs here, so none has a stream.
    assert.ok(swept.orphaned >= 1, JSON.stringify(swept));
    assert.deepEqual(await capacity(teamId), before);
    const again = startOrphanSweep({
      teams: h.ingress.teams,
      eventStore,
      orphanAfterMs: 60_000,
      log,
      now: () => new Date(Date.now() + 61_000),
    });
    assert.deepEqual(
      await again.sweep(),
      { orphaned: 0, stale: 0, failed: 0 },
      'a released reservation is released once',
    );
    await again.stop();
  });

  test('a reservation whose call cannot be read is left and logged; the sweep goes on to the ones after it', async () => {
    const { teamId } = await h.team();
    // A call whose stream holds an event that does not decode, reserved first, then one that never was.
    await h.ingress.teams.reserve(teamId, 'call-unreadable', 30);
    await eventStore.append('call-call-unreadable', [{ type: 'CallSubmitted', data: { not: 'a submission' } }]);
    await h.ingress.teams.reserve(teamId, 'call-after-it', 30);
    const warnings: string[] = [];
    const sweep = startOrphanSweep({
      teams: h.ingress.teams,
      eventStore,
      orphanAfterMs: 60_000,
      log: { info: () => {}, warn: (_fields: unknown, message?: string) => void warnings.push(String(message)) },
      now: () => new Date(Date.now() + 61_000),
    });
    const swept = await sweep.sweep();
    await sweep.stop();
    assert.equal(swept.failed, 1, JSON.stringify(swept));
    assert.ok(swept.orphaned >= 1, JSON.stringify(swept));
    const team = await h.ingress.teams.load(teamId);
    assert.deepEqual(
      [...(team?.reservations.entries() ?? [])].map(([callId]) => callId),
      ['call-unreadable'],
      'the reservation after the unreadable call was released',
    );
    assert.ok(warnings.some((w) => /cannot be judged/.test(w)));
  });
});
