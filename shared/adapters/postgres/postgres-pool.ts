import pg from 'pg';

export interface PostgresOptions {
  /** `postgres://user:pass@host:port/db` */
  connectionString: string;
  /** Schema holding this service's tables; created when missing. Default `public`. */
  schema?: string;
  /** Most connections in the pool; default 10. */
  max?: number;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

/** A pool whose every connection uses `schema` as its search path. */
export const createPostgresPool = async (options: PostgresOptions): Promise<pg.Pool> => {
  const schema = options.schema ?? 'public';
  if (!IDENTIFIER.test(schema)) throw new Error(`invalid PostgreSQL schema name ${JSON.stringify(schema)}: use lower-case letters, digits and _`);
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    options: `-c search_path=${schema}`,
    connectionTimeoutMillis: 5000,
  });
  // An idle client that loses its connection emits 'error' on the pool; the next query reconnects.
  pool.on('error', () => undefined);
  await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  return pool;
};

/** Runs `fn` in one transaction on one pooled client. */
export const inTransaction = async <T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
};
