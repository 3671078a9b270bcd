import Database from 'better-sqlite3';
import { join } from 'node:path';
import { eventually } from '../../support/eventually.ts';
import { tempDir } from '../../support/temp-dir.ts';
import { killSuite } from './kill-suite.ts';

killSuite('embedded (SQLite)', async () => {
  const dir = tempDir();
  return {
    env: { DATA_DIR: dir.path },
    async callEvents() {
      // A reading connection beside the service (WAL allows it; it only ever sees committed data).
      // Not `readonly`: right after a SIGKILL, a read-only connection cannot recover the WAL index.
      return eventually(() => {
        const db = new Database(join(dir.path, 'calls.sqlite'), { fileMustExist: true, timeout: 5000 });
        try {
          return db
            .prepare<[], { streamId: string; type: string }>(
              "SELECT stream_id AS streamId, type FROM events WHERE stream_id LIKE 'call-%' ORDER BY stream_id, revision",
            )
            .all();
        } finally {
          db.close();
        }
      });
    },
    async cleanup() {
      dir.remove();
    },
  };
});
