/**
 * Which error replies of a Redis server the Redis limiter takes for "Redis cannot serve this now"
 * (RateLimiterUnavailableError, so the fallback limiter answers) and which for a bug it passes on.
 * Over a fake server (node:net) that answers the ready check and then every command with the reply
 * under test, so that a condition hard to bring about on a real server (out of memory, loading) is
 * tested as the client meets it.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { createFallbackRateLimiter } from '../../../shared/adapters/rate-limit/fallback-rate-limiter.ts';
import { createMemoryRateLimiter } from '../../../shared/adapters/rate-limit/memory-rate-limiter.ts';
import { createRedisRateLimiter } from '../../../shared/adapters/rate-limit/redis-rate-limiter.ts';
import { RateLimiterUnavailableError } from '../../../shared/ports/rate-limiter.ts';

/** Reads RESP arrays of bulk strings (what a client sends) off `buffer`; returns the commands and the rest. */
const parseCommands = (buffer: string): { commands: string[][]; rest: string } => {
  const commands: string[][] = [];
  let at = 0;
  for (;;) {
    const start = at;
    const header = buffer.indexOf('\r\n', at);
    if (header < 0 || buffer[at] !== '*') return { commands, rest: buffer.slice(start) };
    const count = Number(buffer.slice(at + 1, header));
    at = header + 2;
    const args: string[] = [];
    for (let i = 0; i < count; i++) {
      const lengthEnd = buffer.indexOf('\r\n', at);
      if (lengthEnd < 0) return { commands, rest: buffer.slice(start) };
      const length = Number(buffer.slice(at + 1, lengthEnd));
      if (buffer.length < lengthEnd + 2 + length + 2) return { commands, rest: buffer.slice(start) };
      args.push(buffer.slice(lengthEnd + 2, lengthEnd + 2 + length));
      at = lengthEnd + 2 + length + 2;
    }
    commands.push(args);
  }
};

/** A server that passes the ready check (INFO) and answers every other command with `-reply`. */
const fakeRedis = async (reply: string) => {
  const server = net.createServer((socket) => {
    let pending = '';
    socket.setEncoding('latin1');
    socket.on('error', () => undefined);
    socket.on('data', (chunk: string) => {
      const { commands, rest } = parseCommands(pending + chunk);
      pending = rest;
      for (const [name] of commands) {
        if (name?.toUpperCase() === 'INFO') {
          const info = '# Server\r\nredis_version:7.0.0\r\nloading:0\r\n';
          socket.write(`$${info.length}\r\n${info}\r\n`);
        } else socket.write(`-${reply}\r\n`);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `redis://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
};

const rule = { limit: 10, windowMs: 1000 };

/** What `hit` on a Redis limiter over a server answering `reply` rejects with. */
const hitAgainst = async (reply: string): Promise<unknown> => {
  const server = await fakeRedis(reply);
  const limiter = createRedisRateLimiter({ url: server.url, timeoutMs: 2000 });
  try {
    return await limiter.hit('ingest:k1', rule).then(
      () => assert.fail(`a hit cannot succeed against "${reply}"`),
      (error: unknown) => error,
    );
  } finally {
    await limiter.close();
    await server.close();
  }
};

for (const reply of [
  // maxmemory reached under the noeviction policy: no write is taken until memory is freed.
  "OOM command not allowed when used memory > 'maxmemory'.",
  // The same met inside the limiter's script.
  "OOM command not allowed when used memory > 'maxmemory'. script: 0123abcd, on @user_script:12.",
  'LOADING Redis is loading the dataset in memory',
  'BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSCRIPT.',
  "READONLY You can't write against a read only replica.",
  'MISCONF Redis is configured to save RDB snapshots, but it is currently not able to persist on disk.',
  // The server's state, not a bug of ours: a password set or rotated, an ACL changed, no room for a client.
  'NOAUTH Authentication required.',
  'WRONGPASS invalid username-password pair or user is disabled.',
  "NOPERM User calls has no permissions to run the 'evalsha' command",
  'ERR max number of clients reached',
  // A reply no list names: the server's until proven ours.
  'SOMETHINGNEW the server cannot do this now',
]) {
  test(`unavailable: ${reply.split(' ')[0]} (${reply.slice(0, 60)})`, async () => {
    const error = await hitAgainst(reply);
    assert.ok(error instanceof RateLimiterUnavailableError, String(error));
    assert.match(error.message, new RegExp(`^Redis rate limiter unavailable: ${reply.split(' ')[0]}`));
  });
}

for (const reply of [
  'ERR wrong number of arguments for command',
  'WRONGTYPE Operation against a key holding the wrong kind of value',
  "ERR user_script:3: Script attempted to access nonexistent global variable 'x' script: 0123abcd, on @user_script:3.",
]) {
  test(`passed on, not unavailable: ${reply.split(' ')[0]}`, async () => {
    const error = await hitAgainst(reply);
    assert.equal(error instanceof RateLimiterUnavailableError, false, String(error));
    assert.equal((error as Error).name, 'ReplyError');
  });
}

test('a Redis out of memory: the fallback limiter answers, once reported', async () => {
  const server = await fakeRedis("OOM command not allowed when used memory > 'maxmemory'.");
  const reported: string[] = [];
  const limiter = createFallbackRateLimiter(
    createRedisRateLimiter({ url: server.url, timeoutMs: 2000 }),
    createMemoryRateLimiter(),
    (error) => reported.push(error.message),
  );
  try {
    const first = await limiter.hit('ingest:k1', { limit: 2, windowMs: 60_000 });
    const second = await limiter.hit('ingest:k1', { limit: 2, windowMs: 60_000 });
    const third = await limiter.hit('ingest:k1', { limit: 2, windowMs: 60_000 });
    assert.deepEqual(
      [first.allowed, second.allowed, third.allowed],
      [true, true, false],
      'the process enforces the limit itself',
    );
    assert.equal(reported.length, 1);
    assert.match(reported[0]!, /OOM/);
  } finally {
    await limiter.close();
    await server.close();
  }
});
