/**
 * Fault: the service's PostgreSQL sessions are terminated on the server (pg_terminate_backend, as a
 * failover, a pooler's idle timeout or an operator would), twice, under a steady load of POSTs and
 * GETs. The process survives (an unhandled 'error' event would end this test process), every
 * answer is a success or a 503 with Retry-After, the service serves again by itself afterwards and
 * every call answered 201 reaches a terminal state, in its stream and in the read API.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { backend } from '../../support/backends.ts';
import { freshSchema } from '../../support/postgres.ts';
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

describe('PostgreSQL sessions terminated under load', { skip: postgres.skip }, () => {
  const schema = postgres.url ? freshSchema(postgres.url) : undefined;
  after(async () => schema?.drop());

  test(
    'twice pg_terminate_backend on every session of the service: only 201/200 or 503 + Retry-After, then it serves again and every 201 finishes',
    { timeout: 240_000 },
    async (t) => {
      const applicationName = uniqueApplicationName('faults-terminate');
      const pipeline = await startPostgresPipeline(withApplicationName(postgres.url!, applicationName), schema!.schema);
      const admin = new pg.Client({ connectionString: postgres.url! });
      await admin.connect();
      /** Terminates every session of this test's service for `ms` (again and again, so reconnections die too); returns how many. */
      const terminateFor = async (ms: number): Promise<number> => {
        let terminated = 0;
        const until = Date.now() + ms;
        do {
          const { rows } = await admin.query<{ n: number }>(
            'SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()',
            [applicationName],
          );
          terminated += rows[0]!.n;
          await pause(5);
        } while (Date.now() < until);
        return terminated;
      };
      try {
        const load = startLoad(pipeline);
        const terminated: number[] = [];
        for (let round = 0; round < 2; round++) {
          await pause(3000);
          load.outage(true);
          terminated.push(await terminateFor(1500));
          load.outage(false);
        }
        await pause(3000);
        const figures = await load.stop();
        const afterwards = await assertServesAgain(pipeline);
        const drained = await drain(pipeline, [...load.accepted, afterwards]);

        t.diagnostic(`sessions terminated: ${terminated.join(' + ')}`);
        t.diagnostic(
          `POST sent ${figures.sent}: 201 ${figures.created}, 503 ${figures.unavailable}, other ${figures.other}`,
        );
        t.diagnostic(
          `GET: 200/404 ${figures.gets.ok}, 503 ${figures.gets.unavailable}, other ${figures.gets.other}; during the terminations ${figures.gets.duringOutage} (503: ${figures.gets.unavailableDuringOutage})`,
        );
        t.diagnostic(
          `accepted ${load.accepted.length + 1}: completed ${drained.completed}, failed ${JSON.stringify(drained.failedByCode)}, missing ${drained.missing.length}; drained in ${drained.drainMs} ms`,
        );
        t.diagnostic(`event store log: ${pipeline.storeLog.join(' | ') || 'nothing'}`);
        assert.ok(
          pipeline.storeLog.length <= 2 * terminated.length,
          'the LISTEN session logs once when lost and once when back per outage, not per dropped connection',
        );

        assert.ok(
          terminated.every((n) => n > 0),
          'each round terminated sessions of the service',
        );
        assert.ok(figures.created > 0, 'the load got calls accepted');
        assert.ok(
          figures.unavailable + figures.gets.unavailable > 0,
          'the terminations reached requests in flight (else this run proved nothing)',
        );
        assertOnlySuccessOr503(load.answers);
        assert.deepEqual(
          drained.missing.slice(0, 5),
          [],
          `${drained.missing.length} calls answered 201 never finished`,
        );
      } finally {
        await admin.end();
        await pipeline.close();
      }
    },
  );
});
