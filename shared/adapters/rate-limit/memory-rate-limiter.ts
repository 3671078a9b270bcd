import {
  assertValidHit,
  type RateLimitDecision,
  type RateLimiter,
  type RateLimitRule,
} from '../../ports/rate-limiter.ts';

/** An in-process rate limiter: limits hold per process only. */
export interface MemoryRateLimiter extends RateLimiter {
  /** Keys currently held in memory; exposed so tests can see idle keys being evicted. */
  readonly size: number;
}

interface KeyLog {
  /** Times of the allowed hits still in the window, ascending; never more than `limit` of them. */
  hits: number[];
  /** Window of the rule last used with the key, to know when the key has gone idle. */
  windowMs: number;
}

/**
 * The sliding-window limiter in process memory, per key the times of its allowed hits in the window
 * (at most `limit` numbers, since a refused hit is not recorded).
 *
 * Memory stays bounded without a timer: keys sit in a Map ordered by their last allowed hit, and
 * every `hit` first drops, from the front, the keys whose newest hit has left its window. So only
 * keys with a hit in the last window are held, and the eviction runs on the caller's clock (the
 * `now` argument), which a sweep timer running on the wall clock could not honour.
 *
 * `hit` runs synchronously inside its promise, so concurrent hits are atomic.
 */
export const createMemoryRateLimiter = (): MemoryRateLimiter => {
  const logs = new Map<string, KeyLog>();
  let closed = false;

  const evictIdle = (now: number) => {
    for (const [key, log] of logs) {
      const newest = log.hits.at(-1);
      if (newest !== undefined && newest + log.windowMs > now) break;
      logs.delete(key);
    }
  };

  const decide = (key: string, { limit, windowMs }: RateLimitRule, now: number): RateLimitDecision => {
    evictIdle(now);
    const log = logs.get(key) ?? { hits: [], windowMs };
    const { hits } = log;
    // A hit at time t is in the window at `now` iff t > now - windowMs.
    let left = 0;
    while (left < hits.length && hits[left]! <= now - windowMs) left++;
    if (left > 0) hits.splice(0, left);

    if (hits.length < limit) {
      // Keep the log sorted even if the clock steps back.
      let at = hits.length;
      while (at > 0 && hits[at - 1]! > now) at--;
      hits.splice(at, 0, now);
      log.windowMs = windowMs;
      logs.delete(key);
      logs.set(key, log); // move to the back: the Map stays ordered by last allowed hit
      return {
        allowed: true,
        limit,
        remaining: limit - hits.length,
        retryAfterMs: 0,
        resetMs: Math.ceil(hits.at(-1)! + windowMs - now),
      };
    }
    // hits.length >= limit >= 1: room comes back when the hit `limit` places before the newest leaves.
    return {
      allowed: false,
      limit,
      remaining: 0,
      retryAfterMs: Math.ceil(hits[hits.length - limit]! + windowMs - now),
      resetMs: Math.ceil(hits.at(-1)! + windowMs - now),
    };
  };

  return {
    get size() {
      return logs.size;
    },
    async hit(key, rule, now) {
      assertValidHit(rule, now);
      if (closed) throw new Error('memory rate limiter is closed');
      return decide(key, rule, now ?? Date.now());
    },
    async peek(key, { limit, windowMs }, now) {
      assertValidHit({ limit, windowMs }, now);
      if (closed) throw new Error('memory rate limiter is closed');
      const at = now ?? Date.now();
      const hits = (logs.get(key)?.hits ?? []).filter((t) => t > at - windowMs);
      const newest = hits.at(-1);
      const resetMs = newest === undefined ? 0 : Math.ceil(newest + windowMs - at);
      if (hits.length < limit)
        return { allowed: true, limit, remaining: limit - hits.length, retryAfterMs: 0, resetMs };
      return {
        allowed: false,
        limit,
        remaining: 0,
        retryAfterMs: Math.ceil(hits[hits.length - limit]! + windowMs - at),
        resetMs,
      };
    },
    async close() {
      closed = true;
      logs.clear();
    },
  };
};
