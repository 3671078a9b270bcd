import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import { after, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { createFallbackRateLimiter } from '../../shared/adapters/rate-limit/fallback-rate-limiter.ts';
import { createMemoryRateLimiter } from '../../shared/adapters/rate-limit/memory-rate-limiter.ts';
import { createRedisRateLimiter } from '../../shared/adapters/rate-limit/redis-rate-limiter.ts';
import { RateLimiterUnavailableError } from '../../shared/ports/rate-limiter.ts';
import { backend } from '../support/backends.ts';
import { eventually } from '../support/eventually.ts';
import { type RateLimiterHandle, rateLimiterConformance } from './rate-limiter.ts';

const redis = await backend('redis');
const runPrefix = `rl-test-${randomUUID()}:`;

let admin: Redis | undefined;
const adminClient = () => (admin ??= new Redis(redis.url!, { maxRetriesPerRequest: 1 }));
after(async () => {
  if (!admin) return;
  let cursor = '0';
  do {
    const [next, keys] = await admin.scan(cursor, 'MATCH', `${runPrefix}*`, 'COUNT', 1000);
    if (keys.length > 0) await admin.del(...keys);
    cursor = next;
  } while (cursor !== '0');
  await admin.quit();
});

const prefixes = new Map<RateLimiterHandle, string>();
const open = (keyPrefix: string): RateLimiterHandle => {
  adminClient();
  const limiter = createRedisRateLimiter({ url: redis.url!, keyPrefix });
  return { limiter, cleanup: () => limiter.close() };
};

rateLimiterConformance(
  'redis',
  {
    async fresh() {
      const keyPrefix = `${runPrefix}${randomUUID()}:`;
      const handle = open(keyPrefix);
      prefixes.set(handle, keyPrefix);
      return handle;
    },
    async sameStorage(handle) {
      return open(prefixes.get(handle)!);
    },
  },
  { skip: redis.skip },
);

describe('redis rate limiter: failures', { skip: redis.skip }, () => {
  const rule = { limit: 2, windowMs: 1_000 };

  test('a server error that is not transient (WRONGTYPE) is rethrown as is, not reported as unavailable', async () => {
    const keyPrefix = `${runPrefix}${randomUUID()}:`;
    await adminClient().set(`${keyPrefix}taken`, 'a string, not a sorted set');
    const limiter = createRedisRateLimiter({ url: redis.url!, keyPrefix });
    try {
      const error = await limiter.hit('taken', rule, 0).catch((e: unknown) => e);
      assert.ok(error instanceof Error && !(error instanceof RateLimiterUnavailableError), String(error));
      assert.match(error.message, /WRONGTYPE/);
    } finally {
      await limiter.close();
    }
  });

  test('after the server forgets the script (restart, SCRIPT FLUSH), hits still work', async () => {
    const limiter = createRedisRateLimiter({ url: redis.url!, keyPrefix: `${runPrefix}${randomUUID()}:` });
    try {
      assert.equal((await limiter.hit('k', rule, 0)).allowed, true);
      await adminClient().script('FLUSH');
      assert.deepEqual((await limiter.hit('k', rule, 1)).remaining, 0);
      assert.equal((await limiter.hit('k', rule, 2)).allowed, false);
    } finally {
      await limiter.close();
    }
  });
});

// These need no Redis server: they check what happens when there is none.
describe('redis rate limiter: unreachable Redis', () => {
  const rule = { limit: 2, windowMs: 60_000 };
  const timed = async <T>(promise: Promise<T>): Promise<{ value?: T; error?: unknown; ms: number }> => {
    const started = performance.now();
    const outcome = await promise.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    );
    return { ...outcome, ms: performance.now() - started };
  };

  // The per-test timeout turns a hang into a failure; the times themselves are only reported.
  test(
    'refused connection: every call rejects with RateLimiterUnavailableError, no hang',
    { timeout: 10_000 },
    async (t) => {
      const limiter = createRedisRateLimiter({ url: 'redis://127.0.0.1:1' });
      try {
        for (let i = 0; i < 3; i++) {
          const { error, ms } = await timed(limiter.hit('k', rule, i));
          assert.ok(error instanceof RateLimiterUnavailableError, String(error));
          assert.equal(error.retriable, true);
          t.diagnostic(`call ${i} rejected after ${ms.toFixed(0)} ms`);
        }
      } finally {
        await limiter.close();
      }
    },
  );

  test(
    'a server that accepts connections but never answers: the call rejects after timeoutMs, not a hang',
    { timeout: 10_000 },
    async (t) => {
      const sockets = new Set<Socket>();
      const silent = createServer((socket) => {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
      });
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const { port } = silent.address() as { port: number };
      const limiter = createRedisRateLimiter({ url: `redis://127.0.0.1:${port}`, timeoutMs: 200 });
      try {
        const { error, ms } = await timed(limiter.hit('k', rule, 0));
        assert.ok(error instanceof RateLimiterUnavailableError, String(error));
        t.diagnostic(`rejected after ${ms.toFixed(0)} ms (timeoutMs 200)`);
      } finally {
        await limiter.close();
        for (const socket of sockets) socket.destroy();
        await new Promise((resolve) => silent.close(resolve));
      }
    },
  );

  test(
    'behind the fallback wrapper, the in-process limiter answers and the outage is reported once',
    { timeout: 10_000 },
    async (t) => {
      const reported: unknown[] = [];
      const limiter = createFallbackRateLimiter(
        createRedisRateLimiter({ url: 'redis://127.0.0.1:1' }),
        createMemoryRateLimiter(),
        (error) => reported.push(error),
      );
      try {
        const { value, ms } = await timed(limiter.hit('k', rule, 0));
        t.diagnostic(`answered after ${ms.toFixed(0)} ms`);
        const decisions = [value, await limiter.hit('k', rule, 1), await limiter.hit('k', rule, 2)];
        assert.deepEqual(
          decisions.map((d) => d?.allowed),
          [true, true, false],
        );
        assert.equal(reported.length, 1);
        assert.ok(reported[0] instanceof RateLimiterUnavailableError);
      } finally {
        await limiter.close();
      }
    },
  );
});

describe('redis rate limiter: its connection killed on the server', { skip: redis.skip }, () => {
  const rule = { limit: 1000, windowMs: 60_000 };

  /** CLIENT KILL on this test's own connection only, found by its name. */
  const killConnection = async (name: string): Promise<number> => {
    const list = String(await adminClient().call('CLIENT', 'LIST'));
    const ids = list
      .split('\n')
      .filter((line) => line.includes(` name=${name} `))
      .map((line) => /(?:^|\s)id=(\d+)/.exec(line)?.[1])
      .filter((id): id is string => id !== undefined);
    for (const id of ids) await adminClient().call('CLIENT', 'KILL', 'ID', id);
    return ids.length;
  };

  test(
    'CLIENT KILL mid-traffic: every hit behind the fallback is decided (none throws), the outage is reported once, and Redis counts again after the reconnection',
    { timeout: 20_000 },
    async (t) => {
      const name = `rl-kill-${randomUUID().slice(0, 8)}`;
      const keyPrefix = `${runPrefix}${randomUUID()}:`;
      const reported: unknown[] = [];
      const limiter = createFallbackRateLimiter(
        createRedisRateLimiter({ url: redis.url!, keyPrefix, connectionName: name }),
        createMemoryRateLimiter(),
        (error) => reported.push(error),
      );
      const zcard = () => adminClient().zcard(`${keyPrefix}k`);
      try {
        await limiter.hit('k', rule);
        assert.equal(await zcard(), 1, 'the first hit is counted in Redis');

        // Hits in flight while the connection is killed, and right after it.
        const inFlight = Array.from({ length: 20 }, () => limiter.hit('k', rule));
        assert.equal(await killConnection(name), 1, 'exactly the limiter connection carries the name');
        const after = Array.from({ length: 20 }, () => limiter.hit('k', rule));
        const settled = await Promise.allSettled([...inFlight, ...after]);
        const thrown = settled.filter((s) => s.status === 'rejected');
        assert.deepEqual(
          thrown.map((s) => String(s.reason)),
          [],
          'no hit throws',
        );
        assert.ok(settled.every((s) => s.status === 'fulfilled' && s.value.allowed));

        // Once reconnected, hits are counted in Redis again.
        const before = await zcard();
        await eventually(
          async () => {
            await limiter.hit('k', rule);
            assert.ok((await zcard()) > before, 'a hit after the reconnection is counted in Redis');
          },
          { timeoutMs: 10_000, intervalMs: 100 },
        );
        assert.ok(reported.length <= 1, `the outage is reported at most once (${reported.length})`);
        assert.ok(reported.every((e) => e instanceof RateLimiterUnavailableError));
        t.diagnostic(
          `outage reports: ${reported.length}; hits counted in Redis before the kill's aftermath: ${before}`,
        );
      } finally {
        await limiter.close();
      }
    },
  );
});
