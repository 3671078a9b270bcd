/**
 * The ingress harness on a fresh embedded database (SQLite event store, table log and read
 * models), for tests of the HTTP surface that need no other backend.
 */
import { createSqliteEventLog } from '../../shared/adapters/event-log/sql-event-log.ts';
import { createSqliteEventStore } from '../../shared/adapters/event-store/sqlite-event-store.ts';
import { createSqliteReadModels } from '../../shared/adapters/read-models/sqlite-read-models.ts';
import { openSqlite, type OpenedSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
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
  /** The embedded database under them. */
  sqlite: OpenedSqlite;
  /** Starts listening on a free loopback port (for tests that need a real socket); returns it. */
  listen(): Promise<number>;
  close(): Promise<void>;
}

/** The real ports, and what the ingress is given instead of any of them (a port made to fail on demand). */
export type PortWrapper = (ports: {
  eventStore: EventStore;
  eventLog: EventLog;
  readModels: ReadModels;
}) => Partial<{ eventStore: EventStore; eventLog: EventLog; readModels: ReadModels }>;

/**
 * `target` with some members replaced: for a port that fails on demand while the rest of it stays
 * the real adapter.
 */
export const overriding = <T extends object>(target: T, overrides: Partial<Record<keyof T, unknown>>): T =>
  new Proxy(target, {
    get(object, property, receiver) {
      if (property in overrides) return overrides[property as keyof T];
      const value = Reflect.get(object, property, receiver) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(object) : value;
    },
  });

export const openEmbeddedIngress = async (
  wrap: PortWrapper = () => ({}),
  options: { now?: () => Date } = {},
): Promise<EmbeddedIngress> => {
  const dir = tempDir();
  const opened = openSqlite(dir.path);
  const eventStore = createSqliteEventStore(opened.db);
  const eventLog = createSqliteEventLog(opened.db);
  await eventLog.ensureTopics(ALL_TOPICS.map((name) => ({ name, partitions: 3 })));
  const readModels = createSqliteReadModels(opened.db);
  const wrapped = wrap({ eventStore, eventLog, readModels });
  // As `npm start` runs: the reservation's commit is made durable by the publish's sync, unless a
  // test replaced the log or the store.
  const publishCoversStore = wrapped.eventLog === undefined && wrapped.eventStore === undefined;
  const h = await createHarness({ eventStore, eventLog, readModels, ...wrapped, publishCoversStore, now: options.now });
  return {
    h,
    eventStore,
    eventLog,
    readModels,
    sqlite: opened,
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
