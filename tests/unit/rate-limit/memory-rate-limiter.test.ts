import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createMemoryRateLimiter } from '../../../shared/adapters/rate-limit/memory-rate-limiter.ts';

test('keys whose newest hit has left the window are evicted by later hits, so memory stays bounded', async () => {
  const limiter = createMemoryRateLimiter();
  const rule = { limit: 30, windowMs: 1_000 };
  for (let i = 0; i < 1_000; i++) await limiter.hit(`client-${i}`, rule, i < 500 ? 0 : 500);
  assert.equal(limiter.size, 1_000);

  await limiter.hit('late', rule, 999);
  assert.equal(limiter.size, 1_001, 'nothing has left its window yet');

  await limiter.hit('later', rule, 1_000);
  assert.equal(limiter.size, 502, 'the 500 keys last hit at 0 are gone');

  await limiter.hit('latest', rule, 1_998);
  assert.equal(limiter.size, 3, 'only late, later and latest remain');
  await limiter.close();
});

test('a key that is hit again stays, however old its first hit', async () => {
  const limiter = createMemoryRateLimiter();
  const rule = { limit: 30, windowMs: 1_000 };
  await limiter.hit('busy', rule, 0);
  await limiter.hit('idle', rule, 100);
  await limiter.hit('busy', rule, 900);
  await limiter.hit('other', rule, 1_500);
  assert.equal(limiter.size, 2, 'idle (newest hit 100) is gone, busy (newest hit 900) stays');
  const busy = await limiter.hit('busy', rule, 1_500);
  assert.equal(busy.remaining, 28, 'busy still counts its hit at 900');
  await limiter.close();
});

test('an evicted key starts over with the full limit', async () => {
  const limiter = createMemoryRateLimiter();
  const rule = { limit: 2, windowMs: 1_000 };
  await limiter.hit('k', rule, 0);
  await limiter.hit('k', rule, 1);
  assert.equal((await limiter.hit('k', rule, 2)).allowed, false);
  await limiter.hit('other', rule, 5_000);
  assert.equal(limiter.size, 1);
  const fresh = await limiter.hit('k', rule, 5_001);
  assert.deepEqual([fresh.allowed, fresh.remaining], [true, 1]);
  await limiter.close();
});
