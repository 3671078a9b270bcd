import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { test } from 'node:test';
import { Histogram, Registry } from 'prom-client';
import { histogramBetween, histogramBuckets } from '../../bench/wrk.ts';

test('a histogram read from /metrics twice gives the observations between the reads and the buckets of their p50 and p99', async (t) => {
  const registry = new Registry();
  const histogram = new Histogram({
    name: 'probe_seconds',
    help: 'probe',
    buckets: [0.001, 0.01, 0.1],
    registers: [registry],
  });
  const server = createServer((req, res) => {
    if (req.headers.authorization !== 'Bearer token') return res.writeHead(401).end();
    void registry.metrics().then((text) => res.end(text));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => server.close());
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/metrics`;

  histogram.observe(5); // before the first read: not counted
  const before = await histogramBuckets(url, 'token', 'probe_seconds');
  for (let i = 0; i < 98; i++) histogram.observe(0.0005);
  histogram.observe(0.05);
  histogram.observe(0.05);
  const after = await histogramBuckets(url, 'token', 'probe_seconds');
  assert.deepEqual(histogramBetween(before, after), { count: 100, p50: 0.001, p99: 0.1 });
  assert.deepEqual(histogramBetween(after, after), { count: 0, p50: undefined, p99: undefined });
});
