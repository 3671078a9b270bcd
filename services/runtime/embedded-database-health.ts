/**
 * The embedded database's part of /readyz: not ready once an fsync of its WAL has failed, which only
 * a restart clears (WalSyncFailedError in wal-sync.ts). Each service on it registers it, under one
 * name, so a process reports it once.
 */
import { walSyncOf } from '../../shared/adapters/sqlite/wal-sync.ts';
import type { Backends } from './backends.ts';
import type { Health } from './health.ts';

export const registerEmbeddedDatabase = (backends: Pick<Backends, 'sqlite'>, health?: Health): (() => void) => {
  const sync = backends.sqlite && walSyncOf(backends.sqlite.db);
  if (!sync || !health) return () => {};
  return health.register('embedded-database', () => {
    const failed = sync.failed;
    return failed ? { ready: false, reason: failed.message } : { ready: true };
  });
};
