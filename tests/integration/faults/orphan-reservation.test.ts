/**
 * kill -9 between the capacity reservation and the publish: the service on PostgreSQL (table log)
 * takes a call while the test holds the log's records table locked, so the ingest reserves and then
 * waits at its publish; the process is killed there. The reservation is in the store and the call
 * is nowhere. A new process on the same data releases it once it is older than
 * ORPHAN_RESERVATION_MS (the durable timer is the reservation's own time), the team gets its
 * minutes back, and the next call completes. Run three times on one stack.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { backend } from '../../support/backends.ts';
import { eventually } from '../../support/eventually.ts';
import { startService, type ServiceProcess } from '../../support/service-process.ts';
import { adminCall, scratchDatabase, teamWithKeys } from './scaled-out.ts';
import { ADMIN_TOKEN, API_KEY_SECRET } from '../../support/ingress-harness.ts';

const postgres = await backend('postgres');
const ORPHAN_RESERVATION_MS = 3000;
const TRANSCRIPT = 'Rep: Hello Dana, thanks for joining.\nDana: Happy to be here.';

describe(
  'kill -9 between reserving capacity and publishing the call',
  { skip: postgres.skip, timeout: 5 * 60_000 },
  () => {
    let database: Awaited<ReturnType<typeof scratchDatabase>>;
    let db: pg.Client;
    let service: ServiceProcess | undefined;
    let team: { teamId: string; keys: string[] };
    const env = () => ({
      DATABASE_URL: database.url,
      ADMIN_TOKEN,
      API_KEY_SECRET,
      ORPHAN_RESERVATION_MS: String(ORPHAN_RESERVATION_MS),
      TOPIC_PARTITIONS: '3',
    });
    const capacity = async () =>
      (await adminCall(service!.url, 'GET', `/api/admin/teams/${team.teamId}`)).capacity as {
        remainingMinutes: number;
        reservedCalls: number;
      };
    const ingest = (body: unknown) =>
      fetch(`${service!.url}/api/integrations/push-api/ingest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': team.keys[0]! },
        body: JSON.stringify(body),
      });
    const completes = async (callId: string) =>
      eventually(
        async () => {
          const res = await fetch(`${service!.url}/api/calls/${callId}`, { headers: { 'x-api-key': team.keys[0]! } });
          assert.equal(res.status, 200);
          assert.equal(((await res.json()) as { status: string }).status, 'completed');
        },
        { timeoutMs: 60_000, intervalMs: 200 },
      );

    before(async () => {
      database = await scratchDatabase(postgres.url!);
      db = new pg.Client({ connectionString: database.url });
      await db.connect();
      service = await startService(env());
      team = await teamWithKeys(service.url, 1);
      const first = await ingest({ transcript: TRANSCRIPT });
      assert.equal(first.status, 201);
      await completes(((await first.json()) as { callId: string }).callId);
    });
    after(async () => {
      await db?.query('ROLLBACK').catch(() => undefined);
      await db?.end();
      await service?.stop();
      await database?.drop();
    });

    for (const round of [1, 2, 3]) {
      test(`round ${round}: the orphaned reservation is released, the minutes come back, the next call completes`, async () => {
        const before = await capacity();
        assert.equal(before.reservedCalls, 0);
        await db.query('BEGIN');
        await db.query('LOCK TABLE log_records IN ACCESS EXCLUSIVE MODE');
        const pending = ingest({ transcript: TRANSCRIPT }).then(
          (res) => res.status,
          () => 'no answer' as const,
        );
        await eventually(async () => assert.equal((await capacity()).reservedCalls, 1), {
          timeoutMs: 20_000,
          intervalMs: 50,
        });
        const killedAt = Date.now();
        await service!.kill9();
        await db.query('ROLLBACK');
        assert.equal(await pending, 'no answer', 'the killed request was never answered');

        const { rows: orphans } = await db.query<{ call_id: string }>(
          `SELECT r.data->>'callId' AS call_id FROM events r
          WHERE r.type = 'CapacityReserved' AND r.stream_id = $1
            AND NOT EXISTS (SELECT 1 FROM events s WHERE s.stream_id = 'call-' || (r.data->>'callId'))
            AND NOT EXISTS (SELECT 1 FROM events x WHERE x.stream_id = r.stream_id AND x.type IN ('CapacityReleased', 'CapacitySettled') AND x.data->>'callId' = r.data->>'callId')`,
          [`team-${team.teamId}`],
        );
        assert.equal(orphans.length, 1, 'one reservation with no call behind it');
        const { rows: onLog } = await db.query('SELECT 1 FROM log_records WHERE key = $1', [orphans[0]!.call_id]);
        assert.equal(onLog.length, 0, 'the call never reached the log');

        service = await startService(env());
        await eventually(async () => assert.deepEqual(await capacity(), before), {
          timeoutMs: 30_000,
          intervalMs: 200,
        });
        const releasedAfter = Date.now() - killedAt;
        const { rows: released } = await db.query(
          "SELECT data FROM events WHERE stream_id = $1 AND type = 'CapacityReleased' AND data->>'callId' = $2",
          [`team-${team.teamId}`, orphans[0]!.call_id],
        );
        assert.equal(released.length, 1);
        assert.equal(released[0].data.orphaned, true);
        console.log(
          `# round ${round}: orphaned reservation of ${released[0].data.minutes} min released ${(releasedAfter / 1000).toFixed(1)} s after the kill (ORPHAN_RESERVATION_MS ${ORPHAN_RESERVATION_MS})`,
        );

        const next = await ingest({ transcript: TRANSCRIPT });
        assert.equal(next.status, 201);
        await completes(((await next.json()) as { callId: string }).callId);
      });
    }
  },
);
