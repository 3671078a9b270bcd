import type { CallHistoryRow } from '../../shared/domain/call/call-history.ts';
import type { ReadModels } from '../../shared/ports/read-models.ts';
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
    const reopened: ReadModels[] = [];
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
      async foldedByRevision1(fold) {
        const db = opened.db;
        const { version: v } = db
          .prepare<[], { version: number }>(
            "SELECT version FROM read_model_versions WHERE model = 'call_history' AND state = 'active'",
          )
          .get()!;
        const rows = db
          .prepare<
            [],
            { seq: number; team_id: string; created_at: number; title_folded: string; rep_folded: string; doc: string }
          >(`SELECT seq, team_id, created_at, title_folded, rep_folded, doc FROM call_history_v${v}`)
          .all();
        db.transaction(() => {
          for (const r of rows) {
            const doc = JSON.parse(r.doc) as CallHistoryRow;
            const [title, rep] = [fold.text(doc.title), fold.text(doc.repName ?? '')];
            db.prepare(
              `INSERT INTO call_search_v${v} (call_search_v${v}, rowid, title_folded, rep_folded) VALUES ('delete', ?, ?, ?)`,
            ).run(r.seq, r.title_folded, r.rep_folded);
            db.prepare(`INSERT INTO call_search_v${v} (rowid, title_folded, rep_folded) VALUES (?, ?, ?)`).run(
              r.seq,
              title,
              rep,
            );
            db.prepare(`UPDATE call_history_v${v} SET title_folded = ?, rep_folded = ? WHERE seq = ?`).run(
              title,
              rep,
              r.seq,
            );
            db.prepare(`DELETE FROM call_tags_v${v} WHERE team_id = ? AND call_id = ?`).run(r.team_id, doc.callId);
            for (const tag of new Set(doc.tags.map(fold.tag)))
              db.prepare(
                `INSERT INTO call_tags_v${v} (team_id, tag, created_at, call_id, seq) VALUES (?, ?, ?, ?, ?)`,
              ).run(r.team_id, tag, r.created_at, doc.callId, r.seq);
          }
          db.prepare('DELETE FROM call_history_folds WHERE version = ?').run(v);
        })();
      },
      async reopen() {
        const again = createSqliteReadModels(opened.db, { rebuildLimits: options?.rebuildLimits, ...searchOptions });
        reopened.push(again);
        return again;
      },
      async cleanup() {
        for (const again of reopened) await again.close();
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
