import { createSqliteDataKeys } from '../../shared/adapters/data-keys/sqlite-data-keys.ts';
import { openSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
import { tempDir } from '../support/temp-dir.ts';
import { dataKeysConformance, type DataKeysHandle } from './data-keys.ts';

// One database file per store; a second store over the same file is another connection to it, as
// the processes sharing an embedded database each open their own.
const files = new Map<DataKeysHandle, ReturnType<typeof openSqlite>>();

dataKeysConformance('embedded (SQLite)', {
  async fresh(kek) {
    const dir = tempDir();
    const opened = openSqlite(dir.path);
    const keys = createSqliteDataKeys(opened.db, kek);
    const handle: DataKeysHandle = {
      keys,
      async cleanup() {
        await keys.close();
        opened.close();
        dir.remove();
      },
    };
    files.set(handle, opened);
    return handle;
  },
  async sameStorage(handle, kek) {
    const keys = createSqliteDataKeys(files.get(handle)!.db, kek);
    return { keys, cleanup: () => keys.close() };
  },
});
