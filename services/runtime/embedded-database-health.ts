/**
 * The embedded database's part of /readyz: not ready once an fsync of its WAL has failed, which only
 * a restart clears (WalSyncFailedError in wal-sync.ts), and while its WAL checkpointer's worker is
 * being started again after it ended (wal-checkpointer.ts). Each service on it registers it, under one
 * name, so a process reports it once.
 */
import { walCheckpointerFailure } from '../../shared/adapters/sqlite/sqlite-database.ts';
import { walSyncOf } from '../../shared/adapters/sqlite/wal-sync.ts';
import type { Backends } from './backends.ts';
import type { Health } from './health.ts';

export const registerEmbeddedDatabase = (backends: Pick<Backends, 'sqlite'>, health?: Health): (() => void) => {
  const sync = backends.sqlite && walSyncOf(backends.sqlite.db);
  if (!sync || !health) return () => {};
  const db = backends.sqlite!.db;
  return health.register('embedded-database', () => {
    const failed = sync.failed;
    if (failed) return { ready: false, reason: failed.message };
    const checkpointer = walCheckpointerFailure(db);
    return checkpointer
      ? {
          ready: false,
          reason: `the WAL is not being checkpointed (it grows until it is): ${checkpointer.message}; its worker is being started again`,
        }
      : { ready: true };
  });
};
