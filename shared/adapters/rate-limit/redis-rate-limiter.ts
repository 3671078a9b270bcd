import { createHash, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import {
  assertValidHit,
  type RateLimitDecision,
  type RateLimiter,
  type RateLimitRule,
  RateLimiterUnavailableError,
} from '../../ports/rate-limiter.ts';

export interface RedisRateLimiterOptions {
  /** `redis://` or `rediss://` URL of the Redis shared by every ingress process. */
  url: string;
  /** Prepended to every key, to share a Redis with other uses; default `rate-limit:`. */
  keyPrefix?: string;
  /**
   * Bound in ms on connecting and on each call; past it a call rejects with
   * RateLimiterUnavailableError. Default 500.
   */
  timeoutMs?: number;
  /** Name the connection carries on the server (`CLIENT SETNAME`), to find it in `CLIENT LIST`. */
  connectionName?: string;
}

/**
 * One sorted set per key holds the allowed hits, scored by time in ms; the whole decision runs as
 * one script, so concurrent hits from any number of processes are decided atomically.
 * KEYS[1]: the set. ARGV: limit, window ms, now in ms ('' to read the Redis server clock), a unique
 * member suffix, '1' to only look (record nothing). Returns {allowed 0|1, remaining, retryAfterMs, resetMs}.
 */
const SCRIPT = `
if redis.replicate_commands then redis.replicate_commands() end
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now
if ARGV[3] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
else
  now = tonumber(ARGV[3])
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if ARGV[5] == '1' then
  if count < limit then
    if count == 0 then return {1, limit, 0, 0} end
    local last = tonumber(redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
    return {1, limit - count, 0, math.ceil(last + window - now)}
  end
end
if count < limit then
  redis.call('ZADD', KEYS[1], now, tostring(now) .. ':' .. ARGV[4])
  local newest = tonumber(redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
  local reset = math.ceil(newest + window - now)
  redis.call('PEXPIRE', KEYS[1], reset)
  return {1, limit - count - 1, 0, reset}
end
local oldest = tonumber(redis.call('ZRANGE', KEYS[1], count - limit, count - limit, 'WITHSCORES')[2])
local newest = tonumber(redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
return {0, 0, math.ceil(oldest + window - now), math.ceil(newest + window - now)}
`;
const SCRIPT_SHA = createHash('sha1').update(SCRIPT).digest('hex');

/**
 * Server replies that prove the limiter's own command wrong (a bug: a script that fails, the wrong
 * arguments, a key of another type under our prefix), passed on as they are. Every other reply is
 * the server's state, not the hit's fault (docs/decisions/0025-what-blames-the-data.md), and the
 * fallback limiter answers meanwhile instead of every ingest failing: LOADING, BUSY, READONLY,
 * MASTERDOWN, TRYAGAIN, CLUSTERDOWN, NOREPLICAS, MISCONF; OOM, Redis at maxmemory under the
 * noeviction policy, which takes no write from any caller until memory is freed (Redis 7.0 runs
 * this limiter's script even then: its first write, ZREMRANGEBYSCORE, is allowed at maxmemory, and
 * a script that has written is not stopped after it; a server that checks before the script runs
 * answers OOM); NOAUTH and WRONGPASS, a password set or rotated; NOPERM, an ACL changed; "ERR max
 * number of clients reached"; a command renamed away; and replies this list never heard of.
 */
const BUG_REPLY =
  /^(WRONGTYPE|CROSSSLOT|ERR (wrong number of arguments|syntax error|Error (running|compiling) script|user_script:))/;

/**
 * ioredis raises a `ReplyError` for an error answered by the server and plain errors for the
 * connection (refused, closed, not writeable, timed out, retries exhausted). The latter, and the
 * server's replies that are not a bug of ours, become RateLimiterUnavailableError; a bug passes.
 */
const translate = (error: unknown, lastConnectionError: unknown): unknown => {
  if (!(error instanceof Error)) return error;
  if (error.name === 'ReplyError' && BUG_REPLY.test(error.message)) return error;
  const last =
    lastConnectionError instanceof Error && lastConnectionError !== error
      ? ` (last connection error: ${lastConnectionError.message})`
      : '';
  return new RateLimiterUnavailableError(`Redis rate limiter unavailable: ${error.message}${last}`, { cause: error });
};

const toDecision = (reply: unknown, limit: number): RateLimitDecision => {
  if (!Array.isArray(reply) || reply.length !== 4 || !reply.every((n) => typeof n === 'number')) {
    throw new Error(`unexpected rate limit script reply: ${JSON.stringify(reply)}`);
  }
  const [allowed, remaining, retryAfterMs, resetMs] = reply as [number, number, number, number];
  return { allowed: allowed === 1, limit, remaining, retryAfterMs, resetMs };
};

/**
 * The sliding-window limiter on Redis, shared by every process that uses the same Redis and prefix.
 * Time comes from the Redis server (`TIME`), so processes with skewed clocks still agree; an
 * explicit `now` overrides it (tests).
 *
 * Failure is bounded so the ingress never hangs on Redis: the first call waits for the initial
 * connection at most `timeoutMs`; while disconnected, calls reject at once (no offline queue, no
 * resend of a command cut off by a reconnect, which could record a hit twice); a call to a connected
 * but silent server rejects after `timeoutMs`. All of these reject with RateLimiterUnavailableError,
 * and the client keeps reconnecting in the background (backoff up to 2 s).
 */
export const createRedisRateLimiter = (options: RedisRateLimiterOptions): RateLimiter => {
  const keyPrefix = options.keyPrefix ?? 'rate-limit:';
  const timeoutMs = options.timeoutMs ?? 500;
  const client = new Redis(options.url, {
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    retryStrategy: (attempt) => Math.min(attempt * 100, 2000),
    // The hits of one event-loop turn go to the server in one write, not one write each.
    enableAutoPipelining: true,
    ...(options.connectionName ? { connectionName: options.connectionName } : {}),
  });
  let lastConnectionError: unknown;
  client.on('error', (error: unknown) => {
    lastConnectionError = error;
  });

  // Settles (never rejects) when the first connection attempt succeeds, fails or times out.
  const firstAttempt = new Promise<void>((resolve) => {
    const settle = () => {
      clearTimeout(timer);
      client.off('ready', settle).off('error', settle).off('end', settle);
      resolve();
    };
    const timer = setTimeout(settle, timeoutMs).unref();
    client.on('ready', settle).on('error', settle).on('end', settle);
  });

  const run = async (key: string, args: string[]): Promise<unknown> => {
    try {
      return await client.evalsha(SCRIPT_SHA, 1, key, ...args);
    } catch (error) {
      if (error instanceof Error && error.message.startsWith('NOSCRIPT')) return client.eval(SCRIPT, 1, key, ...args);
      throw error;
    }
  };

  let closed = false;
  return {
    hit: (key, rule, now) => decide(key, rule, now, false),
    peek: (key, rule, now) => decide(key, rule, now, true),
    async close() {
      if (closed) return;
      closed = true;
      if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
      else client.disconnect();
    },
  };

  async function decide(
    key: string,
    rule: RateLimitRule,
    now: number | undefined,
    peekOnly: boolean,
  ): Promise<RateLimitDecision> {
    assertValidHit(rule, now);
    if (closed) throw new Error('redis rate limiter is closed');
    if (client.status !== 'ready') await firstAttempt;
    const args = [
      String(rule.limit),
      String(rule.windowMs),
      now === undefined ? '' : String(now),
      randomUUID(),
      peekOnly ? '1' : '0',
    ];
    let reply: unknown;
    try {
      reply = await run(keyPrefix + key, args);
    } catch (error) {
      throw translate(error, lastConnectionError);
    }
    return toDecision(reply, rule.limit);
  }
};
