import { createSqliteEventLog } from '../../../shared/adapters/event-log/sql-event-log.ts';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { createSqliteReadModels } from '../../../shared/adapters/read-models/sqlite-read-models.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import { tempDir } from '../../support/temp-dir.ts';
import { operatorSuite } from './operator-suite.ts';

operatorSuite('embedded (SQLite)', async () => {
  const dir = tempDir();
  const opened = openSqlite(dir.path);
  const eventStore = createSqliteEventStore(opened.db);
  const eventLog = createSqliteEventLog(opened.db);
  const readModels = createSqliteReadModels(opened.db);
  return {
    eventStore,
    eventLog,
    readModels,
    async cleanup() {
      await eventLog.close();
      await readModels.close();
      await eventStore.close();
      opened.close();
      dir.remove();
    },
  };
});
