/**
 * The rate limiter conformance suite: every adapter passes it unchanged.
 * `rateLimiterConformance(name, factory, options)` is called once per adapter from a `*.test.ts` file.
 * Time is passed explicitly (`now`), so nothing sleeps.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import type { RateLimitDecision, RateLimiter, RateLimitRule } from '../../shared/ports/rate-limiter.ts';

export interface RateLimiterHandle {
  limiter: RateLimiter;
  /** Closes the limiter and removes what the test stored. */
  cleanup?: () => Promise<void>;
}

export interface RateLimiterFactory {
  /** A limiter over fresh, empty storage. */
  fresh(): Promise<RateLimiterHandle>;
  /**
   * A second limiter over the same storage as `handle` (another ingress process's view), or absent
   * when the adapter's limits are per process; the sharing test is then skipped.
   */
  sameStorage?(handle: RateLimiterHandle): Promise<RateLimiterHandle>;
}

export interface RateLimiterConformanceOptions {
  skip?: string;
}

const key = () => `key-${randomUUID()}`;
const SPEC: RateLimitRule = { limit: 30, windowMs: 60_000 }; // push-api.md Limits: 30 requests per minute per API key

/** Deterministic PRNG (mulberry32) so the property test replays the same sequence every run. */
const prng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

/** The reference sliding log the adapters must agree with, decision for decision. */
const referenceLog = ({ limit, windowMs }: RateLimitRule) => {
  const allowed: number[] = [];
  return (now: number): RateLimitDecision => {
    const inWindow = allowed.filter((t) => t > now - windowMs);
    if (inWindow.length < limit) {
      allowed.push(now);
      return { allowed: true, limit, remaining: limit - inWindow.length - 1, retryAfterMs: 0, resetMs: windowMs };
    }
    return {
      allowed: false,
      limit,
      remaining: 0,
      retryAfterMs: inWindow[inWindow.length - limit]! + windowMs - now,
      resetMs: inWindow.at(-1)! + windowMs - now,
    };
  };
};

/** The most allowed hits found in any half-open interval of `windowMs` (each starts at some hit). */
const busiestWindow = (times: number[], windowMs: number): number => {
  let most = 0;
  for (let start = 0, end = 0; start < times.length; start++) {
    while (end < times.length && times[end]! < times[start]! + windowMs) end++;
    most = Math.max(most, end - start);
  }
  return most;
};

export const rateLimiterConformance = (
  name: string,
  factory: RateLimiterFactory,
  options: RateLimiterConformanceOptions = {},
) => {
  describe(`rate limiter conformance: ${name}`, { skip: options.skip }, () => {
    const handles: RateLimiterHandle[] = [];
    const open = async () => {
      const handle = await factory.fresh();
      handles.push(handle);
      return handle;
    };
    after(async () => {
      for (const h of handles.reverse()) await h.cleanup?.();
    });
    const hits = (limiter: RateLimiter, k: string, rule: RateLimitRule, times: number[]) =>
      times.reduce<Promise<RateLimitDecision[]>>(
        async (acc, now) => [...(await acc), await limiter.hit(k, rule, now)],
        Promise.resolve([]),
      );

    test('30 requests per minute: exactly `limit` hits are allowed, then refused with 0 < retryAfterMs ≤ windowMs', async () => {
      const { limiter } = await open();
      const k = key();
      const times = Array.from({ length: 30 }, (_, i) => 1_000 + i * 100);
      const allowed = await hits(limiter, k, SPEC, times);
      assert.ok(allowed.every((d) => d.allowed && d.retryAfterMs === 0));
      const refused = await limiter.hit(k, SPEC, 5_000);
      assert.equal(refused.allowed, false);
      assert.equal(refused.remaining, 0);
      assert.ok(refused.retryAfterMs > 0 && refused.retryAfterMs <= SPEC.windowMs);
      assert.equal(refused.retryAfterMs, 1_000 + 60_000 - 5_000, 'until the oldest hit leaves the window');
    });

    test('peek says what a hit would meet without counting one', async () => {
      const { limiter } = await open();
      const k = key();
      const rule = { limit: 3, windowMs: 1_000 };
      assert.deepEqual(await limiter.peek(k, rule, 0), {
        allowed: true,
        limit: 3,
        remaining: 3,
        retryAfterMs: 0,
        resetMs: 0,
      });
      await hits(limiter, k, rule, [100, 200]);
      for (let i = 0; i < 5; i++)
        assert.deepEqual(await limiter.peek(k, rule, 300), {
          allowed: true,
          limit: 3,
          remaining: 1,
          retryAfterMs: 0,
          resetMs: 900,
        });
      assert.equal((await limiter.hit(k, rule, 300)).remaining, 0, 'the peeks counted nothing');
      assert.deepEqual(await limiter.peek(k, rule, 400), {
        allowed: false,
        limit: 3,
        remaining: 0,
        retryAfterMs: 700,
        resetMs: 900,
      });
      assert.deepEqual(
        await limiter.peek(k, rule, 1_350),
        { allowed: true, limit: 3, remaining: 3, retryAfterMs: 0, resetMs: 0 },
        'every hit has left the window',
      );
    });

    test('remaining counts down to 0 and the limit is echoed', async () => {
      const { limiter } = await open();
      const rule = { limit: 5, windowMs: 1_000 };
      const decisions = await hits(limiter, key(), rule, [0, 1, 2, 3, 4, 5]);
      assert.deepEqual(
        decisions.map((d) => [d.allowed, d.remaining, d.limit]),
        [
          [true, 4, 5],
          [true, 3, 5],
          [true, 2, 5],
          [true, 1, 5],
          [true, 0, 5],
          [false, 0, 5],
        ],
      );
    });

    test('resetMs is the time until every hit has left the window; retryAfterMs until the oldest has', async () => {
      const { limiter } = await open();
      const k = key();
      const rule = { limit: 3, windowMs: 1_000 };
      const decisions = await hits(limiter, k, rule, [0, 400, 600, 800]);
      assert.deepEqual(
        decisions.map((d) => [d.allowed, d.retryAfterMs, d.resetMs]),
        [
          [true, 0, 1_000],
          [true, 0, 1_000],
          [true, 0, 1_000],
          [false, 200, 800],
        ],
      );
    });

    test('once the window slides past the oldest hit, one more hit is allowed', async () => {
      const { limiter } = await open();
      const k = key();
      const rule = { limit: 3, windowMs: 1_000 };
      await hits(limiter, k, rule, [0, 10, 20]);
      const [justBefore, atEdge, again, later] = await hits(limiter, k, rule, [999, 1_000, 1_000, 1_010]);
      assert.deepEqual([justBefore!.allowed, justBefore!.retryAfterMs], [false, 1]);
      assert.deepEqual([atEdge!.allowed, atEdge!.remaining], [true, 0], 'the hit at 0 left the window at 1000');
      assert.deepEqual([again!.allowed, again!.retryAfterMs], [false, 10]);
      assert.equal(later!.allowed, true);
    });

    test('30 hits at t=59s, then a hit at t=61s is refused (a fixed window would allow it)', async () => {
      const { limiter } = await open();
      const k = key();
      const burst = await hits(
        limiter,
        k,
        SPEC,
        Array.from({ length: 30 }, () => 59_000),
      );
      assert.ok(burst.every((d) => d.allowed));
      const edge = await limiter.hit(k, SPEC, 61_000);
      assert.equal(edge.allowed, false);
      assert.equal(edge.retryAfterMs, 58_000);
      assert.equal((await limiter.hit(k, SPEC, 118_999)).allowed, false);
      const free = await limiter.hit(k, SPEC, 119_000);
      assert.deepEqual([free.allowed, free.remaining], [true, 29], 'the whole burst left the window at once');
    });

    test('over a long random sequence, no window of windowMs holds more than limit allowed hits, and each decision is the sliding log’s', async () => {
      const { limiter } = await open();
      for (const [rule, seed] of [
        [SPEC, 42],
        [{ limit: 5, windowMs: 1_000 }, 7],
      ] as const) {
        const k = key();
        const random = prng(seed);
        const reference = referenceLog(rule);
        const allowedAt: number[] = [];
        let now = 1_000_000;
        for (let i = 0; i < 1_500; i++) {
          const r = random();
          // Mostly bursts, sometimes pauses longer than the window.
          now += Math.floor(
            r < 0.6
              ? (random() * rule.windowMs) / 100
              : r < 0.95
                ? (random() * rule.windowMs) / 10
                : random() * rule.windowMs * 2,
          );
          const decision = await limiter.hit(k, rule, now);
          assert.deepEqual(decision, reference(now), `hit ${i} at ${now}`);
          if (decision.allowed) allowedAt.push(now);
        }
        assert.ok(allowedAt.length > rule.limit * 3, 'the sequence exercised several windows');
        assert.ok(allowedAt.length < 1_500, 'the sequence hit the limit');
        assert.equal(busiestWindow(allowedAt, rule.windowMs), rule.limit);
      }
    });

    test('refused hits are not recorded, so hammering while refused does not extend the lockout', async () => {
      const { limiter } = await open();
      const k = key();
      const rule = { limit: 3, windowMs: 1_000 };
      await hits(limiter, k, rule, [0, 100, 200]);
      const hammering = await hits(
        limiter,
        k,
        rule,
        Array.from({ length: 79 }, (_, i) => 210 + i * 10),
      );
      assert.ok(hammering.every((d, i) => !d.allowed && d.retryAfterMs === 1_000 - (210 + i * 10)));
      const afterLockout = await hits(limiter, k, rule, [1_000, 1_100, 1_200, 1_210]);
      assert.deepEqual(
        afterLockout.map((d) => d.allowed),
        [true, true, true, false],
      );
    });

    test('keys are independent', async () => {
      const { limiter } = await open();
      const rule = { limit: 2, windowMs: 1_000 };
      const [a, b] = [key(), key()];
      await hits(limiter, a, rule, [0, 1]);
      assert.equal((await limiter.hit(a, rule, 2)).allowed, false);
      const other = await hits(limiter, b, rule, [2, 3, 4]);
      assert.deepEqual(
        other.map((d) => d.allowed),
        [true, true, false],
      );
    });

    test('concurrent hits are atomic: of 50 at the same instant with limit 30, exactly 30 are allowed', async () => {
      const { limiter } = await open();
      const k = key();
      const decisions = await Promise.all(Array.from({ length: 50 }, () => limiter.hit(k, SPEC, 5_000)));
      assert.equal(decisions.filter((d) => d.allowed).length, 30);
      const remaining = decisions
        .filter((d) => d.allowed)
        .map((d) => d.remaining)
        .sort((x, y) => x - y);
      assert.deepEqual(
        remaining,
        Array.from({ length: 30 }, (_, i) => i),
        'each allowed hit saw its own count',
      );
      assert.equal((await limiter.hit(k, SPEC, 5_001)).allowed, false);
    });

    test('a clock that steps back still counts every hit in the window', async () => {
      const { limiter } = await open();
      const k = key();
      const rule = { limit: 2, windowMs: 1_000 };
      const decisions = await hits(limiter, k, rule, [100, 50, 60, 1_050, 1_050]);
      assert.deepEqual(
        decisions.map((d) => [d.allowed, d.retryAfterMs]),
        [
          [true, 0],
          [true, 0],
          [false, 990],
          [true, 0],
          [false, 50],
        ],
      );
    });

    test('without an explicit now, the adapter’s own clock is used', async () => {
      const { limiter } = await open();
      const k = key();
      const rule = { limit: 2, windowMs: 60_000 };
      const [first, second, third] = [
        await limiter.hit(k, rule),
        await limiter.hit(k, rule),
        await limiter.hit(k, rule),
      ];
      assert.deepEqual([first.allowed, second.allowed, third.allowed], [true, true, false]);
      assert.ok(third.retryAfterMs > 50_000 && third.retryAfterMs <= 60_000, `retryAfterMs ${third.retryAfterMs}`);
      assert.ok(third.resetMs >= third.retryAfterMs && third.resetMs <= 60_000);
    });

    test('a rule that is not two positive integers, or a non-finite now, is rejected with RangeError', async () => {
      const { limiter } = await open();
      for (const rule of [
        { limit: 0, windowMs: 1_000 },
        { limit: 1.5, windowMs: 1_000 },
        { limit: Number.NaN, windowMs: 1_000 },
        { limit: 3, windowMs: 0 },
        { limit: 3, windowMs: Number.POSITIVE_INFINITY },
      ]) {
        await assert.rejects(limiter.hit(key(), rule, 0), RangeError, JSON.stringify(rule));
      }
      await assert.rejects(limiter.hit(key(), SPEC, Number.NaN), RangeError);
    });

    test(
      'limiters over the same storage share each key’s limit (ingress processes agree)',
      { skip: factory.sameStorage ? false : 'this adapter limits per process' },
      async () => {
        const first = await open();
        const second = await factory.sameStorage!(first);
        handles.push(second);
        const k = key();
        const rule = { limit: 4, windowMs: 1_000 };
        const decisions = await hits(first.limiter, k, rule, [0, 1]);
        decisions.push(...(await hits(second.limiter, k, rule, [2, 3, 4])));
        assert.deepEqual(
          decisions.map((d) => d.allowed),
          [true, true, true, true, false],
        );
        assert.equal((await first.limiter.hit(k, rule, 5)).allowed, false);
      },
    );

    test('close is idempotent and a hit after close rejects', async () => {
      const { limiter } = await open();
      await limiter.hit(key(), SPEC, 0);
      await limiter.close();
      await limiter.close();
      await assert.rejects(limiter.hit(key(), SPEC, 1));
    });
  });
};
