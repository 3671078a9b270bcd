/**
 * GET /readyz answers within the probes' deadline whatever a backend does: a backend that hangs
 * (a broker stopped with SIGSTOP) is not ready after READINESS_PROBE_DEADLINE_MS, named, with the
 * reason that it did not answer within it; every /readyz asked meanwhile waits on the one probe
 * already running instead of starting another; a probe that fails says the backend does not answer.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { loadConfig } from '../../../shared/config.ts';
import { backendProbes, READINESS_PROBE_DEADLINE_MS } from '../../../services/runtime/backend-probes.ts';
import { openBackends } from '../../../services/runtime/backends.ts';
import { Health } from '../../../services/runtime/health.ts';
import { readiness } from '../../../services/runtime/readiness.ts';
import { deferred } from '../../support/deferred.ts';
import { tempDir } from '../../support/temp-dir.ts';

/** How long `work` took, in ms, and what it gave. */
const timed = async <T>(work: () => Promise<T>): Promise<{ ms: number; value: T }> => {
  const started = performance.now();
  const value = await work();
  return { ms: performance.now() - started, value };
};

test('a backend that hangs: not ready within the deadline, named, "did not answer within" it; the others answer', async () => {
  const hung = deferred();
  const check = backendProbes(
    { eventStore: () => Promise.resolve(), eventLog: () => hung.promise },
    { deadlineMs: 200 },
  );
  const { ms, value } = await timed(check);
  assert.ok(ms < 1000, `answered after ${Math.round(ms)} ms`);
  assert.deepEqual(value, {
    eventStore: { up: true },
    eventLog: { up: false, reason: 'did not answer within 0.2 s' },
  });
  const ready = readiness(check, new Health(), pino({ level: 'silent' }));
  const report = await ready();
  assert.equal(report.status, 'unavailable');
  assert.deepEqual(report.backends, { eventStore: true, eventLog: false });
  assert.deepEqual(report.reasons, ['eventLog did not answer within 0.2 s']);
  hung.resolve();
});

test('every /readyz asked while a probe hangs shares that probe: none piles up; the next after it ends probes again', async () => {
  let started = 0;
  let hung = deferred();
  const check = backendProbes(
    {
      eventLog: () => {
        started++;
        return hung.promise;
      },
    },
    { deadlineMs: 100 },
  );
  const answers = await Promise.all(Array.from({ length: 10 }, () => check()));
  assert.ok(answers.every((a) => !a.eventLog.up));
  // Past the deadline, still hanging: asked again, it waits on the same probe.
  assert.equal((await check()).eventLog.up, false);
  assert.equal(started, 1, 'one probe for eleven questions');

  hung.resolve();
  assert.deepEqual(await check(), { eventLog: { up: true } }, 'it answered at last');
  hung = deferred();
  assert.equal((await check()).eventLog.up, false);
  assert.equal(started, 2, 'a probe that ended is not reused');
  hung.resolve();
});

test('a probe that fails (or throws) says the backend does not answer', async () => {
  const check = backendProbes({
    eventStore: () => Promise.reject(new Error('connection refused')),
    eventLog: () => {
      throw new Error('closed');
    },
  });
  assert.deepEqual(await check(), {
    eventStore: { up: false, reason: 'does not answer' },
    eventLog: { up: false, reason: 'does not answer' },
  });
});

test("the service's backends: an event log that hangs makes check() answer within the deadline, not when the log does", async () => {
  const dir = tempDir();
  const backends = await openBackends(loadConfig({ DATA_DIR: dir.path }), pino({ level: 'silent' }));
  try {
    assert.deepEqual(await backends.check(), { eventStore: { up: true }, eventLog: { up: true } });
    // As the Kafka admin request does while the broker is stopped (SIGSTOP): no answer at all.
    backends.eventLog.committedOffset = () => new Promise(() => undefined);
    const { ms, value } = await timed(() => backends.check());
    assert.ok(ms < READINESS_PROBE_DEADLINE_MS + 1000, `answered after ${Math.round(ms)} ms`);
    assert.deepEqual(value, {
      eventStore: { up: true },
      eventLog: { up: false, reason: `did not answer within ${READINESS_PROBE_DEADLINE_MS / 1000} s` },
    });
  } finally {
    await backends.close();
    dir.remove();
  }
});
