import { createMemoryRateLimiter } from '../../shared/adapters/rate-limit/memory-rate-limiter.ts';
import { rateLimiterConformance } from './rate-limiter.ts';

rateLimiterConformance('memory', {
  async fresh() {
    const limiter = createMemoryRateLimiter();
    return { limiter, cleanup: () => limiter.close() };
  },
});
