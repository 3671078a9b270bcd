/**
 * The whole pipeline (ingress, processor, projections) in this process on a fresh embedded
 * database, for tests that follow a call from POST to completed without a server.
 */
import { createSqliteEventLog } from '../../shared/adapters/event-log/sql-event-log.ts';
import { createSqliteEventStore } from '../../shared/adapters/event-store/sqlite-event-store.ts';
import { createSqliteReadModels } from '../../shared/adapters/read-models/sqlite-read-models.ts';
import { openSqlite, type OpenedSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
import { createPipelineHarness, type PipelineHarness, type StepOverrides } from './pipeline-harness.ts';
import { tempDir } from './temp-dir.ts';

export interface EmbeddedPipeline {
  h: PipelineHarness;
  /** The embedded database under it (none on the servers). */
  sqlite?: OpenedSqlite;
  close(): Promise<void>;
}

export const openEmbeddedPipeline = async (overrides: StepOverrides = {}): Promise<EmbeddedPipeline> => {
  const dir = tempDir();
  const opened = openSqlite(dir.path);
  const eventStore = createSqliteEventStore(opened.db);
  const eventLog = createSqliteEventLog(opened.db);
  const readModels = createSqliteReadModels(opened.db);
  const h = await createPipelineHarness({ eventStore, eventLog, readModels }, overrides, { sharedDatabase: true });
  return {
    h,
    sqlite: opened,
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
