import { createSqliteReadModels } from '../../shared/adapters/read-models/sqlite-read-models.ts';
import { openSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
import { tempDir } from '../support/temp-dir.ts';
import { webhookStoreConformance } from './webhook-store.ts';

void webhookStoreConformance('sqlite', {
  async fresh() {
    const dir = tempDir();
    const opened = openSqlite(dir.path);
    const models = createSqliteReadModels(opened.db);
    return {
      store: models.webhooks,
      async cleanup() {
        await models.close();
        opened.close();
        dir.remove();
      },
    };
  },
});
