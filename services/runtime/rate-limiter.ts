/**
 * The rate limiter the configuration asks for: in process by default; with REDIS_URL, in Redis
 * (shared by every ingress process), falling back to per-process limits while Redis is unreachable.
 */
import type { Logger } from 'pino';
import { createFallbackRateLimiter } from '../../shared/adapters/rate-limit/fallback-rate-limiter.ts';
import { createMemoryRateLimiter } from '../../shared/adapters/rate-limit/memory-rate-limiter.ts';
import type { Config } from '../../shared/config.ts';
import type { RateLimiter } from '../../shared/ports/rate-limiter.ts';

export const openRateLimiter = async (config: Config, logger: Logger): Promise<RateLimiter> => {
  if (!config.redisUrl) return createMemoryRateLimiter();
  // Loaded only with REDIS_URL: the in-process default never loads the Redis client.
  const { createRedisRateLimiter } = await import('../../shared/adapters/rate-limit/redis-rate-limiter.ts');
  return createFallbackRateLimiter(
    createRedisRateLimiter({ url: config.redisUrl, connectionName: `call-ingestion-${process.pid}` }),
    createMemoryRateLimiter(),
    (error) =>
      logger.warn({ err: error }, 'Redis unreachable: rate limits are enforced per process until it answers again'),
  );
};
