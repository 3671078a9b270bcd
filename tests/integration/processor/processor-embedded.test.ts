import { createSqliteEventLog } from '../../../shared/adapters/event-log/sql-event-log.ts';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import { tempDir } from '../../support/temp-dir.ts';
import { processorSuite } from './processor-suite.ts';

processorSuite('embedded (SQLite)', async () => {
  const dir = tempDir();
  const opened = openSqlite(dir.path);
  const eventStore = createSqliteEventStore(opened.db);
  const eventLog = createSqliteEventLog(opened.db);
  return {
    eventStore,
    eventLog,
    async cleanup() {
      await eventLog.close();
      await eventStore.close();
      opened.close();
      dir.remove();
    },
  };
});
