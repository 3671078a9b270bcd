import { randomUUID } from 'node:crypto';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import { openEmbeddedBackends } from '../../support/embedded-backends.ts';
import { tempDir } from '../../support/temp-dir.ts';
import { upcastingSuite } from './upcasting-suite.ts';

upcastingSuite('embedded (SQLite)', async (rows) => {
  const dir = tempDir();
  // The tables as the service creates them, then the rows with SQL, then the service opens it again.
  const first = openSqlite(dir.path);
  await createSqliteEventStore(first.db).close();
  const insert = first.db.prepare<[string, number, string, string, string, string, number]>(
    'INSERT INTO events (stream_id, revision, id, type, data, metadata, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
  );
  for (const row of rows)
    insert.run(
      row.streamId,
      row.revision,
      randomUUID(),
      row.type,
      JSON.stringify(row.data),
      JSON.stringify(row.metadata),
      Date.now(),
    );
  first.close();
  return openEmbeddedBackends(dir);
});
