import { createSqliteEventStore } from '../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
import { tempDir } from '../support/temp-dir.ts';
import { eventStoreConformance } from './event-store.ts';

eventStoreConformance('sqlite', {
  async fresh(options) {
    const dir = tempDir();
    const opened = openSqlite(dir.path);
    const store = createSqliteEventStore(opened.db, { beforeCommit: options?.beforeCommit });
    return {
      store,
      async cleanup() {
        await store.close();
        opened.close();
        dir.remove();
      },
    };
  },
});
