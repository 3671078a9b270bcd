import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CallSubmittedData } from '../../../../shared/domain/call/call-submitted.ts';
import { dealCallOf, dealEventId, dealRecordOf, uuidV5 } from '../../../../shared/domain/call/deal-record.ts';

const submitted: CallSubmittedData = {
  callId: 'c1',
  teamId: 't1',
  keyId: 'k1',
  submittedAt: '2026-11-20T10:00:00.000Z',
  submission: {
    aiTitleEnabled: true,
    tags: [],
    metadata: {},
    audioUrl: 'https://a.test/x.wav',
    repName: 'Dana Reyes',
    repEmail: 'dana@acme.test',
    deal: { dealSize: 5000 },
  },
  attributedTo: { kind: 'member', memberId: 'm1', email: 'dana@acme.test', name: 'Dana Reyes' },
  capacity: { reservedMinutes: 1, autoRechargedMinutes: 0 },
  warnings: [],
};

test('uuidV5 follows RFC 9562 (the RFC example: "www.example.com" in the DNS namespace)', () => {
  assert.equal(
    uuidV5('www.example.com', '6ba7b810-9dad-11d1-80b4-00c04fd430c8'),
    '2ed6657d-e927-568b-95e1-2665a8aea6a2',
  );
});

test('the deal event id is derived from the call id and the DealRecorded revision: stable, and distinct per write', () => {
  // Same value as Python's uuid.uuid5(UUID('6d1f3c52-8a0e-4b7e-9f45-2c1d7a9be3f0'), 'c1:5').
  assert.equal(dealEventId('c1', 5), 'c211b56a-58a0-5d55-9990-2f6577e75388');
  assert.equal(dealEventId('c1', 5), dealEventId('c1', 5));
  assert.notEqual(dealEventId('c1', 5), dealEventId('c1', 6));
  assert.notEqual(dealEventId('c1', 5), dealEventId('c2', 5));
});

test('the deal record: the written deal, the rep and attribution from the submission, null where absent', () => {
  const record = dealRecordOf(submitted, {
    revision: 5,
    data: { deal: { dealSize: 5000, dealDate: '2026-11-21T00:00:00.000Z' }, at: '2026-11-20T10:00:05.000Z' },
  });
  assert.deepEqual(record, {
    callId: 'c1',
    teamId: 't1',
    repName: 'Dana Reyes',
    repEmail: 'dana@acme.test',
    attributedTo: { kind: 'member', email: 'dana@acme.test', name: 'Dana Reyes' },
    dealSize: 5000,
    revenueCollected: null,
    dealDate: '2026-11-21T00:00:00.000Z',
    notes: null,
    recordedAt: '2026-11-20T10:00:05.000Z',
    eventId: 'c211b56a-58a0-5d55-9990-2f6577e75388',
  });
});

test('what a store keeps of CallSubmitted gives the same record as the whole event', () => {
  const event = { revision: 3, data: { deal: { notes: 'n', revenueCollected: 0 }, at: '2026-11-20T10:00:05.000Z' } };
  const kept = JSON.parse(JSON.stringify(dealCallOf(submitted))) as ReturnType<typeof dealCallOf>;
  assert.deepEqual(dealRecordOf(kept, event), dealRecordOf(submitted, event));
  assert.equal(
    dealRecordOf({ ...submitted, submission: { ...submitted.submission, repName: '  ', repEmail: undefined } }, event)
      .repName,
    null,
  );
});
