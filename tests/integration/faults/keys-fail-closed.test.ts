/**
 * Keys fail closed. Two ingress processes on PostgreSQL; the second reaches the database through a
 * proxy of the test's own, which the test makes hang (bytes stop flowing both ways, as in a
 * network partition: no error, no reset). A key revoked through the first process meanwhile must
 * never be accepted by the second: once its key directory is older than KEY_DIRECTORY_MAX_LAG_MS
 * it answers 503 for every key, and when the database answers again the revoked key gets 401.
 */
import assert from 'node:assert/strict';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { backend } from '../../support/backends.ts';
import { eventually } from '../../support/eventually.ts';
import { ADMIN_TOKEN, API_KEY_SECRET } from '../../support/ingress-harness.ts';
import { startService, type ServiceProcess } from '../../support/service-process.ts';
import { adminCall, scratchDatabase, sleep } from './scaled-out.ts';

const postgres = await backend('postgres');
const MAX_LAG_MS = 3000;

/** A TCP proxy to `target` whose traffic can be held (both ways) and let go again. */
const holdingProxy = async (target: { host: string; port: number }) => {
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  let held = false;
  const join = ({ client, upstream }: { client: Socket; upstream: Socket }) => {
    client.pipe(upstream);
    upstream.pipe(client);
  };
  const server: Server = createServer((client) => {
    const upstream = connect(target.port, target.host);
    const pair = { client, upstream };
    pairs.add(pair);
    const drop = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    if (!held) join(pair);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    hold() {
      held = true;
      for (const { client, upstream } of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    release() {
      held = false;
      for (const pair of pairs) {
        join(pair);
        pair.client.resume();
        pair.upstream.resume();
      }
    },
    async close() {
      for (const { client, upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
      await new Promise((resolve) => server.close(resolve));
    },
  };
};

/** One GET /api/calls with `key`, giving up after a second (a hung process counts as no answer). */
const probe = async (base: string, key: string): Promise<{ status: number; detail?: string }> => {
  try {
    const res = await fetch(`${base}/api/calls`, { headers: { 'x-api-key': key }, signal: AbortSignal.timeout(1000) });
    const body = (await res.json().catch(() => ({}))) as { detail?: string };
    return { status: res.status, detail: body.detail };
  } catch {
    return { status: 0 };
  }
};

describe(
  'keys fail closed when the key directory cannot be kept current',
  { skip: postgres.skip, timeout: 4 * 60_000 },
  () => {
    let database: Awaited<ReturnType<typeof scratchDatabase>>;
    let proxy: Awaited<ReturnType<typeof holdingProxy>>;
    let first: ServiceProcess;
    let second: ServiceProcess;

    before(async () => {
      database = await scratchDatabase(postgres.url!);
      const url = new URL(database.url);
      proxy = await holdingProxy({ host: url.hostname, port: Number(url.port || 5432) });
      const viaProxy = new URL(database.url);
      viaProxy.port = String(proxy.port);
      const env = { ADMIN_TOKEN, API_KEY_SECRET, KEY_DIRECTORY_MAX_LAG_MS: String(MAX_LAG_MS), TOPIC_PARTITIONS: '3' };
      first = await startService({ ...env, DATABASE_URL: database.url }, 'services/ingress/main.ts');
      second = await startService({ ...env, DATABASE_URL: viaProxy.toString() }, 'services/ingress/main.ts');
    });
    after(async () => {
      proxy?.release();
      await second?.stop();
      await first?.stop();
      await proxy?.close();
      await database?.drop();
    });

    test('a key revoked while the other process cannot read is answered 503 there, never 200, then 401', async () => {
      const team = await adminCall(first.url, 'POST', '/api/admin/teams', {
        name: 'Fail closed',
        ownerEmail: 'owner@closed.test',
        capacityHours: 10,
      });
      const issued = await adminCall(first.url, 'POST', `/api/admin/teams/${String(team.teamId)}/keys`, {
        label: 'to revoke',
      });
      const key = String(issued.key);
      await eventually(async () => assert.equal((await probe(second.url, key)).status, 200), {
        timeoutMs: 15_000,
        intervalMs: 200,
      });

      proxy.hold();
      const heldAt = Date.now();
      const revoked = await fetch(`${first.url}/api/admin/teams/${String(team.teamId)}/keys/${String(issued.keyId)}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      });
      assert.ok(revoked.ok, `revoke: ${revoked.status}`);
      assert.equal((await probe(first.url, key)).status, 401, 'the process that revoked it refuses it at once');

      const answers: Array<{ at: number; status: number; detail?: string }> = [];
      let refusedAt: number | undefined;
      while (Date.now() - heldAt < MAX_LAG_MS + 6000) {
        const answer = await probe(second.url, key);
        answers.push({ at: Date.now() - heldAt, ...answer });
        if (answer.status === 503 && /API keys cannot be verified/.test(answer.detail ?? ''))
          refusedAt ??= Date.now() - heldAt;
        await sleep(250);
      }
      const byStatus = answers.reduce<Record<number, number>>(
        (n, a) => ({ ...n, [a.status]: (n[a.status] ?? 0) + 1 }),
        {},
      );
      console.log(
        `# while held: ${answers.length} probes of the revoked key on the other process: ${JSON.stringify(byStatus)}; answered 503 "cannot be verified" from ${refusedAt} ms (KEY_DIRECTORY_MAX_LAG_MS ${MAX_LAG_MS})`,
      );
      assert.deepEqual(
        answers.filter((a) => a.status >= 200 && a.status < 300),
        [],
        'the revoked key was accepted',
      );
      assert.ok(
        refusedAt !== undefined && refusedAt <= MAX_LAG_MS + 2000,
        `no fail-closed 503 in time: ${JSON.stringify(answers.slice(-3))}`,
      );

      proxy.release();
      const releasedAt = Date.now();
      await eventually(async () => assert.equal((await probe(second.url, key)).status, 401), {
        timeoutMs: 30_000,
        intervalMs: 250,
      });
      console.log(`# released: the other process answers 401 for the revoked key ${Date.now() - releasedAt} ms later`);
    });
  },
);
