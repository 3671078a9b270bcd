import pg from 'pg';
import { createPostgresEventStore } from '../../shared/adapters/event-store/postgres-event-store.ts';
import { createPostgresReadModels } from '../../shared/adapters/read-models/postgres-read-models.ts';
import { backend } from '../support/backends.ts';
import { freshSchema } from '../support/postgres.ts';
import { readModelsConformance } from './read-models.ts';

const postgres = await backend('postgres');

readModelsConformance(
  'postgres',
  {
    async fresh(options) {
      const connectionString = postgres.url!;
      const fresh = freshSchema(connectionString);
      const store = await createPostgresEventStore({ connectionString, schema: fresh.schema, pollMs: 50, max: 2 });
      const models = await createPostgresReadModels({
        connectionString,
        schema: fresh.schema,
        max: 2,
        rebuildLimits: options?.rebuildLimits,
      });
      return {
        models,
        store,
        async tables() {
          const client = new pg.Client({ connectionString });
          await client.connect();
          try {
            const { rows } = await client.query<{ tablename: string }>(
              'SELECT tablename FROM pg_tables WHERE schemaname = $1',
              [fresh.schema],
            );
            return rows.map((r) => r.tablename);
          } finally {
            await client.end();
          }
        },
        async cleanup() {
          await models.close();
          await store.close();
          await fresh.drop();
        },
      };
    },
  },
  { skip: postgres.skip },
);
