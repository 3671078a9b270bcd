import { createFallbackRateLimiter } from '../../shared/adapters/rate-limit/fallback-rate-limiter.ts';
import { createMemoryRateLimiter } from '../../shared/adapters/rate-limit/memory-rate-limiter.ts';
import { assertValidHit, type RateLimiter, RateLimiterUnavailableError } from '../../shared/ports/rate-limiter.ts';
import { rateLimiterConformance } from './rate-limiter.ts';

/** A primary whose backend is down for good: like the Redis adapter, it validates first, then fails. */
const downPrimary = (): RateLimiter => {
  let closed = false;
  return {
    async hit(_key, rule, now) {
      assertValidHit(rule, now);
      if (closed) throw new Error('closed');
      throw new RateLimiterUnavailableError('backend down');
    },
    async peek(_key, rule, now) {
      assertValidHit(rule, now);
      if (closed) throw new Error('closed');
      throw new RateLimiterUnavailableError('backend down');
    },
    async close() {
      closed = true;
    },
  };
};

// While the primary is down, the wrapper is a full sliding-window limiter of its own.
rateLimiterConformance('fallback while the primary is down', {
  async fresh() {
    const limiter = createFallbackRateLimiter(downPrimary(), createMemoryRateLimiter());
    return { limiter, cleanup: () => limiter.close() };
  },
});
