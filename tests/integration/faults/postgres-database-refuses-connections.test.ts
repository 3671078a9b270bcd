/**
 * Fault: the service's PostgreSQL database takes no connections for a while (ALTER DATABASE …
 * ALLOW_CONNECTIONS false, its sessions terminated again and again), under a steady load of POSTs
 * and GETs. Every new session is refused with FATAL 55000 "database … is not currently accepting
 * connections", an error outside any list of transient SQLSTATEs: it is the database's state, not
 * a record's fault (docs/decisions/0025-what-blames-the-data.md). Every answer is a success or a
 * 503 with Retry-After (never a 500), nothing is dead-lettered, no projection stops on an event,
 * readiness says not ready while it lasts and ready after, and every call answered 201 finishes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PROJECTION_STATUS_STREAM } from '../../../services/projections/projection-status.ts';
import { backend } from '../../support/backends.ts';
import { eventually } from '../../support/eventually.ts';
import { freshDatabase } from '../../support/postgres.ts';
import {
  assertOnlySuccessOr503,
  assertServesAgain,
  drain,
  startLoad,
  startPostgresPipeline,
  uniqueApplicationName,
  withApplicationName,
} from './postgres-load.ts';

const postgres = await backend('postgres');

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('PostgreSQL database refusing connections under load', { skip: postgres.skip }, () => {
  let database: Awaited<ReturnType<typeof freshDatabase>> | undefined;
  before(async () => {
    database = await freshDatabase(postgres.url!);
  });
  after(async () => {
    await database?.admin((client) => client.query(`ALTER DATABASE ${database!.name} ALLOW_CONNECTIONS true`));
    await database?.drop();
  });

  test(
    'FATAL 55000 for 6 s: only 201/200 or 503 + Retry-After, nothing dead-lettered, no projection stopped, not ready meanwhile, then every 201 finishes',
    { timeout: 240_000 },
    async (t) => {
      const db = database!;
      const applicationName = uniqueApplicationName('faults-55000');
      const pipeline = await startPostgresPipeline(withApplicationName(db.url, applicationName), 'calls', 12, {
        retryThresholdMs: 1000,
      });
      /** Refuses new sessions and ends the open ones, again and again, for `ms`; returns how many it ended. */
      const refuseFor = (ms: number) =>
        db.admin(async (client) => {
          await client.query(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS false`);
          let terminated = 0;
          const until = Date.now() + ms;
          try {
            do {
              const { rows } = await client.query<{ n: number }>(
                'SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
                [db.name],
              );
              terminated += rows[0]!.n;
              await pause(200);
            } while (Date.now() < until);
          } finally {
            await client.query(`ALTER DATABASE ${db.name} ALLOW_CONNECTIONS true`);
          }
          return terminated;
        });
      const notReady: string[] = [];
      const watchReadiness = setInterval(() => {
        const report = pipeline.h.health.report();
        if (!report.ready)
          for (const [name, c] of Object.entries(report.components))
            if (!c.ready) notReady.push(`${name}: ${c.reason ?? ''}`);
      }, 100);
      try {
        const load = startLoad(pipeline);
        await pause(3000);
        load.outage(true);
        const terminated = await refuseFor(6000);
        load.outage(false);
        await pause(3000);
        const figures = await load.stop();
        const afterwards = await assertServesAgain(pipeline);
        const drained = await drain(pipeline, [...load.accepted, afterwards]);
        await eventually(
          () => assert.equal(pipeline.h.health.report().ready, true, JSON.stringify(pipeline.h.health.report())),
          { timeoutMs: 60_000, intervalMs: 200 },
        );
        clearInterval(watchReadiness);
        const deadLetters = await pipeline.h.eventLog.read(pipeline.h.topics.deadLetter, { limit: 1000 });
        const stops = await pipeline.h.eventStore.readStream(PROJECTION_STATUS_STREAM);

        t.diagnostic(`sessions terminated: ${terminated}`);
        t.diagnostic(
          `POST sent ${figures.sent}: 201 ${figures.created}, 503 ${figures.unavailable}, other ${figures.other}`,
        );
        t.diagnostic(
          `GET: 200/404 ${figures.gets.ok}, 503 ${figures.gets.unavailable}, other ${figures.gets.other}; during the outage ${figures.gets.duringOutage} (503: ${figures.gets.unavailableDuringOutage})`,
        );
        t.diagnostic(
          `accepted ${load.accepted.length + 1}: completed ${drained.completed}, failed ${JSON.stringify(drained.failedByCode)}, missing ${drained.missing.length}; drained in ${drained.drainMs} ms`,
        );
        t.diagnostic(`not ready meanwhile, e.g.: ${[...new Set(notReady)].slice(0, 3).join(' | ') || 'never'}`);

        assert.ok(terminated > 0, 'the outage ended sessions of the service');
        assert.ok(figures.created > 0, 'the load got calls accepted');
        assert.ok(
          figures.unavailable + figures.gets.unavailable > 0,
          'the outage reached requests in flight (else this run proved nothing)',
        );
        assertOnlySuccessOr503(load.answers);
        assert.deepEqual(
          deadLetters.map((r) => `${r.key}: ${r.headers.dlq_reason}`),
          [],
          'an outage dead-letters nothing',
        );
        assert.deepEqual(
          stops.map((e) => `${e.type} ${JSON.stringify(e.data)}`),
          [],
          'no projection stopped on an event',
        );
        assert.ok(
          notReady.some((line) => /accepting connections|unavailable|retrying|restarting/.test(line)),
          `readiness said nothing of the outage: ${notReady.slice(0, 3).join(' | ')}`,
        );
        assert.deepEqual(
          drained.missing.slice(0, 5),
          [],
          `${drained.missing.length} calls answered 201 never finished`,
        );
      } finally {
        clearInterval(watchReadiness);
        await pipeline.close();
      }
    },
  );
});
