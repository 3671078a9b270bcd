/**
 * The LISTEN session re-establishes itself after its connection is terminated on the server, says
 * so once when lost and once when back, and receives NOTIFY again afterwards.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import pg from 'pg';
import { createPostgresListener, type ListenerState } from '../../../shared/adapters/postgres/postgres-listener.ts';
import { createPostgresClient } from '../../../shared/adapters/postgres/postgres-pool.ts';
import { backend } from '../../support/backends.ts';
import { eventually } from '../../support/eventually.ts';

const postgres = await backend('postgres');

const withApplicationName = (url: string, name: string) =>
  `${url}${url.includes('?') ? '&' : '?'}application_name=${name}`;

describe('PostgreSQL LISTEN session', { skip: postgres.skip }, () => {
  test(
    'after pg_terminate_backend it reconnects, LISTENs again, and reports lost then restored once each',
    { timeout: 30_000 },
    async (t) => {
      const applicationName = `listener-${randomUUID().slice(0, 8)}`;
      const channel = `fault_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
      const payloads: (string | undefined)[] = [];
      const changes: ListenerState[] = [];
      const listener = createPostgresListener({
        connect: () => createPostgresClient({ connectionString: withApplicationName(postgres.url!, applicationName) }),
        channel,
        onNotification: (payload) => payloads.push(payload),
        onStateChange: (change) => changes.push(change),
        minDelayMs: 20,
        maxDelayMs: 200,
        stableAfterMs: 500,
      });
      const admin = new pg.Client({ connectionString: postgres.url! });
      await admin.connect();
      try {
        listener.start();
        await eventually(() => assert.equal(listener.listening, true), { timeoutMs: 10_000 });
        await admin.query('SELECT pg_notify($1, $2)', [channel, 'before']);
        await eventually(() => assert.ok(payloads.includes('before')));

        for (let round = 1; round <= 2; round++) {
          const { rows } = await admin.query<{ terminated: boolean }>(
            'SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity WHERE application_name = $1',
            [applicationName],
          );
          assert.equal(rows.length, 1, 'exactly the listener session carries the application name');
          await eventually(() => assert.equal(changes.filter((c) => c.state === 'restored').length, round), {
            timeoutMs: 10_000,
          });
          assert.equal(changes.filter((c) => c.state === 'lost').length, round, 'one "lost" per outage');
          await admin.query('SELECT pg_notify($1, $2)', [channel, `after-${round}`]);
          await eventually(() => assert.ok(payloads.includes(`after-${round}`), `NOTIFY after round ${round} arrives`));
        }
        // A connection that flaps is one outage: terminated again before it held for stableAfterMs.
        await eventually(() => assert.equal(listener.listening, true));
        await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
          applicationName,
        ]);
        await eventually(() => assert.equal(listener.listening, true), { timeoutMs: 10_000 });
        await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
          applicationName,
        ]);
        await eventually(() => assert.equal(changes.filter((c) => c.state === 'restored').length, 3), {
          timeoutMs: 10_000,
        });
        assert.equal(
          changes.filter((c) => c.state === 'lost').length,
          3,
          'two drops in quick succession are reported as one outage',
        );
        const restored = changes.filter(
          (c): c is Extract<ListenerState, { state: 'restored' }> => c.state === 'restored',
        );
        t.diagnostic(
          `down for ${restored.map((c) => `${c.downMs} ms`).join(', ')}; wake-ups on reconnection: ${payloads.filter((p) => p === undefined).length}`,
        );
      } finally {
        await listener.stop();
        await admin.end();
      }
      assert.equal(listener.listening, false);
    },
  );
});
