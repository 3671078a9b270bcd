import { createSqliteEventLog } from '../../shared/adapters/event-log/sql-event-log.ts';
import { createSqliteEventStore } from '../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
import { ALL_TOPICS } from '../../shared/topics.ts';
import { tempDir } from '../support/temp-dir.ts';
import { pushApiContract } from './push-api.ts';

pushApiContract('embedded (SQLite event store + SQLite table log)', async () => {
  const dir = tempDir();
  const opened = openSqlite(dir.path);
  const eventStore = createSqliteEventStore(opened.db);
  const eventLog = createSqliteEventLog(opened.db);
  await eventLog.ensureTopics(ALL_TOPICS.map((name) => ({ name, partitions: 3 })));
  const spare = tempDir();
  return {
    eventStore,
    eventLog,
    async brokenEventLog() {
      // A log whose database is gone: every publish fails.
      const other = openSqlite(spare.path);
      const log = createSqliteEventLog(other.db);
      await log.ensureTopics(ALL_TOPICS.map((name) => ({ name, partitions: 3 })));
      other.close();
      return log;
    },
    async cleanup() {
      await eventLog.close();
      await eventStore.close();
      opened.close();
      dir.remove();
      spare.remove();
    },
  };
});
