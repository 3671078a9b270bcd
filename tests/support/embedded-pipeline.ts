/**
 * The whole pipeline (ingress, processor, projections) in this process on a fresh embedded
 * database, for tests that follow a call from POST to completed without a server.
 */
import { createSqliteEventLog } from '../../shared/adapters/event-log/sql-event-log.ts';
import { createSqliteEventStore } from '../../shared/adapters/event-store/sqlite-event-store.ts';
import { createSqliteReadModels } from '../../shared/adapters/read-models/sqlite-read-models.ts';
import type { EventLog } from '../../shared/ports/event-log.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import { openSqlite, type OpenedSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
import {
  createPipelineHarness,
  type PipelineHarness,
  type PipelineOptions,
  type StepOverrides,
} from './pipeline-harness.ts';
import { tempDir } from './temp-dir.ts';
import { keyEncryptionKey } from '../../shared/adapters/crypto/aes-gcm.ts';
import { createPersonalData } from '../../shared/adapters/crypto/personal-data.ts';
import { createSqliteDataKeys } from '../../shared/adapters/data-keys/sqlite-data-keys.ts';
import { createSealedEventStore } from '../../shared/adapters/event-store/sealed-event-store.ts';

export interface EmbeddedPipeline {
  h: PipelineHarness;
  /** The store as stored (personal fields sealed when the pipeline has erasure). */
  storedEvents?: EventStore;
  /** The embedded database under it (none on the servers). */
  sqlite?: OpenedSqlite;
  /** The PostgreSQL schema under it (none embedded). */
  postgres?: { connectionString: string; schema: string };
  close(): Promise<void>;
}

/** A test secret for the data keys of a pipeline with erasure. */
export const TEST_KEY_ENCRYPTION_KEY = keyEncryptionKey('test-data-key-secret-0123456789abcdef0123');

export const openEmbeddedPipeline = async (
  overrides: StepOverrides = {},
  options: PipelineOptions & {
    /** What every service is given instead of the event store (one that fails on demand); default as is. */
    wrapEventStore?: (store: EventStore) => EventStore;
    /** What every service is given instead of the event log; default as is. */
    wrapEventLog?: (log: EventLog) => EventLog;
  } = {},
): Promise<EmbeddedPipeline> => {
  const dir = tempDir();
  const opened = openSqlite(dir.path);
  const storedEvents = createSqliteEventStore(opened.db);
  const personalData = options.erasure
    ? createPersonalData(createSqliteDataKeys(opened.db, TEST_KEY_ENCRYPTION_KEY))
    : undefined;
  const unwrapped = personalData ? createSealedEventStore(storedEvents, personalData) : storedEvents;
  const eventStore = options.wrapEventStore?.(unwrapped) ?? unwrapped;
  const eventLog = createSqliteEventLog(opened.db);
  const readModels = createSqliteReadModels(opened.db);
  const servicesLog = options.wrapEventLog?.(eventLog) ?? eventLog;
  const h = await createPipelineHarness(
    { eventStore, eventLog: servicesLog, readModels, personalData, storedEvents },
    overrides,
    {
      ...options,
      sharedDatabase: true,
    },
  );
  return {
    h,
    storedEvents,
    sqlite: opened,
    async close() {
      await h.close();
      await readModels.close();
      await eventLog.close();
      await personalData?.close();
      await eventStore.close();
      opened.close();
      dir.remove();
    },
  };
};
