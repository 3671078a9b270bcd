import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createFallbackRateLimiter } from '../../../shared/adapters/rate-limit/fallback-rate-limiter.ts';
import { createMemoryRateLimiter } from '../../../shared/adapters/rate-limit/memory-rate-limiter.ts';
import { type RateLimiter, RateLimiterUnavailableError } from '../../../shared/ports/rate-limiter.ts';

const rule = { limit: 2, windowMs: 1_000 };

/** A real in-process limiter standing in for Redis, whose backend a test can take down and bring back. */
const switchable = () => {
  const inner = createMemoryRateLimiter();
  let failure: Error | undefined;
  const limiter: RateLimiter = {
    async hit(key, r, now) {
      if (failure) throw failure;
      return inner.hit(key, r, now);
    },
    async peek(key, r, now) {
      if (failure) throw failure;
      return inner.peek(key, r, now);
    },
    close: () => inner.close(),
  };
  return {
    limiter,
    down: (error: Error = new RateLimiterUnavailableError('connection refused')) => {
      failure = error;
    },
    up: () => {
      failure = undefined;
    },
  };
};

test('while the primary is up, it answers: a key it has exhausted is refused though the fallback has room', async () => {
  const primary = switchable();
  await primary.limiter.hit('k', rule, 0);
  await primary.limiter.hit('k', rule, 1);
  const limiter = createFallbackRateLimiter(primary.limiter, createMemoryRateLimiter());
  const decision = await limiter.hit('k', rule, 2);
  assert.deepEqual([decision.allowed, decision.retryAfterMs], [false, 998]);
});

test('while the primary is unavailable, the in-process fallback answers with its own sliding window', async () => {
  const primary = switchable();
  await primary.limiter.hit('k', rule, 0);
  await primary.limiter.hit('k', rule, 1);
  primary.down();
  const limiter = createFallbackRateLimiter(primary.limiter, createMemoryRateLimiter());
  const decisions = await Promise.all([
    limiter.hit('k', rule, 2),
    limiter.hit('k', rule, 3),
    limiter.hit('k', rule, 4),
  ]);
  assert.deepEqual(
    decisions.map((d) => d.allowed),
    [true, true, false],
  );
});

test('the outage is reported once, with its error, and again only for a new outage', async () => {
  const primary = switchable();
  const reported: RateLimiterUnavailableError[] = [];
  const limiter = createFallbackRateLimiter(primary.limiter, createMemoryRateLimiter(), (error) =>
    reported.push(error),
  );
  const first = new RateLimiterUnavailableError('first outage');
  primary.down(first);
  for (let t = 0; t < 3; t++) await limiter.hit(`k${t}`, rule, t);
  assert.deepEqual(reported, [first]);

  primary.up();
  await limiter.hit('k', rule, 10);
  assert.equal(reported.length, 1, 'recovery is not an outage');

  const second = new RateLimiterUnavailableError('second outage');
  primary.down(second);
  await limiter.hit('k', rule, 11);
  await limiter.hit('k', rule, 12);
  assert.deepEqual(reported, [first, second]);
});

test('when an outage starts, the fallback knows the hits this process let through before it', async () => {
  const primary = switchable();
  const limiter = createFallbackRateLimiter(primary.limiter, createMemoryRateLimiter());
  assert.equal((await limiter.hit('k', rule, 0)).allowed, true);
  assert.equal((await limiter.hit('k', rule, 1)).allowed, true);
  primary.down();
  const refused = await limiter.hit('k', rule, 2);
  assert.deepEqual([refused.allowed, refused.retryAfterMs], [false, 998], 'no third hit in one window');
  assert.equal((await limiter.hit('k', rule, 1_000)).allowed, true, 'the window slid past the first hit');
});

test('when the primary comes back, the hits the fallback let through still count until they leave the window', async () => {
  const primary = switchable();
  const limiter = createFallbackRateLimiter(primary.limiter, createMemoryRateLimiter());
  primary.down();
  await limiter.hit('k', rule, 0);
  await limiter.hit('k', rule, 1);
  assert.equal((await limiter.hit('k', rule, 2)).allowed, false, 'the fallback has exhausted the key');
  primary.up();
  const refused = await limiter.hit('k', rule, 3);
  assert.deepEqual([refused.allowed, refused.retryAfterMs], [false, 997]);
  assert.equal((await primary.limiter.peek('k', rule, 3)).remaining, 2, 'a refused hit is not counted by the primary');
  const allowed = await limiter.hit('k', rule, 1_000);
  assert.deepEqual([allowed.allowed, allowed.remaining], [true, 0], 'the fallback still holds the hit at 1 ms');
  assert.equal((await primary.limiter.peek('k', rule, 1_000)).remaining, 1, 'the primary counted the allowed hit');
});

test('while the primary is up, a key hit at its limit, steadily, is never refused by the fallback', async () => {
  const primary = switchable();
  const limiter = createFallbackRateLimiter(primary.limiter, createMemoryRateLimiter());
  const decisions = [];
  for (let t = 0; t < 4; t++) decisions.push(await limiter.hit('k', rule, t * 600));
  assert.deepEqual(
    decisions.map((d) => [d.allowed, d.remaining]),
    [
      [true, 1],
      [true, 0],
      [true, 0],
      [true, 0],
    ],
  );
});

test('an error that is not RateLimiterUnavailableError is rethrown, not answered by the fallback', async () => {
  const primary = switchable();
  const reported: unknown[] = [];
  const limiter = createFallbackRateLimiter(primary.limiter, createMemoryRateLimiter(), (error) =>
    reported.push(error),
  );
  const bug = new Error('WRONGTYPE Operation against a key holding the wrong kind of value');
  primary.down(bug);
  await assert.rejects(limiter.hit('k', rule, 0), (error) => error === bug);
  primary.up();
  await assert.rejects(limiter.hit('k', { limit: 0, windowMs: 1_000 }, 0), RangeError);
  assert.deepEqual(reported, []);
});

test('an exception thrown by onFallback does not break rate limiting', async () => {
  const primary = switchable();
  primary.down();
  const limiter = createFallbackRateLimiter(primary.limiter, createMemoryRateLimiter(), () => {
    throw new Error('logger exploded');
  });
  const decision = await limiter.hit('k', rule, 0);
  assert.equal(decision.allowed, true);
});

test('close closes both limiters', async () => {
  const primary = createMemoryRateLimiter();
  const fallback = createMemoryRateLimiter();
  const limiter = createFallbackRateLimiter(primary, fallback);
  await limiter.close();
  await assert.rejects(primary.hit('k', rule, 0));
  await assert.rejects(fallback.hit('k', rule, 0));
});
