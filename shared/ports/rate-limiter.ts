/**
 * Rate limiter port: an exact sliding window (a sliding log of allowed hits) per key.
 *
 * A hit is allowed iff fewer than `limit` allowed hits of the same key happened in the last
 * `windowMs` — the half-open interval `(now - windowMs, now]`. An allowed hit is recorded; a refused
 * hit is not, so a client that keeps hammering while refused gets in again as soon as the window has
 * slid past its oldest hit. No interval of `windowMs` ever holds more than `limit` allowed hits
 * (a fixed window lets 2 × limit through around its edge; a GCRA with burst = limit does too).
 *
 * Use one rule per key: callers that need several limits (ingest, read API, failed auth) use
 * distinct keys such as `ingest:${keyId}` and `read:${keyId}`.
 */
import { unavailableError } from './unavailable.ts';

/** How many hits a key may make per window. */
export interface RateLimitRule {
  /** Hits allowed per window; an integer ≥ 1. */
  limit: number;
  /** Window length in milliseconds; an integer ≥ 1. */
  windowMs: number;
}

/** The answer to one hit; carries what the `RateLimit-*` and `Retry-After` headers need. */
export interface RateLimitDecision {
  /** Whether the hit is allowed (and was recorded). */
  allowed: boolean;
  /** The rule's limit, echoed for the `RateLimit-Limit` header. */
  limit: number;
  /** Hits still allowed in the current window after this one; 0 when refused. */
  remaining: number;
  /** 0 when allowed; otherwise ms until the oldest hit in the window leaves it (`Retry-After`). */
  retryAfterMs: number;
  /**
   * Ms until the window has room for the full limit again, i.e. until every recorded hit has left
   * it (`RateLimit-Reset`); 0 when the key has no hit in the window.
   */
  resetMs: number;
}

export interface RateLimiter {
  /**
   * Counts one hit of `key` against `rule` and says whether it is allowed. Concurrent hits of the same
   * key are decided atomically: of N simultaneous hits on an empty window, exactly `limit` are allowed.
   * @param now Current time in ms since the epoch. Omit it in production: the adapter uses its own
   *   clock (the Redis adapter uses the Redis server's, so several processes agree). Tests pass it.
   * @throws RangeError when the rule is not two positive integers or `now` is not a finite number.
   * @throws RateLimiterUnavailableError when the backend cannot be reached (retriable).
   */
  hit(key: string, rule: RateLimitRule, now?: number): Promise<RateLimitDecision>;

  /**
   * What a hit of `key` would meet now, without counting one: `remaining` is the hits still
   * allowed in the window, `resetMs` when it is whole again (for GET /api/usage).
   * @throws as `hit`.
   */
  peek(key: string, rule: RateLimitRule, now?: number): Promise<RateLimitDecision>;

  /** Releases timers and connections. Idempotent; `hit` rejects afterwards. */
  close(): Promise<void>;
}

/** The limiter's backend cannot be reached or did not answer in time; worth retrying or falling back. */
export class RateLimiterUnavailableError extends unavailableError('RATE_LIMITER_UNAVAILABLE') {}

/** Throws a RangeError unless `rule` holds two positive integers and `now`, when given, is finite. Every adapter calls it first. */
export const assertValidHit = (rule: RateLimitRule, now: number | undefined): void => {
  if (!Number.isSafeInteger(rule.limit) || rule.limit < 1)
    throw new RangeError(`rate limit must be an integer ≥ 1, got ${rule.limit}`);
  if (!Number.isSafeInteger(rule.windowMs) || rule.windowMs < 1)
    throw new RangeError(`rate limit window must be an integer ≥ 1 ms, got ${rule.windowMs}`);
  if (now !== undefined && !Number.isFinite(now))
    throw new RangeError(`rate limit clock must be a finite number of ms, got ${now}`);
};
