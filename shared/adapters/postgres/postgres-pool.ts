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
  /**
   * How long one statement may wait for the server's answer before it fails, in ms; default
   * `DEFAULT_QUERY_TIMEOUT_MS`. A connection whose server vanished without a reset (a failover to
   * another address, a partition) otherwise never answers, and whatever waits on it (a group
   * commit's flush, and every append queued behind it) waits forever.
   */
  queryTimeoutMs?: number;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

const CONNECT_TIMEOUT_MS = 5000;

/**
 * The default deadline of one statement. Every statement the service runs at its work answers in
 * milliseconds (a group commit's append, a page of at most a few thousand rows, a read-model
 * batch); a lock waited for is held by a statement as short, or by a transaction of another
 * process that is itself cut off by this deadline. 30 s is far past all of them, and past a
 * server's checkpoint stall or a short failover, so a busy but live server is not taken for a lost
 * one; it is also READY_RETRY_THRESHOLD_MS's default, after which /readyz says the part is failing.
 * A statement that may rightly run long (a migration rewriting a table) asks for
 * `NO_QUERY_TIMEOUT_MS`.
 */
export const DEFAULT_QUERY_TIMEOUT_MS = 30_000;

/** The longest a timer waits (2^31 - 1 ms, about 25 days): a statement given it has, in effect, no deadline. */
export const NO_QUERY_TIMEOUT_MS = 2_147_483_647;

/**
 * TCP keepalive starts probing a connection this long after it fell silent, so an idle one whose
 * server vanished without a reset (a pooled client, the LISTEN session) fails with an error, is
 * dropped and opened again, instead of being found dead only by the next statement sent on it (and
 * the LISTEN session, which sends none, never). The probes that follow are the system's (on Linux
 * 9 probes 75 s apart by default).
 */
const KEEPALIVE_INITIAL_DELAY_MS = 10_000;

const schemaOf = (options: PostgresOptions): string => {
  const schema = options.schema ?? 'public';
  if (!IDENTIFIER.test(schema))
    throw new Error(`invalid PostgreSQL schema name ${JSON.stringify(schema)}: use lower-case letters, digits and _`);
  return schema;
};

/** The settings of every connection, pooled or not. */
const connectionConfig = (options: PostgresOptions): pg.ClientConfig => ({
  connectionString: options.connectionString,
  options: `-c search_path=${schemaOf(options)}`,
  connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
  keepAlive: true,
  keepAliveInitialDelayMillis: KEEPALIVE_INITIAL_DELAY_MS,
  query_timeout: options.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS,
});

/**
 * `pg`'s error for a statement that outlived its deadline (`query_timeout`). `pg` answers the
 * caller but leaves the statement on the connection: anything sent after it waits behind it, so
 * the connection must be destroyed, not used again. pg-pool does so for `pool.query` (a client
 * released with an error is ended, and `end` destroys the socket of a client with a statement in
 * flight); `inTransaction` and `autocommit` release it with the error as well.
 */
export const isQueryTimeout = (error: unknown): boolean =>
  (error as { message?: unknown } | null)?.message === 'Query read timeout';

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
  const pool = new pg.Pool({ ...connectionConfig(options), max: options.max ?? 10 });
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
export const createPostgresClient = (options: PostgresOptions): pg.Client => new pg.Client(connectionConfig(options));

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
  // The server answered that it rolled back (a serialization failure or deadlock at commit), or
  // that it had ended the session before the statement (an idle transaction rolled back, an idle
  // session closed).
  if (code === '40001' || code === '40P01' || code === '25P03' || code === '57P05') return false;
  return isRetriablePgError(error);
};

/**
 * Runs `fn` in one transaction on one pooled client. While the client is checked out its 'error'
 * event (the connection dropped between two statements) is listened to; the statement that follows
 * fails instead, and the client is discarded rather than returned to the pool. A COMMIT cut off by
 * the connection, or past its deadline, throws `CommitOutcomeUnknownError`. After a statement past
 * its deadline no ROLLBACK is sent (it would wait behind that statement for a deadline of its own):
 * the connection is destroyed, and the server rolls the transaction back when it sees it closed.
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
    const timedOut = isQueryTimeout(error) || isQueryTimeout((error as { cause?: unknown } | null)?.cause);
    if (timedOut) broken ??= error as Error;
    // A failed ROLLBACK leaves the session in an unknown state: do not hand it to the next caller.
    else
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
 * Runs one statement outside a transaction block, so that it commits as it returns (a group
 * commit's append), on one pooled client. A failure that says nothing of the statement's outcome
 * (the connection lost, or no answer within its deadline, once it was sent: the server may have run
 * and committed it) throws `CommitOutcomeUnknownError`, as a COMMIT cut off does in
 * `inTransaction`; a failure to check a client out sent nothing, and is thrown as it is. The client
 * is discarded after any failure, as `pool.query` does.
 */
export const autocommit = async <R extends pg.QueryResultRow>(
  pool: pg.Pool,
  sql: string,
  params: unknown[],
): Promise<pg.QueryResult<R>> => {
  let broken: Error | undefined;
  const onError = (error: Error) => {
    broken ??= error;
  };
  const client = await checkOut(pool, onError);
  try {
    return await client.query<R>(sql, params);
  } catch (error) {
    broken ??= error instanceof Error ? error : new Error(String(error));
    throw commitOutcomeUnknown(error) ? new CommitOutcomeUnknownError(error) : error;
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
