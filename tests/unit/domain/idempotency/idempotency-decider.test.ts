import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  current,
  IDEMPOTENCY_CLAIM_LEASE_MS,
  type IdempotencyEvent,
  IdempotencyKeyInUseError,
  idempotencyDecider,
} from '../../../../shared/domain/idempotency/idempotency-decider.ts';
import { deciderSpec } from '../../../support/decider-spec.ts';

const { given } = deciderSpec(idempotencyDecider);
const T0 = '2026-11-20T10:00:00.000Z';
const claimed: IdempotencyEvent = {
  type: 'IdempotencyKeyClaimed',
  data: { bodyHash: 'h1', at: T0, callId: 'c1', attempt: 'a1' },
};
const stored: IdempotencyEvent = {
  type: 'IdempotentResponseStored',
  data: { status: 201, body: { callId: 'c1' }, at: T0 },
};

test('the first request with a key claims it for the call it proposes', () => {
  given([]).when({ type: 'Claim', bodyHash: 'h1', now: T0, callId: 'c1', attempt: 'a1' }).then([claimed]);
  assert.deepEqual(given([claimed]).state(), {
    status: 'claimed',
    bodyHash: 'h1',
    at: T0,
    callId: 'c1',
    attempt: 'a1',
  });
});

test('the same key and body after the response is stored: nothing to do, the stored response is replayed', () => {
  const state = given([claimed, stored])
    .when({ type: 'Claim', bodyHash: 'h1', now: '2026-11-20T12:00:00.000Z', callId: 'c-new', attempt: 'a2' })
    .stateAfter();
  assert.deepEqual(state, {
    status: 'stored',
    bodyHash: 'h1',
    at: T0,
    response: { status: 201, body: { callId: 'c1' } },
  });
  given([claimed, stored])
    .when({ type: 'Claim', bodyHash: 'h1', now: '2026-11-20T12:00:00.000Z', callId: 'c-new', attempt: 'a2' })
    .thenNothing();
});

test('the same key with another body is refused', () => {
  given([claimed, stored])
    .when({ type: 'Claim', bodyHash: 'h2', now: T0, callId: 'c-new', attempt: 'a2' })
    .thenThrows('IDEMPOTENCY_KEY_REUSED');
  given([claimed])
    .when({ type: 'Claim', bodyHash: 'h2', now: T0, callId: 'c-new', attempt: 'a2' })
    .thenThrows('IDEMPOTENCY_KEY_REUSED');
});

test("the same key while the first request is still being handled is refused as in use, saying when the first claim's lease ends", () => {
  const refused = given([claimed])
    .when({ type: 'Claim', bodyHash: 'h1', now: '2026-11-20T10:00:12.000Z', callId: 'c-new', attempt: 'a2' })
    .thenThrows('IDEMPOTENCY_KEY_IN_USE');
  assert.ok(refused instanceof IdempotencyKeyInUseError);
  assert.equal(refused.leaseEndsAt, new Date(Date.parse(T0) + IDEMPOTENCY_CLAIM_LEASE_MS).toISOString());
});

test('a released key can be claimed again (the first request ended without a 201)', () => {
  const released: IdempotencyEvent = { type: 'IdempotencyKeyReleased', data: { at: T0 } };
  given([claimed]).when({ type: 'Release', now: T0, attempt: 'a1' }).then([released]);
  given([claimed, released])
    .when({ type: 'Claim', bodyHash: 'h2', now: T0, callId: 'c-new', attempt: 'a2' })
    .then([{ type: 'IdempotencyKeyClaimed', data: { bodyHash: 'h2', at: T0, callId: 'c-new', attempt: 'a2' } }]);
});

test('after 24 hours a key is forgotten: another body, or the same, may use it, and it names a new call', () => {
  const later = '2026-11-21T10:00:00.000Z';
  assert.deepEqual(current(given([claimed, stored]).state(), later), { status: 'free' });
  for (const bodyHash of ['h1', 'h2'])
    given([claimed, stored])
      .when({ type: 'Claim', bodyHash, now: later, callId: 'c-new', attempt: 'a2' })
      .then([{ type: 'IdempotencyKeyClaimed', data: { bodyHash, at: later, callId: 'c-new', attempt: 'a2' } }]);
});

test('a response can only be stored for a claim', () => {
  given([])
    .when({ type: 'StoreResponse', status: 201, body: {}, now: T0, attempt: 'a1' })
    .thenThrows('IDEMPOTENCY_KEY_NOT_CLAIMED');
});

test('a claim is a lease: after 30 s the same body may claim the key again (its request died); another body may not', () => {
  const afterLease = '2026-11-20T10:00:30.000Z';
  given([claimed])
    .when({ type: 'Claim', bodyHash: 'h1', now: '2026-11-20T10:00:29.999Z', callId: 'c-new', attempt: 'a2' })
    .thenThrows('IDEMPOTENCY_KEY_IN_USE');
  given([claimed])
    .when({ type: 'Claim', bodyHash: 'h1', now: afterLease, callId: 'c-new', attempt: 'a2' })
    .then([{ type: 'IdempotencyKeyClaimed', data: { bodyHash: 'h1', at: afterLease, callId: 'c1', attempt: 'a2' } }]);
  given([claimed])
    .when({ type: 'Claim', bodyHash: 'h2', now: afterLease, callId: 'c-new', attempt: 'a2' })
    .thenThrows('IDEMPOTENCY_KEY_REUSED');
});

test('a release after a publish of unknown outcome keeps the body: the same body claims again at once, another is refused', () => {
  const uncertain: IdempotencyEvent = { type: 'IdempotencyKeyReleased', data: { at: T0, outcomeUnknown: true } };
  given([claimed]).when({ type: 'Release', now: T0, outcomeUnknown: true, attempt: 'a1' }).then([uncertain]);
  assert.deepEqual(given([claimed, uncertain]).state(), { status: 'uncertain', bodyHash: 'h1', at: T0, callId: 'c1' });
  given([claimed, uncertain])
    .when({ type: 'Claim', bodyHash: 'h1', now: T0, callId: 'c-new', attempt: 'a2' })
    .then([{ type: 'IdempotencyKeyClaimed', data: { bodyHash: 'h1', at: T0, callId: 'c1', attempt: 'a2' } }]);
  given([claimed, uncertain])
    .when({ type: 'Claim', bodyHash: 'h2', now: T0, callId: 'c-new', attempt: 'a2' })
    .thenThrows('IDEMPOTENCY_KEY_REUSED');
});

test('a claim that takes over keeps the call of the claim before it (which may exist), even a claim that named none', () => {
  const uncertain: IdempotencyEvent = { type: 'IdempotencyKeyReleased', data: { at: T0, outcomeUnknown: true } };
  const afterLease = '2026-11-20T10:01:00.000Z';
  given([claimed, uncertain])
    .when({ type: 'Claim', bodyHash: 'h1', now: afterLease, callId: 'c-new', attempt: 'a2' })
    .then([{ type: 'IdempotencyKeyClaimed', data: { bodyHash: 'h1', at: afterLease, callId: 'c1', attempt: 'a2' } }]);
  // Stored before claims named their call: the takeover names none either (the ingress then derives it from the key).
  const unnamed: IdempotencyEvent = { type: 'IdempotencyKeyClaimed', data: { bodyHash: 'h1', at: T0 } };
  given([unnamed])
    .when({ type: 'Claim', bodyHash: 'h1', now: afterLease, callId: 'c-new', attempt: 'a2' })
    .then([{ type: 'IdempotencyKeyClaimed', data: { bodyHash: 'h1', at: afterLease, attempt: 'a2' } }]);
  assert.deepEqual(given([unnamed]).state(), { status: 'claimed', bodyHash: 'h1', at: T0 });
});

test('once another attempt took the claim over, a late release or response of the one before changes nothing', () => {
  const afterLease = '2026-11-20T10:00:30.000Z';
  const takeover: IdempotencyEvent = {
    type: 'IdempotencyKeyClaimed',
    data: { bodyHash: 'h1', at: afterLease, callId: 'c1', attempt: 'a2' },
  };
  given([claimed, takeover]).when({ type: 'Release', now: afterLease, attempt: 'a1' }).thenNothing();
  given([claimed, takeover])
    .when({ type: 'StoreResponse', status: 201, body: {}, now: afterLease, attempt: 'a1' })
    .thenNothing();
  given([claimed, takeover])
    .when({ type: 'Release', now: afterLease, attempt: 'a2' })
    .then([{ type: 'IdempotencyKeyReleased', data: { at: afterLease } }]);
  // A claim that names no attempt (stored before claims did) is any attempt's to answer for.
  const unnamed: IdempotencyEvent = { type: 'IdempotencyKeyClaimed', data: { bodyHash: 'h1', at: T0 } };
  given([unnamed])
    .when({ type: 'Release', now: T0, attempt: 'a9' })
    .then([{ type: 'IdempotencyKeyReleased', data: { at: T0 } }]);
});
