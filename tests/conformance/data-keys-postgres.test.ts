import { createPostgresDataKeys } from '../../shared/adapters/data-keys/postgres-data-keys.ts';
import { backend } from '../support/backends.ts';
import { freshSchema } from '../support/postgres.ts';
import { dataKeysConformance, type DataKeysHandle } from './data-keys.ts';

const postgres = await backend('postgres');
const schemas = new Map<DataKeysHandle, string>();

dataKeysConformance(
  'PostgreSQL',
  {
    async fresh(kek) {
      const schema = freshSchema(postgres.url!);
      const keys = await createPostgresDataKeys({ connectionString: postgres.url!, schema: schema.schema }, kek);
      const handle: DataKeysHandle = {
        keys,
        async cleanup() {
          await keys.close();
          await schema.drop();
        },
      };
      schemas.set(handle, schema.schema);
      return handle;
    },
    async sameStorage(handle, kek) {
      const keys = await createPostgresDataKeys({ connectionString: postgres.url!, schema: schemas.get(handle)! }, kek);
      return { keys, cleanup: () => keys.close() };
    },
  },
  { skip: postgres.skip },
);
