/**
 * Fault: the PostgreSQL server of the connections the service holds vanishes without a reset (a
 * failover to another address, a partition): those connections go silent, while new ones reach a
 * server. A TCP proxy in the test stops forwarding, both ways and without closing anything, on
 * every connection open at that moment; connections opened later are forwarded.
 *
 * Without a deadline on statements, one sent on a silent connection waited forever: the event
 * store's group commit stayed busy with it and every later append of the process queued behind it,
 * and a table-log publish (which the ingest's 201 waits for) never ended. Each must now end within
 * the statement deadline (here 1 s, the production default 30 s) with a retriable error that says
 * the write may have happened where it may have (or with success, on a new connection), the
 * silent connection must be destroyed rather than handed to the next caller, and the next write
 * must succeed.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { createPostgresEventLog } from '../../../shared/adapters/event-log/sql-event-log.ts';
import { createPostgresEventStore } from '../../../shared/adapters/event-store/postgres-event-store.ts';
import { isBackendUnavailable } from '../../../shared/ports/unavailable.ts';
import { backend } from '../../support/backends.ts';
import { eventually } from '../../support/eventually.ts';
import { freshSchema } from '../../support/postgres.ts';

const postgres = await backend('postgres');

/** The statement deadline the adapters are given here. */
const QUERY_TIMEOUT_MS = 1000;
/** How long a write issued on a silent connection may take to end: the deadline and room to spare. */
const BOUND_MS = QUERY_TIMEOUT_MS + 4000;

interface Link {
  /** Stops forwarding, silently: nothing is closed, nothing is answered. */
  silent: boolean;
  /** The service's end of the connection closed (the adapter destroyed it). */
  closedByClient: boolean;
  client: net.Socket;
  server: net.Socket;
}

/** A TCP proxy to the PostgreSQL server; `silence()` makes every connection open at that moment go silent. */
const startProxy = async (target: URL) => {
  const links = new Set<Link>();
  const proxy = net.createServer((client) => {
    const server = net.connect(Number(target.port || 5432), target.hostname);
    const link: Link = { silent: false, closedByClient: false, client, server };
    links.add(link);
    client.on('data', (chunk) => void (link.silent || server.write(chunk)));
    server.on('data', (chunk) => void (link.silent || client.write(chunk)));
    client.on('error', () => undefined);
    server.on('error', () => undefined);
    client.on('close', () => {
      link.closedByClient = true;
      server.destroy();
    });
    server.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.host = `127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;
  return {
    url: url.toString(),
    /** Silences the connections open now; returns them. */
    silence(): Link[] {
      const silenced = [...links].filter((link) => !link.client.destroyed);
      for (const link of silenced) link.silent = true;
      return silenced;
    },
    /** Ends every connection (a write still waiting then fails at once) and the proxy. */
    async close() {
      for (const link of links) link.client.destroy();
      await new Promise((resolve) => proxy.close(resolve));
    },
  };
};

/** How `work` ended, or 'pending' when it had not after `ms`. */
const settledWithin = async <T>(work: Promise<T>, ms: number) => {
  let timer: NodeJS.Timeout | undefined;
  const pending = new Promise<{ pending: true }>(
    (resolve) => (timer = setTimeout(() => resolve({ pending: true }), ms)),
  );
  const started = Date.now();
  const outcome = await Promise.race([
    work.then(
      (value) => ({ value }),
      (error: unknown) => ({ error }),
    ),
    pending,
  ]);
  clearTimeout(timer);
  return { ...outcome, ms: Date.now() - started };
};

/** One line for a diagnostic or an assertion's message. */
const describeOutcome = (outcome: { ms: number; value?: unknown; error?: unknown; pending?: true }): string =>
  `${'pending' in outcome ? 'pending' : 'error' in outcome ? `failed: ${String(outcome.error)}` : 'succeeded'} after ${outcome.ms} ms`;

describe('PostgreSQL connections whose server went silent', { skip: postgres.skip }, () => {
  const schema = postgres.url ? freshSchema(postgres.url) : undefined;
  let proxy: Awaited<ReturnType<typeof startProxy>>;
  before(async () => {
    proxy = await startProxy(new URL(postgres.url!));
  });
  after(async () => {
    await proxy?.close();
    await schema?.drop();
  });

  test(
    'an append sent on a silent connection ends within the deadline, unavailable and of unknown outcome; the connection is destroyed and the next append succeeds',
    { timeout: 30_000 },
    async (t) => {
      const store = await createPostgresEventStore({
        connectionString: proxy.url,
        schema: schema!.schema,
        queryTimeoutMs: QUERY_TIMEOUT_MS,
      });
      try {
        const stream = `thing-${randomUUID()}`;
        await store.append(stream, [{ type: 'Noted', data: { n: 0 } }]);
        const silenced = proxy.silence();
        assert.ok(silenced.length > 0, 'the store holds a connection to silence');

        const second = await settledWithin(store.append(stream, [{ type: 'Noted', data: { n: 1 } }]), BOUND_MS);
        t.diagnostic(`append on a silent connection: ${describeOutcome(second)} (${silenced.length} silenced)`);
        assert.ok(!('pending' in second), `the append had not ended after ${BOUND_MS} ms`);
        if ('error' in second) {
          assert.ok(isBackendUnavailable(second.error), `unavailable, not ${String(second.error)}`);
          assert.equal(second.error.outcomeUnknown, true, 'the statement was sent: it may have committed');
        }
        await eventually(
          () =>
            assert.ok(
              silenced.some((link) => link.closedByClient),
              'a silent connection destroyed',
            ),
          {
            timeoutMs: 2000,
          },
        );

        const third = await settledWithin(store.append(stream, [{ type: 'Noted', data: { n: 2 } }]), BOUND_MS);
        assert.ok('value' in third, `the next append succeeds: ${describeOutcome(third)}`);
        // Failed, the second append never reached the server: the proxy dropped it.
        assert.deepEqual(
          (await store.readStream(stream)).map((event) => (event.data as { n: number }).n),
          'error' in second ? [0, 2] : [0, 1, 2],
        );
      } finally {
        await proxy.close().catch(() => undefined);
        proxy = await startProxy(new URL(postgres.url!));
        await store.close();
      }
    },
  );

  test(
    'a table-log publish sent on a silent connection ends within the deadline, unavailable; the next publish succeeds',
    { timeout: 30_000 },
    async (t) => {
      const log = await createPostgresEventLog({
        connectionString: proxy.url,
        schema: schema!.schema,
        queryTimeoutMs: QUERY_TIMEOUT_MS,
      });
      try {
        const topic = `silent-${randomUUID().slice(0, 8)}`;
        await log.ensureTopics([{ name: topic, partitions: 1 }]);
        await log.publish(topic, [{ key: 'k', value: 'v0' }]);
        const silenced = proxy.silence();
        assert.ok(silenced.length > 0, 'the log holds a connection to silence');

        const second = await settledWithin(log.publish(topic, [{ key: 'k', value: 'v1' }]), BOUND_MS);
        t.diagnostic(`publish on a silent connection: ${describeOutcome(second)} (${silenced.length} silenced)`);
        assert.ok(!('pending' in second), `the publish had not ended after ${BOUND_MS} ms`);
        if ('error' in second)
          assert.ok(isBackendUnavailable(second.error), `unavailable, not ${String(second.error)}`);
        // A ROLLBACK sent after the statement would have waited behind it for a deadline of its own.
        assert.ok(second.ms < 2 * QUERY_TIMEOUT_MS, `ended at its deadline, not twice it (${second.ms} ms)`);
        await eventually(
          () =>
            assert.ok(
              silenced.some((link) => link.closedByClient),
              'a silent connection destroyed',
            ),
          {
            timeoutMs: 2000,
          },
        );

        const third = await settledWithin(log.publish(topic, [{ key: 'k', value: 'v2' }]), BOUND_MS);
        assert.ok('value' in third, `the next publish succeeds: ${describeOutcome(third)}`);
      } finally {
        await proxy.close().catch(() => undefined);
        proxy = await startProxy(new URL(postgres.url!));
        await log.close();
      }
    },
  );
});
