import pg from 'pg';
import type { CallHistoryRow } from '../../shared/domain/call/call-history.ts';
import type { ReadModels } from '../../shared/ports/read-models.ts';
import { createPostgresEventStore } from '../../shared/adapters/event-store/postgres-event-store.ts';
import { createPostgresReadModels } from '../../shared/adapters/read-models/postgres-read-models.ts';
import { backend } from '../support/backends.ts';
import { freshSchema } from '../support/postgres.ts';
import { readModelsConformance } from './read-models.ts';

const postgres = await backend('postgres');

readModelsConformance(
  'postgres',
  {
    async fresh(options) {
      const connectionString = postgres.url!;
      const fresh = freshSchema(connectionString);
      const store = await createPostgresEventStore({ connectionString, schema: fresh.schema, pollMs: 50, max: 2 });
      const open = () =>
        createPostgresReadModels({
          connectionString,
          schema: fresh.schema,
          max: 2,
          rebuildLimits: options?.rebuildLimits,
        });
      const models = await open();
      const reopened: ReadModels[] = [];
      const inSchema = async <T>(work: (client: pg.Client) => Promise<T>): Promise<T> => {
        const client = new pg.Client({ connectionString });
        await client.connect();
        try {
          await client.query(`SET search_path TO ${fresh.schema}`);
          return await work(client);
        } finally {
          await client.end();
        }
      };
      return {
        models,
        store,
        async tables() {
          const client = new pg.Client({ connectionString });
          await client.connect();
          try {
            const { rows } = await client.query<{ tablename: string }>(
              'SELECT tablename FROM pg_tables WHERE schemaname = $1',
              [fresh.schema],
            );
            return rows.map((r) => r.tablename);
          } finally {
            await client.end();
          }
        },
        async foldedByRevision1(fold) {
          await inSchema(async (client) => {
            const { rows: active } = await client.query<{ version: number }>(
              "SELECT version FROM read_model_versions WHERE model = 'call_history' AND state = 'active'",
            );
            const v = active[0]!.version;
            const { rows } = await client.query<{ team_id: string; doc: CallHistoryRow }>(
              `SELECT team_id, doc FROM call_history_v${v}`,
            );
            await client.query('BEGIN');
            for (const { team_id: teamId, doc } of rows) {
              await client.query(
                `UPDATE call_history_v${v} SET title_folded = $1, rep_folded = $2 WHERE call_id = $3`,
                [fold.text(doc.title), fold.text(doc.repName ?? ''), doc.callId],
              );
              await client.query(`DELETE FROM call_tags_v${v} WHERE team_id = $1 AND call_id = $2`, [
                teamId,
                doc.callId,
              ]);
              for (const tag of new Set(doc.tags.map(fold.tag)))
                await client.query(`INSERT INTO call_tags_v${v} (team_id, tag, call_id) VALUES ($1, $2, $3)`, [
                  teamId,
                  tag,
                  doc.callId,
                ]);
            }
            await client.query('DELETE FROM call_history_folds WHERE version = $1', [v]);
            await client.query('COMMIT');
          });
        },
        async reopen() {
          const again = await open();
          reopened.push(again);
          return again;
        },
        async cleanup() {
          for (const again of reopened) await again.close();
          await models.close();
          await store.close();
          await fresh.drop();
        },
      };
    },
  },
  { skip: postgres.skip },
);
