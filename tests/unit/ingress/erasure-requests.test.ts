/**
 * Erasure requests: the calls are fixed when the request is made, each is erased, the request
 * completes; one whose work failed (its process stopped, a backend was down) is taken up again
 * when it is read, and another team never sees it. The address is not stored. A call that cannot
 * be erased for a reason of its own is named as failed, and the request erases the others and
 * completes rather than starting over at every read.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EventDecodeError } from '../../../shared/domain/event-catalogue.ts';
import { EventStoreUnavailableError } from '../../../shared/ports/event-store.ts';
import type { CallHistoryStore } from '../../../shared/ports/read-models.ts';
import type { CallEraser } from '../../../services/ingress/call-eraser.ts';
import { CallsNotInHistoryError, createErasureRequests } from '../../../services/ingress/erasure-requests.ts';
import type { TeamService } from '../../../services/ingress/teams/team-service.ts';
import { callEvents } from '../../../shared/domain/call/call-catalogue.ts';
import { submittedData } from '../../conformance/read-models-fixtures.ts';
import { openEmbeddedStore } from '../../support/embedded-backends.ts';
import { eventually } from '../../support/eventually.ts';

/** Teams that hold no reservation: every call they accepted is finished. */
const noReservations = { load: async () => ({ reservations: new Map() }) } as unknown as Pick<TeamService, 'load'>;

/** Teams holding reservations for the calls in `reserved` (accepted, not finished). */
const reserving = (reserved: Set<string>) =>
  ({
    load: async () => ({
      reservations: {
        entries: () => [...reserved].map((callId) => [callId, { minutes: 1 }]).values(),
        has: (callId: string) => reserved.has(callId),
      },
    }),
  }) as unknown as Pick<TeamService, 'load'>;

test('an erasure request erases its calls and completes; a failed one is taken up again when read', async (t) => {
  const store = openEmbeddedStore(t);
  const callHistory = {
    callsOfEmail: async (teamId: string, email: string) =>
      teamId === 't1' && email === 'dana@acme.test' ? ['c1', 'c2'] : [],
  } as unknown as CallHistoryStore;
  const erased: string[] = [];
  let failOnce = true;
  const erase: CallEraser = async (_teamId, callId, cause, erasureId) => {
    assert.equal(cause, 'erasure_request');
    assert.ok(erasureId);
    if (callId === 'c2' && failOnce) {
      failOnce = false;
      throw new EventStoreUnavailableError('backend down (test)');
    }
    erased.push(callId);
    return 'erased';
  };
  const requests = createErasureRequests({
    eventStore: store,
    callHistory,
    teams: noReservations,
    erase,
    log: { info() {}, warn() {}, error() {} },
  });

  const erasureId = await requests.request('t1', 'dana@acme.test');
  await requests.close();
  assert.deepEqual(erased, ['c1'], 'the work stopped at the failing call');
  assert.equal((await requests.get('t1', erasureId))?.status, 'pending');
  // Reading it took it up again.
  const done = await eventually(
    async () => {
      const view = await requests.get('t1', erasureId);
      if (view?.status !== 'completed') throw new Error(`erasure ${view?.status}`);
      return view;
    },
    { timeoutMs: 5_000, intervalMs: 20 },
  );
  assert.deepEqual(done.calls, ['c1', 'c2']);
  assert.ok(erased.includes('c2'));
  assert.equal(await requests.get('t2', erasureId), undefined);
  assert.ok(
    !JSON.stringify((await store.readStream(`erasure-${erasureId}`)).map((e) => e.data)).includes('dana@acme.test'),
    'the address is not stored',
  );
});

test('a call that cannot be erased is named as failed with its code; the others are erased and the request completes, once', async (t) => {
  const store = openEmbeddedStore(t);
  const callHistory = {
    callsOfEmail: async () => ['c1', 'unreadable', 'c3'],
  } as unknown as CallHistoryStore;
  const attempts: string[] = [];
  const erase: CallEraser = async (_teamId, callId) => {
    attempts.push(callId);
    // What loading a call whose stream holds an event this version does not decode throws.
    if (callId === 'unreadable')
      throw new EventDecodeError(`call-${callId}`, 3, 'TranscriptRecorded', '/source', 'must be a string');
    return 'erased';
  };
  const warnings: Array<{ fields: Record<string, unknown>; message: string }> = [];
  const log = {
    info() {},
    warn: (fields: Record<string, unknown>, message: string) => void warnings.push({ fields, message }),
    error() {},
  };
  const requests = createErasureRequests({
    eventStore: store,
    callHistory,
    teams: noReservations,
    erase,
    log: log as never,
  });

  const erasureId = await requests.request('t1', 'dana@acme.test');
  await requests.close();
  assert.deepEqual(attempts, ['c1', 'unreadable', 'c3'], 'the calls after the failing one were erased');
  const view = await requests.get('t1', erasureId);
  assert.equal(view?.status, 'completed');
  assert.deepEqual(view.calls, ['c1', 'unreadable', 'c3']);
  assert.deepEqual(view.failed, [{ callId: 'unreadable', code: 'EVENT_DECODE_FAILED' }]);
  const warned = warnings.find((w) => /cannot be erased/.test(w.message));
  assert.ok(warned, JSON.stringify(warnings.map((w) => w.message)));
  assert.equal(warned.fields.callId, 'unreadable');
  assert.equal(warned.fields.erasureId, erasureId);

  // Completed: reading it again does not start it over.
  await requests.get('t1', erasureId);
  await requests.close();
  assert.equal(attempts.length, 3);
  const stored = await store.readStream(`erasure-${erasureId}`);
  assert.deepEqual(
    stored.map((e) => e.type),
    ['ErasureRequested', 'ErasureCompleted'],
  );
});

test('a request waits until the call history holds every call the team accepted and has not finished, so it misses none', async (t) => {
  const store = openEmbeddedStore(t);
  // c3 was accepted (its reservation held) while the processors were down: not in the history yet.
  const inHistory = new Set(['c1']);
  const callHistory = {
    get: async (_teamId: string, callId: string) => (inHistory.has(callId) ? { callId } : undefined),
    callsOfEmail: async () => [...inHistory].sort(),
  } as unknown as CallHistoryStore;
  const erased: string[] = [];
  const erase: CallEraser = async (_teamId, callId) => {
    erased.push(callId);
    return 'erased';
  };
  const log = { info() {}, warn() {}, error() {} };
  const reserved = new Set(['c1', 'c3']);

  // Never stored within the wait: refused as retriable, nothing requested.
  const refusing = createErasureRequests({
    eventStore: store,
    callHistory,
    teams: reserving(reserved),
    erase,
    log,
    historyWaitMs: 100,
  });
  await assert.rejects(refusing.request('t1', 'dana@acme.test'), (error) => {
    assert.ok(error instanceof CallsNotInHistoryError);
    assert.equal(error.missing, 1);
    assert.equal(error.retriable, true);
    return true;
  });
  assert.deepEqual(erased, []);

  // Stored and projected while the request waits: it is among the request's calls.
  const requests = createErasureRequests({ eventStore: store, callHistory, teams: reserving(reserved), erase, log });
  setTimeout(() => inHistory.add('c3'), 200);
  const erasureId = await requests.request('t1', 'dana@acme.test');
  await requests.close();
  assert.deepEqual((await requests.get('t1', erasureId))?.calls, ['c1', 'c3']);
  assert.deepEqual(erased.sort(), ['c1', 'c3']);

  // A reservation let go while waiting with nothing stored (the call never landed): nothing to wait for.
  reserved.add('c4');
  setTimeout(() => reserved.delete('c4'), 200);
  await requests.request('t1', 'dana@acme.test');
  await requests.close();

  // One let go because the call finished (settled) before the history, behind, wrote its row: waited for.
  await store.append(callEvents.streamId('c5'), [
    callEvents.encode({ type: 'CallSubmitted', data: submittedData({ callId: 'c5', teamId: 't1' }) }),
  ]);
  reserved.add('c5');
  setTimeout(() => reserved.delete('c5'), 100);
  setTimeout(() => inHistory.add('c5'), 400);
  const covering = await requests.request('t1', 'dana@acme.test');
  await requests.close();
  assert.deepEqual((await requests.get('t1', covering))?.calls, ['c1', 'c3', 'c5']);
});

test('a pending request nobody reads again is taken up by a scan, in this process or another', async (t) => {
  const store = openEmbeddedStore(t);
  const callHistory = {
    callsOfEmail: async (_teamId: string, email: string) => (email === 'dana@acme.test' ? ['c1'] : ['c9']),
  } as unknown as CallHistoryStore;
  const erased: string[] = [];
  let down = true;
  const erase: CallEraser = async (_teamId, callId) => {
    if (down) throw new EventStoreUnavailableError('backend down (test)');
    erased.push(callId);
    return 'erased';
  };
  const log = { info() {}, warn() {}, error() {} };
  const first = createErasureRequests({ eventStore: store, callHistory, teams: noReservations, erase, log });
  const stalled = await first.request('t1', 'dana@acme.test');
  await first.close();
  assert.equal((await first.get('t1', stalled))?.status, 'pending');
  await first.close();
  down = false;
  // One more request, completed at once: the scan passes over it.
  const done = await first.request('t1', 'sam@acme.test');
  await first.close();

  // Another process (a restart): it finds the pending request without anyone reading it.
  const second = createErasureRequests({ eventStore: store, callHistory, teams: noReservations, erase, log });
  assert.equal(await second.resumePending(), 1);
  await second.close();
  assert.equal((await second.get('t1', stalled))?.status, 'completed');
  assert.equal((await second.get('t1', done))?.status, 'completed');
  assert.deepEqual(erased.sort(), ['c1', 'c9']);
  assert.equal(await second.resumePending(), 0, 'nothing pending is left');
});
