import { type RateLimitDecision, type RateLimiter, RateLimiterUnavailableError } from '../../ports/rate-limiter.ts';

/**
 * Keeps the ingress serving while the shared limiter is down: every hit goes to `primary` (the Redis
 * limiter, shared by all ingress processes); when it rejects with RateLimiterUnavailableError the hit
 * is answered by `fallback` (an in-process limiter), so during a Redis outage each process enforces
 * the limits on its own — with N processes a key may get up to N × limit per window — instead of
 * failing requests or letting them through unlimited.
 *
 * The fallback also records every hit the primary allowed, and a hit it would refuse is refused
 * without asking the primary. So the fallback starts an outage knowing what this process let
 * through before it, and the primary, once back, cannot let through again what the fallback let
 * through during it: one process never lets more than `limit` hits of a key into any window, across
 * an outage's start and end. (The fallback only knows this process's hits; while the primary is
 * up they are a part of the primary's count, so it refuses nothing the primary would allow.)
 *
 * The primary is still tried on every hit, so the first hit after Redis returns is counted there
 * again; the Redis adapter fails fast while disconnected, so trying costs little.
 *
 * `onFallback` is called once per outage, with the error that started it: on the first fallback,
 * and again only after the primary has answered in between. Use it to log or alert; an exception
 * it throws is ignored so that reporting cannot break rate limiting. Any other error from the
 * primary (a bad rule, a bug) is rethrown, not hidden behind the fallback.
 *
 * `close()` closes both limiters.
 */
export const createFallbackRateLimiter = (
  primary: RateLimiter,
  fallback: RateLimiter,
  onFallback?: (error: RateLimiterUnavailableError) => void,
): RateLimiter => {
  let inOutage = false;
  return {
    async hit(key, rule, now) {
      const known = await fallback.peek(key, rule, now);
      if (!known.allowed) return known;
      let decision: RateLimitDecision;
      try {
        decision = await primary.hit(key, rule, now);
        inOutage = false;
      } catch (error) {
        if (!(error instanceof RateLimiterUnavailableError)) throw error;
        if (!inOutage) {
          inOutage = true;
          try {
            onFallback?.(error);
          } catch {
            // reporting must not break rate limiting
          }
        }
        return fallback.hit(key, rule, now);
      }
      if (!decision.allowed) return decision;
      const recorded = await fallback.hit(key, rule, now);
      return {
        ...decision,
        remaining: Math.min(decision.remaining, recorded.remaining),
        resetMs: Math.max(decision.resetMs, recorded.resetMs),
      };
    },
    async peek(key, rule, now) {
      try {
        return await primary.peek(key, rule, now);
      } catch (error) {
        if (!(error instanceof RateLimiterUnavailableError)) throw error;
        return fallback.peek(key, rule, now);
      }
    },
    async close() {
      await Promise.all([primary.close(), fallback.close()]);
    },
  };
};
