/**
 * The read models on a PostgreSQL server, in the service's schema: the call history
 * (postgres-call-history.ts) and the deal records with their outbox (postgres-deals.ts), sharing
 * one pool.
 *
 * Search needs the `pg_trgm` extension. It is created in schema `public` (an extension exists once
 * per database, and one created inside a service schema would be dropped with that schema). When it
 * cannot be created (no privilege), the adapter works without the trigram indexes and search
 * filters the team's rows newest first instead.
 */
import type pg from 'pg';
import type { ReadModels } from '../../ports/read-models.ts';
import { createPostgresPool, inTransaction, type PostgresOptions } from '../postgres/postgres-pool.ts';
import { createPostgresCallHistory } from './postgres-call-history.ts';
import { createPostgresDeals } from './postgres-deals.ts';
import { translated, VERSIONS_TABLE } from './postgres-versions.ts';
import { createPostgresWebhooks } from './postgres-webhooks.ts';
import type { RebuildLimits } from './rebuild-buffer.ts';

export interface PostgresReadModelsOptions extends PostgresOptions {
  /** When a rebuild writes what it holds in memory (see RebuildBuffer). */
  rebuildLimits?: RebuildLimits;
}

/** Creates pg_trgm in `public` once per database; the schema holding it, or undefined when it cannot be had. */
export const ensureTrigram = async (pool: pg.Pool): Promise<string | undefined> =>
  inTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock(hashtext('read_models.pg_trgm'))");
    const found = async () =>
      (
        await client.query<{ schema: string }>(
          "SELECT extnamespace::regnamespace::text AS schema FROM pg_extension WHERE extname = 'pg_trgm'",
        )
      ).rows[0]?.schema;
    const existing = await found();
    if (existing !== undefined) return existing;
    await client.query('SAVEPOINT trgm');
    try {
      await client.query('CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public');
    } catch {
      await client.query('ROLLBACK TO SAVEPOINT trgm');
      return undefined;
    }
    return found();
  });

export const createPostgresReadModels = async (options: PostgresReadModelsOptions): Promise<ReadModels> => {
  const pool = await translated(() => createPostgresPool(options));
  try {
    const trigramSchema = await translated(() => ensureTrigram(pool));
    await translated(() =>
      inTransaction(pool, async (client) => {
        await client.query("SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.read_models'))");
        await client.query(VERSIONS_TABLE);
      }),
    );
    const callHistory = await createPostgresCallHistory(pool, { trigramSchema, rebuildLimits: options.rebuildLimits });
    const deals = await createPostgresDeals(pool);
    const webhooks = await createPostgresWebhooks(pool);
    return {
      callHistory,
      deals,
      webhooks,
      async close() {
        await pool.end();
      },
    };
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
};
