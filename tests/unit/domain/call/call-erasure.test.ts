/**
 * CallErased: legal in any state but absent or erased, every later step refused; the erased state
 * keeps no personal fact; the history row goes. Personal fields split out of a payload and back,
 * and read as placeholders once the key is gone; sealed payloads hold none of them in clear.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { callDecider, decideCall } from '../../../../shared/domain/call/call-decider.ts';
import type { CallEvent } from '../../../../shared/domain/call/call-events.ts';
import { type CallState } from '../../../../shared/domain/call/call-state.ts';
import { evolveHistoryRow, erasedCallIds } from '../../../../shared/domain/call/call-history.ts';
import { callEvents } from '../../../../shared/domain/call/call-catalogue.ts';
import { mergePersonal, splitPersonal } from '../../../../shared/domain/call/personal-fields.ts';
import { isDomainError } from '../../../../shared/domain/decider.ts';
import { createPersonalData } from '../../../../shared/adapters/crypto/personal-data.ts';
import type { DataKeyStore } from '../../../../shared/ports/data-keys.ts';
import type { Json, RecordedEvent } from '../../../../shared/ports/event-store.ts';
import { newDataKey } from '../../../../shared/adapters/crypto/aes-gcm.ts';

const T0 = '2026-11-20T10:00:00.000Z';
const submittedData = {
  callId: 'c1',
  teamId: 't1',
  keyId: 'k1',
  submittedAt: T0,
  submission: {
    aiTitleEnabled: true,
    tags: ['a'],
    metadata: { crm: 'secret-meta' },
    transcript: { text: 'secret transcript', truncated: false, originalBytes: 17 },
    notes: 'secret notes',
    repEmail: 'rep@secret.test',
    deal: { dealSize: 5, notes: 'secret deal' },
  },
  attributedTo: { kind: 'owner' as const, email: 'owner@x.test', name: 'Owner' },
  capacity: { reservedMinutes: 1, autoRechargedMinutes: 0 },
  warnings: [],
};
const submitted: CallEvent = { type: 'CallSubmitted', data: submittedData };
const fold = (events: CallEvent[]): CallState => events.reduce(callDecider.evolve, callDecider.initialState);
const erase = { type: 'EraseCall', cause: 'deleted', now: '2026-11-20T11:00:00.000Z' } as const;

test('a pending, completed or failed call can be erased; the erased state keeps no facts; nothing is decided after it', () => {
  const failed: CallEvent = { type: 'CallFailed', data: { code: 'x', reason: 'y', at: T0 } };
  for (const history of [[submitted], [submitted, failed]]) {
    const events = decideCall(erase, fold(history));
    assert.deepEqual(events, [{ type: 'CallErased', data: { cause: 'deleted', at: erase.now } }]);
    const state = fold([...history, ...events]);
    assert.deepEqual(state, { status: 'erased', callId: 'c1', teamId: 't1', erasedAt: erase.now });
    for (const command of [
      erase,
      { type: 'StartProcessing', now: T0, timeoutMs: 1000 } as const,
      { type: 'FailCall', code: 'x', reason: 'y', now: T0 } as const,
    ]) {
      assert.throws(
        () => decideCall(command, state),
        (e) => isDomainError(e, 'CALL_ERASED'),
      );
    }
    assert.deepEqual(decideCall({ type: 'TimeOut', now: '2027-01-01T00:00:00.000Z', timeoutMs: 1 }, state), []);
    assert.deepEqual(
      decideCall({ type: 'SubmitCall', data: submittedData }, state),
      [],
      'a redelivered submission does not revive it',
    );
  }
  assert.throws(
    () => decideCall(erase, callDecider.initialState),
    (e) => isDomainError(e, 'CALL_NOT_FOUND'),
  );
});

test('the history row goes at CallErased and the batch names the call', () => {
  const stored = (type: string, data: Json, position: bigint): RecordedEvent => ({
    id: `e${position}`,
    streamId: 'call-c1',
    revision: Number(position),
    position,
    type,
    data,
    metadata: {},
    recordedAt: new Date(T0),
  });
  const recorded = (type: string, data: Json, position: bigint) => callEvents.decode(stored(type, data, position));
  const row = evolveHistoryRow(undefined, recorded('CallSubmitted', { ...submittedData }, 1n));
  assert.ok(row);
  const erased = recorded('CallErased', { cause: 'deleted', at: T0 }, 2n);
  assert.equal(evolveHistoryRow(row, erased), undefined);
  assert.deepEqual(erasedCallIds([erased]), ['c1']);
});

test('personal fields split out and back; with the key gone they read as placeholders', () => {
  const { rest, personal } = splitPersonal('CallSubmitted', submittedData);
  const text = JSON.stringify(rest);
  for (const secret of ['secret transcript', 'secret notes', 'rep@secret.test', 'secret-meta', 'secret deal'])
    assert.ok(!text.includes(secret), secret);
  assert.deepEqual(mergePersonal('CallSubmitted', rest, personal), submittedData);
  const erased = mergePersonal('CallSubmitted', rest, undefined) as typeof submittedData;
  assert.equal(erased.submission.transcript.text, '');
  assert.deepEqual(erased.submission.metadata, {});
  assert.equal(erased.submission.notes, undefined);
  assert.equal(erased.submission.deal.dealSize, 5);
});

/** Data keys in memory: a real key per call, destroyed for good. */
const memoryKeys = (): DataKeyStore => {
  const keys = new Map<string, Buffer | null>();
  return {
    async obtain(callId) {
      if (!keys.has(callId)) keys.set(callId, newDataKey());
      return keys.get(callId) ?? undefined;
    },
    async find(callId) {
      return keys.get(callId) ?? undefined;
    },
    async destroyed(callId) {
      return keys.get(callId) === null;
    },
    async destroy(callId) {
      keys.set(callId, null);
    },
    async close() {},
  };
};

test('sealed payloads hold nothing personal in clear, open with the key, and read erased once it is destroyed', async () => {
  const store = memoryKeys();
  const personal = createPersonalData(store);
  const sealed = await personal.seal('c1', 'CallSubmitted', submittedData);
  assert.ok(personal.isSealed(sealed));
  assert.ok(!JSON.stringify(sealed).includes('secret'));
  assert.deepEqual(await personal.open('c1', 'CallSubmitted', sealed), submittedData);
  await store.obtain('c2');
  await assert.rejects(
    personal.open('c2', 'CallSubmitted', sealed),
    'bound to its call: another call key cannot open it',
  );
  await personal.erase('c1');
  const opened = await personal.opened('c1', 'CallSubmitted', sealed);
  assert.equal(opened.erased, true);
  assert.ok(!JSON.stringify(opened.data).includes('secret'));
  assert.ok(
    !JSON.stringify(await personal.seal('c1', 'CallSubmitted', submittedData)).includes('secret'),
    'an erased call takes no new personal data',
  );
});

test('odd text and extreme numbers the ingest accepts open exactly as they were sealed', async () => {
  const personal = createPersonalData(memoryKeys());
  const odd = [
    'C0 \u0001\u0008\u001f DEL \u007f C1 \u0085\u009f',
    'zero-width \u200b\u200c\u200d\u2060\ufeff and bidi \u202e\u2066',
    'emoji 👩‍👩‍👧 🇺🇳 and combining e\u0301 and replacement \ufffd',
    'quotes " \\ </script> \\u0000 as text',
    'x'.repeat(100_000),
  ];
  const data = {
    ...submittedData,
    submission: {
      ...submittedData.submission,
      transcript: { text: odd.join('\n'), truncated: false, originalBytes: 0 },
      notes: odd[0]!,
      repName: odd[2]!,
      repEmail: 'odd+\u200b@example.test',
      metadata: {
        [odd[1]!]: odd[3]!,
        max: Number.MAX_VALUE,
        min: Number.MIN_VALUE,
        safe: Number.MAX_SAFE_INTEGER,
        neg: -1e308,
      },
      deal: { dealSize: Number.MAX_VALUE, notes: odd[2]! },
    },
  };
  const sealed = await personal.seal('c-odd', 'CallSubmitted', data);
  assert.ok(personal.isSealed(sealed));
  assert.ok(!JSON.stringify(sealed).includes('zero-width'), 'sealed: nothing in clear');
  assert.deepEqual(await personal.open('c-odd', 'CallSubmitted', sealed), data);
});
