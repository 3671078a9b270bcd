import pg from 'pg';
import { isRetriablePgError } from './pg-errors.ts';
import { isRetriableError } from '../../ports/unavailable.ts';

export interface PostgresOptions {
  /** `postgres://user:pass@host:port/db` */
  connectionString: string;
  /** Schema holding this service's tables; created when missing. Default `public`. */
  schema?: string;
  /** Most connections in the pool; default 10. */
  max?: number;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

const CONNECT_TIMEOUT_MS = 5000;

const schemaOf = (options: PostgresOptions): string => {
  const schema = options.schema ?? 'public';
  if (!IDENTIFIER.test(schema))
    throw new Error(`invalid PostgreSQL schema name ${JSON.stringify(schema)}: use lower-case letters, digits and _`);
  return schema;
};

/**
 * A pool whose every connection uses `schema` as its search path.
 *
 * A connection that drops never takes the process down: `pg` reports it as an 'error' event, which
 * has a listener on the pool (idle clients) and, while a client is checked out, on the client
 * (`inTransaction`; `pool.query` adds its own). The broken client is discarded and the next query
 * opens a new connection; the query that was cut off fails with the error, which the adapters
 * classify (pg-errors.ts).
 */
export const createPostgresPool = async (options: PostgresOptions): Promise<pg.Pool> => {
  const schema = schemaOf(options);
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max ?? 10,
    options: `-c search_path=${schema}`,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });
  // An idle client that loses its connection emits 'error' on the pool, which has already removed it.
  pool.on('error', () => undefined);
  try {
    await pool.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw error;
  }
  return pool;
};

/**
 * A connection of its own, outside the pool (a LISTEN session), configured like the pool's. The
 * caller connects it and must listen for its 'error' event.
 */
export const createPostgresClient = (options: PostgresOptions): pg.Client =>
  new pg.Client({
    connectionString: options.connectionString,
    options: `-c search_path=${schemaOf(options)}`,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  });

/**
 * Checks a client out with its 'error' listener already attached. The listener must be added in
 * pg-pool's callback, synchronously: the promise form resumes the caller a microtask later, and a
 * session terminated right after connecting delivers its FATAL in the same socket read as the
 * connection's ReadyForQuery — an 'error' event with no listener, which would end the process.
 */
const checkOut = (pool: pg.Pool, onError: (error: Error) => void): Promise<pg.PoolClient> =>
  new Promise((resolve, reject) => {
    pool.connect((error, client) => {
      if (error || !client) return reject(error ?? new Error('pg-pool gave no client'));
      client.on('error', onError);
      resolve(client);
    });
  });

/**
 * A COMMIT whose answer never came (the connection failed while it was sent or answered): the
 * server may have committed the transaction or not. It carries its cause's code and message, so it
 * is classified as that connection failure is; a caller for whom a write that may have happened
 * differs from one that did not (the event log's publish) tells it apart by its class.
 */
export class CommitOutcomeUnknownError extends Error {
  readonly code: unknown;
  constructor(cause: unknown) {
    const { code, message } = (cause ?? {}) as { code?: unknown; message?: unknown };
    super(`COMMIT unconfirmed: ${typeof message === 'string' ? message : String(cause)}`, { cause });
    this.name = 'CommitOutcomeUnknownError';
    this.code = code;
  }
}

/** A failure of COMMIT that says nothing of its outcome: the connection's, not the server's refusal. */
const commitOutcomeUnknown = (error: unknown): boolean => {
  const code = (error as { code?: unknown } | null)?.code;
  // The server answered that it rolled back (a serialization failure or deadlock at commit).
  if (code === '40001' || code === '40P01') return false;
  return isRetriablePgError(error);
};

/**
 * Runs `fn` in one transaction on one pooled client. While the client is checked out its 'error'
 * event (the connection dropped between two statements) is listened to; the statement that follows
 * fails instead, and the client is discarded rather than returned to the pool. A COMMIT cut off by
 * the connection throws `CommitOutcomeUnknownError`.
 */
export const inTransaction = async <T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
  let broken: Error | undefined;
  const onError = (error: Error) => {
    broken ??= error;
  };
  const client = await checkOut(pool, onError);
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    try {
      await client.query('COMMIT');
    } catch (error) {
      throw commitOutcomeUnknown(error) ? new CommitOutcomeUnknownError(error) : error;
    }
    return result;
  } catch (error) {
    // A failed ROLLBACK leaves the session in an unknown state: do not hand it to the next caller.
    await client.query('ROLLBACK').catch((rollbackError: Error) => {
      broken ??= rollbackError;
    });
    throw error;
  } finally {
    client.off('error', onError);
    client.release(broken);
  }
};

/**
 * Runs `many`, one statement for a batch of independent items (a group commit's), and when the
 * server refuses it for a reason that is not its availability (a value the statement cannot take,
 * such as a NUL in a jsonb text), runs each item alone, so that one bad item fails alone and the
 * others are written. A single statement that the server refused wrote nothing, so running its
 * items again writes each once. A failure that leaves the outcome unknown (the connection lost, or
 * a COMMIT cut off) is rethrown as `translate` makes it: an item run again could be written twice.
 */
export const eachAloneOnRefusal = async <T, R>(
  items: T[],
  many: (items: T[]) => Promise<Array<R | Error>>,
  translate: (error: unknown) => unknown,
): Promise<Array<R | Error>> => {
  try {
    return await many(items);
  } catch (error) {
    const translated = translate(error);
    const refused = !isRetriableError(translated) && !(error instanceof CommitOutcomeUnknownError);
    if (items.length === 1 || !refused) throw translated;
    return Promise.all(
      items.map(async (item) => {
        try {
          return (await many([item]))[0]!;
        } catch (alone) {
          const failure = translate(alone);
          return failure instanceof Error ? failure : new Error(String(failure));
        }
      }),
    );
  }
};
