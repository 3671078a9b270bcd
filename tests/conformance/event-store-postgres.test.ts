import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { createPostgresEventStore } from '../../shared/adapters/event-store/postgres-event-store.ts';
import { backend } from '../support/backends.ts';
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
