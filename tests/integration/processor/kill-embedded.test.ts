import Database from 'better-sqlite3';
import { join } from 'node:path';
import { tempDir } from '../../support/temp-dir.ts';
import { killSuite } from './kill-suite.ts';

killSuite('embedded (SQLite)', async () => {
  const dir = tempDir();
  return {
    env: { DATA_DIR: dir.path },
    async callEvents() {
      // A read-only connection beside the running service (WAL allows it); only committed data is seen.
      const db = new Database(join(dir.path, 'calls.sqlite'), { readonly: true, fileMustExist: true });
      try {
        return db.prepare<[], { streamId: string; type: string }>("SELECT stream_id AS streamId, type FROM events WHERE stream_id LIKE 'call-%' ORDER BY stream_id, revision").all();
      } finally {
        db.close();
      }
    },
    async cleanup() {
      dir.remove();
    },
  };
});
