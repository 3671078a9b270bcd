import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createPostgresEventLog } from '../../../shared/adapters/event-log/sql-event-log.ts';
import { createPostgresEventStore } from '../../../shared/adapters/event-store/postgres-event-store.ts';
import { createPostgresReadModels } from '../../../shared/adapters/read-models/postgres-read-models.ts';
import { backend } from '../../support/backends.ts';
import { freshSchema } from '../../support/postgres.ts';
import { upcastingSuite } from './upcasting-suite.ts';

const postgres = await backend('postgres');

upcastingSuite(
  'PostgreSQL',
  async (rows) => {
    const connectionString = postgres.url!;
    const schema = freshSchema(connectionString);
    // The tables as the service creates them, then the rows with SQL, then the service opens it again.
    await (await createPostgresEventStore({ connectionString, schema: schema.schema })).close();
    const client = new pg.Client({ connectionString });
    await client.connect();
    try {
      for (const row of rows)
        await client.query(
          `INSERT INTO ${schema.schema}.events (stream_id, revision, id, type, data, metadata) VALUES ($1, $2, $3, $4, $5, $6)`,
          [row.streamId, row.revision, randomUUID(), row.type, JSON.stringify(row.data), JSON.stringify(row.metadata)],
        );
    } finally {
      await client.end();
    }
    const eventStore = await createPostgresEventStore({ connectionString, schema: schema.schema, pollMs: 50 });
    const readModels = await createPostgresReadModels({ connectionString, schema: schema.schema });
    const eventLog = await createPostgresEventLog({ connectionString, schema: schema.schema });
    return {
      eventStore,
      eventLog,
      readModels,
      async cleanup() {
        await eventLog.close();
        await readModels.close();
        await eventStore.close();
        await schema.drop();
      },
    };
  },
  { skip: postgres.skip },
);
