import { type RateLimiter, RateLimiterUnavailableError } from '../../ports/rate-limiter.ts';

/**
 * Keeps the ingress serving while the shared limiter is down: every hit goes to `primary` (the Redis
 * limiter, shared by all ingress processes); when it rejects with RateLimiterUnavailableError the hit
 * is answered by `fallback` (an in-process limiter), so during a Redis outage each process enforces
 * the limits on its own — with N processes a key may get up to N × limit per window — instead of
 * failing requests or letting them through unlimited. Hits counted by the fallback are not copied to
 * the primary when it comes back.
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
      try {
        const decision = await primary.hit(key, rule, now);
        inOutage = false;
        return decision;
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
