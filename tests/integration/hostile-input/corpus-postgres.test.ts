import { createPostgresEventLog } from '../../../shared/adapters/event-log/sql-event-log.ts';
import { createPostgresEventStore } from '../../../shared/adapters/event-store/postgres-event-store.ts';
import { createPostgresReadModels } from '../../../shared/adapters/read-models/postgres-read-models.ts';
import { backend } from '../../support/backends.ts';
import { freshSchema } from '../../support/postgres.ts';
import { corpusSuite } from './corpus-suite.ts';

const postgres = await backend('postgres');

// DATABASE_URL without Kafka: the event log is the PostgreSQL table log.
corpusSuite(
  'PostgreSQL table log',
  async () => {
    const schema = freshSchema(postgres.url!);
    const eventStore = await createPostgresEventStore({
      connectionString: postgres.url!,
      schema: schema.schema,
      pollMs: 50,
    });
    const eventLog = await createPostgresEventLog({ connectionString: postgres.url!, schema: schema.schema });
    const readModels = await createPostgresReadModels({ connectionString: postgres.url!, schema: schema.schema });
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
