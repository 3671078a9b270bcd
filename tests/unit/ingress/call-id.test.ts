import assert from 'node:assert/strict';
import { test } from 'node:test';
import { callIdForKey, newCallId } from '../../../services/ingress/ingest-route.ts';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const millisecondsOf = (id: string) => parseInt(id.slice(0, 8) + id.slice(9, 13), 16);

test('a new call id is a UUID version 7 carrying the time it was made', () => {
  const before = Date.now();
  const id = newCallId();
  const after = Date.now();
  assert.match(id, UUID_V7);
  const at = millisecondsOf(id);
  assert.ok(at >= before && at <= after, `${at} is not within ${before}–${after}`);
  assert.equal(millisecondsOf(newCallId(0)), 0);
  assert.equal(millisecondsOf(newCallId(2 ** 48 - 1)), 2 ** 48 - 1);
});

test('call ids made later sort after earlier ones, and ids of one millisecond differ', () => {
  const earlier = Array.from({ length: 100 }, (_, i) => newCallId(1_800_000_000_000 + i));
  assert.deepEqual([...earlier].sort(), earlier);
  const same = new Set(Array.from({ length: 10_000 }, () => newCallId(1_800_000_000_000)));
  assert.equal(same.size, 10_000);
});

test('a claim of an Idempotency-Key stored before claims named their call: its call id derives from the key', () => {
  assert.equal(callIdForKey('order-1'), callIdForKey('order-1'));
  assert.match(callIdForKey('order-1'), /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});
