/**
 * A projection that is not following the feed is not reported ready (embedded backends):
 * - its checkpoint cannot be read (the read models unavailable): it restarts again and again, and
 *   /readyz says it is restarting, with the error, for as long as it does;
 * - its checkpoint read hangs: it is `starting`, ready only until the readiness threshold.
 * Either way the projections stop cleanly: the ones that never started have nothing to stop, and
 * every other part is stopped.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import pino from 'pino';
import { ReadModelUnavailableError } from '../../../shared/ports/read-models.ts';
import { TOPICS } from '../../../shared/topics.ts';
import { startProjections } from '../../../services/projections/projections.ts';
import { type ComponentReport, Health } from '../../../services/runtime/health.ts';
import { openEmbeddedBackends } from '../../support/embedded-backends.ts';
import { eventually } from '../../support/eventually.ts';

type Backends = ReturnType<typeof openEmbeddedBackends>;

describe('readiness of a projection that is not following the feed: embedded (SQLite)', () => {
  const opened: Backends[] = [];
  const open = () => {
    const backends = openEmbeddedBackends();
    opened.push(backends);
    return backends;
  };
  const start = (b: Backends, health: Health) =>
    startProjections({
      eventStore: b.eventStore,
      eventLog: b.eventLog,
      readModels: b.readModels,
      topics: TOPICS,
      logger: pino({ level: 'silent' }),
      relayCallEvents: false,
      health,
    });
  const historyReport = (health: Health) => health.report().components['projection:call-history'];

  after(async () => {
    for (const b of opened) await b.cleanup();
  });

  test('its checkpoint cannot be read: not ready, restarting with the error, across restarts; stop still stops', async () => {
    const b = open();
    let reads = 0;
    b.readModels.callHistory.checkpoint = () => {
      reads++;
      return Promise.reject(new ReadModelUnavailableError('read models unavailable (injected)'));
    };
    const health = new Health(1000);
    const projections = start(b, health);
    try {
      await eventually(() => assert.equal(historyReport(health)?.ready, false, JSON.stringify(historyReport(health))), {
        timeoutMs: 5000,
        intervalMs: 20,
      });
      // Restarted after 1 s, then after 2 s more: every report meanwhile says why it is not ready.
      const reports: (ComponentReport | undefined)[] = [];
      await eventually(
        () => {
          reports.push(historyReport(health));
          assert.ok(reads >= 3, `${reads} checkpoint reads so far`);
        },
        { timeoutMs: 15_000, intervalMs: 50 },
      );
      for (const report of reports) {
        assert.equal(report?.ready, false, JSON.stringify(report));
        assert.match(String(report.reason), /^restarting since .*: read models unavailable \(injected\)$/);
      }
      assert.equal(health.report().ready, false);
    } finally {
      await projections.stop();
    }
  });

  test('its checkpoint read hangs: starting, ready only until the threshold; stop does not wait for it', async () => {
    const b = open();
    b.readModels.callHistory.checkpoint = () => new Promise<bigint>(() => undefined);
    const health = new Health(200);
    const projections = start(b, health);
    try {
      const report = await eventually(
        () => {
          const current = historyReport(health);
          assert.equal(current?.ready, false, JSON.stringify(current));
          return current;
        },
        { timeoutMs: 5000, intervalMs: 20 },
      );
      assert.match(String(report.reason), /^starting since .*: not following the feed yet$/);
      assert.equal(historyReport(health)?.ready, false, 'still not ready');
    } finally {
      await projections.stop();
    }
  });
});
