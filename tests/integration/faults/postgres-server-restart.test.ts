/**
 * Fault: the PostgreSQL server itself goes away for 10 s (a throwaway cluster of this test's own,
 * stopped with pg_ctl and started again) under a steady load of POSTs and GETs. While it is down
 * every request answers 503 with Retry-After; once it is back the service recovers by itself, and
 * every call answered 201 reaches a terminal state, in its stream and in the read API.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type Cluster, createCluster, findServerBinaries } from './postgres-cluster.ts';
import { assertOnlySuccessOr503, assertServesAgain, drain, startLoad, startPostgresPipeline } from './postgres-load.ts';

const bin = findServerBinaries();
const skip = bin
  ? undefined
  : 'no PostgreSQL server binaries (initdb, pg_ctl) under /usr/lib/postgresql/*/bin: install postgresql to run this fault test';
if (skip) process.stdout.write(`# skipping the PostgreSQL restart fault test: ${skip}\n`);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('PostgreSQL server stopped for 10 s under load', { skip }, () => {
  let cluster: Cluster | undefined;
  before(async () => {
    cluster = await createCluster(bin!);
  });
  after(async () => cluster?.destroy());

  test(
    'while it is down every request answers 503 + Retry-After; when it is back the service recovers by itself and every 201 finishes',
    { timeout: 300_000 },
    async (t) => {
      const pipeline = await startPostgresPipeline(cluster!.url, 'calls');
      try {
        const load = startLoad(pipeline);
        await pause(3000);
        const stopping = Date.now();
        await cluster!.stop();
        const stopMs = Date.now() - stopping;
        load.outage(true);
        await pause(10_000);
        load.outage(false);
        const starting = Date.now();
        await cluster!.start();
        const startMs = Date.now() - starting;
        await pause(5000);
        const figures = await load.stop();
        const recovering = Date.now();
        const afterwards = await assertServesAgain(pipeline);
        const recoveryMs = Date.now() - recovering;
        const drained = await drain(pipeline, [...load.accepted, afterwards]);
        const outagePosts = load.answers.filter((a) => a.kind === 'POST' && a.duringOutage);

        t.diagnostic(
          `server stop took ${stopMs} ms, start ${startMs} ms; first POST + GET served ${recoveryMs} ms after the load ended`,
        );
        t.diagnostic(
          `POST sent ${figures.sent}: 201 ${figures.created}, 503 ${figures.unavailable}, other ${figures.other}; while down ${outagePosts.length} (503: ${outagePosts.filter((a) => a.status === 503).length})`,
        );
        t.diagnostic(
          `GET: 200/404 ${figures.gets.ok}, 503 ${figures.gets.unavailable}, other ${figures.gets.other}; while down ${figures.gets.duringOutage} (503: ${figures.gets.unavailableDuringOutage})`,
        );
        t.diagnostic(
          `accepted ${load.accepted.length + 1}: completed ${drained.completed}, failed ${JSON.stringify(drained.failedByCode)}, missing ${drained.missing.length}; drained in ${drained.drainMs} ms`,
        );
        t.diagnostic(`event store log: ${pipeline.storeLog.join(' | ') || 'nothing'}`);

        assert.ok(figures.created > 0, 'the load got calls accepted');
        assertOnlySuccessOr503(load.answers);
        assert.ok(
          figures.gets.duringOutage > 0 && outagePosts.length > 0,
          'requests were sent while the server was down',
        );
        assert.equal(
          figures.gets.unavailableDuringOutage,
          figures.gets.duringOutage,
          'every GET while the server is down answers 503',
        );
        assert.ok(
          outagePosts.every((a) => a.status === 503),
          'every POST while the server is down answers 503',
        );
        assert.deepEqual(
          drained.missing.slice(0, 5),
          [],
          `${drained.missing.length} calls answered 201 never finished`,
        );
      } finally {
        await pipeline.close();
      }
    },
  );
});
