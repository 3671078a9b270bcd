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
      const store = await createPostgresEventStore({ connectionString, schema: fresh.schema, pollMs: 50, beforeCommit: options?.beforeCommit });
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
      const store = await createPostgresEventStore({ connectionString: postgres.url!, schema: schemas.get(handle)!, pollMs: 50 });
      return { store, cleanup: () => store.close() };
    },
  },
  { skip: postgres.skip },
);
