/**
 * The ingress harness on a fresh embedded database (SQLite event store, table log and read
 * models), for tests of the HTTP surface that need no other backend.
 */
import { createSqliteEventLog } from '../../shared/adapters/event-log/sql-event-log.ts';
import { createSqliteEventStore } from '../../shared/adapters/event-store/sqlite-event-store.ts';
import { createSqliteReadModels } from '../../shared/adapters/read-models/sqlite-read-models.ts';
import { openSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
import type { EventLog } from '../../shared/ports/event-log.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import type { ReadModels } from '../../shared/ports/read-models.ts';
import { ALL_TOPICS } from '../../shared/topics.ts';
import { createHarness, type Harness } from './ingress-harness.ts';
import { tempDir } from './temp-dir.ts';

export interface EmbeddedIngress {
  h: Harness;
  eventStore: EventStore;
  eventLog: EventLog;
  readModels: ReadModels;
  /** Starts listening on a free loopback port (for tests that need a real socket); returns it. */
  listen(): Promise<number>;
  close(): Promise<void>;
}

export const openEmbeddedIngress = async (): Promise<EmbeddedIngress> => {
  const dir = tempDir();
  const opened = openSqlite(dir.path);
  const eventStore = createSqliteEventStore(opened.db);
  const eventLog = createSqliteEventLog(opened.db);
  await eventLog.ensureTopics(ALL_TOPICS.map((name) => ({ name, partitions: 3 })));
  const readModels = createSqliteReadModels(opened.db);
  const h = await createHarness({ eventStore, eventLog, readModels });
  return {
    h,
    eventStore,
    eventLog,
    readModels,
    async listen() {
      await h.ingress.app.listen({ port: 0, host: '127.0.0.1' });
      return (h.ingress.app.server.address() as { port: number }).port;
    },
    async close() {
      await h.close();
      await readModels.close();
      await eventLog.close();
      await eventStore.close();
      opened.close();
      dir.remove();
    },
  };
};
