import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A new empty directory under the OS temp dir; `remove` deletes it. An embedded database's
 * checkpointer worker may open or close its connection after the database's `close()` has returned
 * (its stop is a message), creating or removing the WAL files, so a removal right after `close()`
 * may find the directory changing under it (ENOTEMPTY): it is tried again for up to about a second.
 */
export const tempDir = (prefix = 'calls-test-') => {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true, maxRetries: 10, retryDelay: 20 }) };
};
