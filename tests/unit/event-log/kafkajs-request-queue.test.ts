/**
 * kafkajs's request queue sets no timer while nothing is pending (the fix in
 * shared/adapters/event-log/kafkajs-request-queue.ts), and still sends a request that a throttle
 * held once the throttle ends.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import { fixKafkajsRequestQueue } from '../../../shared/adapters/event-log/kafkajs-request-queue.ts';

interface Queue {
  pending: unknown[];
  throttleCheckTimeoutId: NodeJS.Timeout | null;
  scheduleCheckPendingRequests(): void;
  checkPendingRequests(): void;
  maybeThrottle(ms: number): void;
  push(request: { entry: Record<string, unknown>; expectResponse: boolean; sendRequest(): void }): void;
  destroy(): void;
}
const RequestQueue = createRequire(import.meta.url)('kafkajs/src/network/requestQueue/index.js') as new (options: {
  maxInFlightRequests: number;
  requestTimeout: number;
  enforceRequestTimeout: boolean;
  clientId: string;
  broker: string;
  logger: unknown;
}) => Queue;

const newQueue = () =>
  new RequestQueue({
    maxInFlightRequests: 1,
    requestTimeout: 30_000,
    enforceRequestTimeout: false,
    clientId: 'test',
    broker: '127.0.0.1:1',
    logger: { debug() {}, info() {}, warn() {}, error() {} },
  });

/** How often the queue's check runs, and the warnings emitted, over `ms` after `start`. */
const observe = async (queue: Queue, start: () => void, ms: number) => {
  let checks = 0;
  const check = queue.checkPendingRequests.bind(queue);
  queue.checkPendingRequests = () => {
    checks++;
    check();
  };
  const warnings: string[] = [];
  const listener = (warning: Error) => warnings.push(warning.name);
  process.on('warning', listener);
  try {
    start();
    await new Promise((resolve) => setTimeout(resolve, ms));
  } finally {
    process.off('warning', listener);
  }
  return { checks, warnings };
};

test('an idle kafkajs request queue checks its pending requests every millisecond until fixed, then never', async () => {
  const before = newQueue();
  const unfixed = await observe(before, () => before.checkPendingRequests(), 200);
  before.destroy();
  assert.ok(unfixed.checks > 20, `kafkajs as released loops on a 1 ms timer (${unfixed.checks} checks in 200 ms)`);
  assert.ok(unfixed.warnings.includes('TimeoutNegativeWarning'));

  fixKafkajsRequestQueue();
  const after = newQueue();
  const fixed = await observe(after, () => after.checkPendingRequests(), 200);
  assert.equal(fixed.checks, 1, 'the one check asked for, and no timer after it');
  assert.equal(after.throttleCheckTimeoutId, null);
  assert.deepEqual(fixed.warnings, []);
  after.destroy();
});

test('with the fix, a request held by a throttle is sent once the throttle ends', async () => {
  fixKafkajsRequestQueue();
  const queue = newQueue();
  let sent = 0;
  queue.maybeThrottle(50);
  queue.push({
    entry: { correlationId: 1, apiKey: 18, apiName: 'ApiVersions', apiVersion: 0, resolve() {}, reject() {} },
    expectResponse: false,
    sendRequest: () => sent++,
  });
  assert.equal(sent, 0, 'held while throttled');
  assert.equal(queue.pending.length, 1);
  const deadline = Date.now() + 2000;
  while (sent === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
  assert.equal(sent, 1, 'sent after the throttle');
  assert.equal(queue.pending.length, 0);
  queue.destroy();
});
