import { createPostgresReadModels } from '../../shared/adapters/read-models/postgres-read-models.ts';
import { backend } from '../support/backends.ts';
import { freshSchema } from '../support/postgres.ts';
import { webhookStoreConformance } from './webhook-store.ts';

const postgres = await backend('postgres');

void webhookStoreConformance(
  'postgres',
  {
    async fresh() {
      const fresh = freshSchema(postgres.url!);
      const models = await createPostgresReadModels({ connectionString: postgres.url!, schema: fresh.schema, max: 2 });
      return {
        store: models.webhooks,
        async cleanup() {
          await models.close();
          await fresh.drop();
        },
      };
    },
  },
  { skip: postgres.skip },
);
