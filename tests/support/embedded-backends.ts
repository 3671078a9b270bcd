/**
 * The embedded backends of one SQLite database (event store, table log, read models), as the
 * suites that run on every backend take them, with the cleanup that closes them and removes the
 * directory. `dir` defaults to a fresh temporary one; give one to open a database already written.
 */
import { createSqliteEventLog } from '../../shared/adapters/event-log/sql-event-log.ts';
import { createSqliteEventStore } from '../../shared/adapters/event-store/sqlite-event-store.ts';
import { createSqliteReadModels } from '../../shared/adapters/read-models/sqlite-read-models.ts';
import { openSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
import type { TestContext } from 'node:test';
import { tempDir } from './temp-dir.ts';

export const openEmbeddedBackends = (dir: { path: string; remove(): void } = tempDir()) => {
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
};

/** An embedded event store alone, for one test: closed, and its directory removed, after it. */
export const openEmbeddedStore = (t: TestContext) => {
  const dir = tempDir();
  const opened = openSqlite(dir.path);
  const store = createSqliteEventStore(opened.db);
  t.after(async () => {
    await store.close();
    opened.close();
    dir.remove();
  });
  return store;
};
