import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { createPostgresEventStore } from '../../shared/adapters/event-store/postgres-event-store.ts';
import { DataAtFaultError } from '../../shared/ports/data-at-fault.ts';
import { backend } from '../support/backends.ts';
import { eventually } from '../support/eventually.ts';
import { freshSchema } from '../support/postgres.ts';
import { eventStoreConformance } from './event-store.ts';

const postgres = await backend('postgres');
const schemas = new Map<object, string>();

eventStoreConformance(
  'postgres',
  {
    async fresh(options) {
      const connectionString = postgres.url!;
      const fresh = freshSchema(connectionString);
      const store = await createPostgresEventStore({
        connectionString,
        schema: fresh.schema,
        pollMs: 50,
        beforeCommit: options?.beforeCommit,
      });
      const handle = {
        store,
        async cleanup() {
          await store.close();
          await fresh.drop();
        },
      };
      schemas.set(handle, fresh.schema);
      return handle;
    },
    async sameStorage(handle) {
      const store = await createPostgresEventStore({
        connectionString: postgres.url!,
        schema: schemas.get(handle)!,
        pollMs: 50,
      });
      return { store, cleanup: () => store.close() };
    },
  },
  { skip: postgres.skip },
);

test(
  'postgres: a table written before categories existed gets the category column and index at open, filled for its rows',
  { skip: postgres.skip },
  async () => {
    const connectionString = postgres.url!;
    const fresh = freshSchema(connectionString);
    const client = new pg.Client({ connectionString });
    await client.connect();
    try {
      // The events table as an earlier version created it, with rows in it.
      await client.query(`CREATE SCHEMA ${fresh.schema}`);
      await client.query(`CREATE TABLE ${fresh.schema}.events (
      position BIGSERIAL PRIMARY KEY, stream_id TEXT NOT NULL, revision INTEGER NOT NULL, id UUID NOT NULL, type TEXT NOT NULL,
      data JSONB NOT NULL, metadata JSONB NOT NULL, recorded_at TIMESTAMPTZ NOT NULL DEFAULT now(), UNIQUE (stream_id, revision))`);
      await client.query(
        `INSERT INTO ${fresh.schema}.events (stream_id, revision, id, type, data, metadata) VALUES
        ('call-1', 0, gen_random_uuid(), 'CallSubmitted', '{}', '{}'), ('team-1', 0, gen_random_uuid(), 'TeamCreated', '{}', '{}'),
        ('call-1', 1, gen_random_uuid(), 'CallCompleted', '{}', '{}'), ('nodash', 0, gen_random_uuid(), 'Other', '{}', '{}')`,
      );
      // Two processes opening it at once add the column once.
      const [store, second] = await Promise.all([
        createPostgresEventStore({ connectionString, schema: fresh.schema, pollMs: 50 }),
        createPostgresEventStore({ connectionString, schema: fresh.schema, pollMs: 50 }),
      ]);
      try {
        assert.deepEqual(
          (await store.readAll({ categories: ['call'] })).map((e) => [e.streamId, e.type]),
          [
            ['call-1', 'CallSubmitted'],
            ['call-1', 'CallCompleted'],
          ],
        );
        await second.append('team-1', [{ type: 'TeamRenamed', data: {} }], { expectedVersion: 0 });
        assert.deepEqual(
          (await store.readAll({ categories: ['team'] })).map((e) => e.type),
          ['TeamCreated', 'TeamRenamed'],
        );
        const { rows } = await client.query<{ category: string | null }>(
          `SELECT category FROM ${fresh.schema}.events ORDER BY position`,
        );
        assert.deepEqual(
          rows.map((r) => r.category),
          ['call', 'team', 'call', null, 'team'],
        );
        const { rows: indexes } = await client.query(
          `SELECT 1 FROM pg_indexes WHERE schemaname = $1 AND indexname = 'events_category_position'`,
          [fresh.schema],
        );
        assert.equal(indexes.length, 1);
      } finally {
        await Promise.all([store.close(), second.close()]);
      }
    } finally {
      await client.end();
      await fresh.drop();
    }
  },
);

test(
  'postgres: an append wakes the subscriptions of another store on the schema through NOTIFY, and its own store once',
  { skip: postgres.skip },
  async () => {
    const connectionString = postgres.url!;
    const fresh = freshSchema(connectionString);
    // A poll interval no test waits for: only a wake-up can deliver within the test.
    const [writer, other] = [
      await createPostgresEventStore({ connectionString, schema: fresh.schema, pollMs: 600_000 }),
      await createPostgresEventStore({ connectionString, schema: fresh.schema, pollMs: 600_000 }),
    ];
    // Counts the feed reads of each store's pool (the statement a read of the feed runs).
    const feedReads = new Map<unknown, number>();
    // eslint-disable-next-line @typescript-eslint/unbound-method -- put back as it was, below
    const query = pg.Pool.prototype.query;
    pg.Pool.prototype.query = function (this: pg.Pool, ...args: unknown[]) {
      if (typeof args[0] === 'string' && args[0].includes('read_index'))
        feedReads.set(this, (feedReads.get(this) ?? 0) + 1);
      return (query as (...a: unknown[]) => unknown).apply(this, args);
    } as typeof query;
    try {
      const seenHere: string[] = [];
      const seenThere: string[] = [];
      const here = writer.subscribeToAll({
        handler: async (events) => void seenHere.push(...events.map((e) => e.type)),
      });
      const there = other.subscribeToAll({
        handler: async (events) => void seenThere.push(...events.map((e) => e.type)),
      });
      await Promise.all([here.caughtUp(), there.caughtUp()]);
      // Let the LISTEN sessions connect and their first wake-ups pass.
      await new Promise((resolve) => setTimeout(resolve, 300));
      for (let n = 1; n <= 3; n++) {
        const before = [...feedReads.values()];
        await writer.append(`call-${n}`, [{ type: `E${n}`, data: {} }]);
        await eventually(() => assert.deepEqual(seenThere.slice(-1), [`E${n}`]));
        await eventually(() => assert.deepEqual(seenHere.slice(-1), [`E${n}`]));
        // The append's own notification arrives within milliseconds; give it time to cause a read.
        await new Promise((resolve) => setTimeout(resolve, 200));
        assert.deepEqual(
          [...feedReads.values()].map((count, i) => count - (before[i] ?? 0)),
          [1, 1],
          `append ${n}: each store's subscription read the feed once`,
        );
      }
      await Promise.all([here.stop(), there.stop()]);
    } finally {
      pg.Pool.prototype.query = query;
      await Promise.all([writer.close(), other.close()]);
      await fresh.drop();
    }
  },
);

test(
  'postgres: an append whose data the server refuses fails alone; the appends committed in the same batch are written',
  { skip: postgres.skip },
  async () => {
    const connectionString = postgres.url!;
    const fresh = freshSchema(connectionString);
    const store = await createPostgresEventStore({ connectionString, schema: fresh.schema, pollMs: 50 });
    try {
      // Submitted in one turn, so that they share group commits; jsonb refuses U+0000 (22P05).
      const streams = ['call-a', 'call-b', 'team-bad', 'call-c', 'call-d'];
      const outcomes = await Promise.allSettled(
        streams.map((streamId) =>
          store.append(streamId, [
            { type: 'Appended', data: { name: streamId === 'team-bad' ? 'A\u0000B' : streamId } },
          ]),
        ),
      );
      assert.deepEqual(
        outcomes.map((o) => o.status),
        ['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'fulfilled'],
      );
      const refused: unknown = (outcomes[2] as PromiseRejectedResult).reason;
      // The server's own refusal of the data, not an outage to retry (docs/decisions/0025-what-blames-the-data.md).
      assert.ok(refused instanceof DataAtFaultError, String(refused));
      assert.equal(refused.retriable, false);
      assert.equal((refused.cause as { code?: string }).code, '22P05');
      assert.deepEqual((await store.readAll()).map((e) => e.streamId).sort(), ['call-a', 'call-b', 'call-c', 'call-d']);
    } finally {
      await store.close();
      await fresh.drop();
    }
  },
);
