/**
 * The paced load of the benches (writeScript in tests/bench/wrk.ts), run by `wrk` itself against a
 * server that records when each connection's requests arrive: with a fixed think time every
 * connection waits the same time between an answer and its next request; with an exponential one
 * the waits vary (about 39 % of them shorter than half the mean), with the same mean. Needs the
 * Debian package `wrk`: without it the test is skipped with a line saying so, unless REQUIRE_WRK=1
 * (CI), which makes that a failure.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { tempDir } from '../../support/temp-dir.ts';
import { quantile, runWrkAsync, type ThinkTime, wrkMissing, writeScript } from '../../bench/wrk.ts';

const MEAN_MS = 20;
const missing = wrkMissing();
if (missing && process.env.REQUIRE_WRK === '1') {
  test('wrk is installed (REQUIRE_WRK=1)', () => assert.fail(missing));
}

/** Gaps between one connection's requests (answer → next request), for `thinkTime` over 3 s of wrk. */
const gapsOf = async (thinkTime: ThinkTime): Promise<number[]> => {
  const arrivals = new Map<unknown, number[]>();
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const times = arrivals.get(request.socket) ?? [];
    times.push(performance.now());
    arrivals.set(request.socket, times);
    request.resume();
    request.on('end', () => response.writeHead(201, { 'content-type': 'application/json' }).end('{}'));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const dir = tempDir('think-time-');
  try {
    const { port } = server.address() as AddressInfo;
    const script = writeScript(`${dir.path}/paced.lua`, ['key'], { delayMs: MEAN_MS, thinkTime });
    const result = await runWrkAsync(`http://127.0.0.1:${port}`, script, 4, 3);
    assert.equal(result.non2xx, 0);
    return [...arrivals.values()].flatMap((times) => times.slice(1).map((t, i) => t - times[i]!));
  } finally {
    server.close();
    dir.remove();
  }
};

const meanOf = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const shareBelow = (values: number[], ms: number) => values.filter((v) => v < ms).length / values.length;

// A busy machine only ever lengthens a gap (the test files run two at a time), so the checks are
// of quantiles and shares that a few late requests do not move.
test(
  'a fixed think time waits the same between requests; an exponential one varies, with the same mean',
  { skip: missing },
  async () => {
    const fixed = await gapsOf('fixed');
    const exponential = await gapsOf('exponential');
    assert.ok(fixed.length > 100 && exponential.length > 100, `${fixed.length} and ${exponential.length} gaps`);
    // The answer takes well under a millisecond here, so a gap is the wait plus a little.
    // A fixed wait's gaps are never shorter than the wait, and spread far less than an exponential
    // one's (whose p10–p90 is about 2.2 means); a busy machine lengthens some gaps of both.
    const [p10, p90] = [quantile(fixed, 0.1), quantile(fixed, 0.9)];
    const spread = quantile(exponential, 0.9) - quantile(exponential, 0.1);
    assert.ok(
      p10 >= MEAN_MS - 2 && p90 - p10 < spread / 3,
      `fixed: gaps p10 ${p10} ms, p90 ${p90} ms; exponential p10–p90 ${spread} ms`,
    );
    assert.equal(shareBelow(fixed, MEAN_MS / 2), 0, 'fixed: no gap under half the wait');
    // An exponential wait of mean m is under m/2 with probability 1 − e^−½ ≈ 39 %.
    const short = shareBelow(exponential, MEAN_MS / 2);
    assert.ok(
      short > 0.25 && short < 0.55,
      `exponential: ${(short * 100).toFixed(0)} % of gaps under ${MEAN_MS / 2} ms`,
    );
    assert.ok(Math.abs(meanOf(exponential) - MEAN_MS) < 5, `exponential: mean gap ${meanOf(exponential)} ms`);
  },
);
