/**
 * A projection that is not following the feed is not reported ready (embedded backends):
 * - its checkpoint cannot be read (the read models unavailable): it restarts again and again, and
 *   /readyz says it is restarting, with the error, for as long as it does;
 * - its checkpoint read hangs: it is `starting`, ready only until the readiness threshold;
 * - its writes fail with an error that proves nothing against the event (the database refusing
 *   sessions, which no classifier translated): it never stops on the event, is reported not ready
 *   with the error while it lasts, and projects the event once the database takes it again
 *   (docs/decisions/0025-what-blames-the-data.md).
 * Either way the projections stop cleanly: the ones that never started have nothing to stop, and
 * every other part is stopped.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import pino from 'pino';
import { ReadModelUnavailableError } from '../../../shared/ports/read-models.ts';
import { PROJECTION_STATUS_STREAM } from '../../../services/projections/projection-status.ts';
import { submitCall } from '../../conformance/read-models-fixtures.ts';
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

  test('its writes fail with the database refusing sessions: never stopped on the event, not ready with the error meanwhile, projected once it passes', async () => {
    const b = open();
    const teamId = 'team-outage';
    const call = await submitCall(b.eventStore, { teamId });
    // What PostgreSQL answers a new session while the database takes none, as an adapter without
    // a translation for it would let it through.
    const refused = Object.assign(new Error('database "calls" is not currently accepting connections'), {
      code: '55000',
      severity: 'FATAL',
    });
    let failing = true;
    let attempts = 0;
    const apply = b.readModels.callHistory.apply.bind(b.readModels.callHistory);
    b.readModels.callHistory.apply = async (...args) => {
      if (failing && args[0].length > 0) {
        attempts++;
        throw refused;
      }
      return apply(...args);
    };
    const health = new Health(0);
    const projections = start(b, health);
    try {
      await eventually(() => assert.ok(attempts >= 2, `${attempts} attempts so far`), {
        timeoutMs: 10_000,
        intervalMs: 20,
      });
      const report = historyReport(health);
      assert.equal(report?.ready, false, JSON.stringify(report));
      assert.match(String(report.reason), /not currently accepting connections/);
      assert.doesNotMatch(String(report.reason), /cannot project/, 'not stopped on the event');
      assert.equal(report.position, undefined, 'no event named as the one to skip');

      failing = false;
      const row = await eventually(
        async () => {
          const found = await b.readModels.callHistory.get(teamId, call.callId);
          assert.ok(found, 'not projected yet');
          return found;
        },
        { timeoutMs: 15_000, intervalMs: 50 },
      );
      assert.equal(row.callId, call.callId);
      await eventually(() => assert.equal(historyReport(health)?.ready, true, JSON.stringify(historyReport(health))), {
        timeoutMs: 5000,
        intervalMs: 20,
      });
      const stops = await b.eventStore.readStream(PROJECTION_STATUS_STREAM);
      assert.deepEqual(
        stops.map((e) => e.type),
        [],
        'no stop recorded for an operator to skip',
      );
    } finally {
      await projections.stop();
    }
  });
});
