/**
 * The read models in the embedded SQLite database: the call history (sqlite-call-history.ts) and
 * the deal records with their outbox (sqlite-deals.ts), over the connection the event store uses.
 */
import type { ReadModels } from '../../ports/read-models.ts';
import type { SqliteDb } from '../sqlite/sqlite-database.ts';
import { createSqliteCallHistory, type SqliteCallHistoryOptions } from './sqlite-call-history.ts';
import { createSqliteDeals } from './sqlite-deals.ts';
import { sqliteVersions } from './sqlite-versions.ts';
import { createSqliteWebhooks } from './sqlite-webhooks.ts';

export type SqliteReadModelsOptions = SqliteCallHistoryOptions;

/** Read models over an opened database; `close` leaves the database open (its opener closes it). */
export const createSqliteReadModels = (db: SqliteDb, options: SqliteReadModelsOptions = {}): ReadModels => {
  const versions = sqliteVersions(db);
  const callHistory = createSqliteCallHistory(db, versions, options);
  return {
    callHistory,
    deals: createSqliteDeals(db, versions),
    webhooks: createSqliteWebhooks(db, versions),
    async close() {
      await callHistory.close();
    },
  };
};
