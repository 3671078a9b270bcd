import { createSqliteEventStore } from '../../shared/adapters/event-store/sqlite-event-store.ts';
import { createSqliteReadModels } from '../../shared/adapters/read-models/sqlite-read-models.ts';
import { openSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
import { tempDir } from '../support/temp-dir.ts';
import { type ReadModelsFactory, readModelsConformance } from './read-models.ts';

const factory = (searchOptions: { commonTermMatches?: number }): ReadModelsFactory => ({
  async fresh(options) {
    const dir = tempDir();
    const opened = openSqlite(dir.path);
    const store = createSqliteEventStore(opened.db);
    const models = createSqliteReadModels(opened.db, { rebuildLimits: options?.rebuildLimits, ...searchOptions });
    return {
      models,
      store,
      async tables() {
        return opened.db
          .prepare<[], { name: string }>(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
          )
          .all()
          .map((r) => r.name);
      },
      async cleanup() {
        await models.close();
        await store.close();
        opened.close();
        dir.remove();
      },
    };
  },
});

readModelsConformance('sqlite', factory({}));
// Every search term of 3+ characters treated as common: the plans that walk the team's or a tag's rows.
readModelsConformance('sqlite, common-term search plans', factory({ commonTermMatches: 1 }));
