/**
 * The one answer to "whose fault is this PostgreSQL failure?", for every adapter on `pg`
 * (docs/decisions/0025-what-blames-the-data.md). Three answers:
 *
 * - **The data's** (`isPgDataError`): SQLSTATE class 22, a data exception (invalid text
 *   representation, an untranslatable character or U+0000 in text or jsonb, a value out of range),
 *   and class 23, an integrity constraint violation. The server refused the values the statement
 *   carries; the same values fail the same way every time. Translated to `DataAtFaultError`, so a
 *   consumer dead-letters the record and a projection stops on the event.
 * - **The statement's** (a bug in the service): class 42, a syntax error or an undefined table,
 *   column or function (except 42501, below), and class 0A, a feature not supported. Left as it is:
 *   HTTP answers 500; a consumer retries it in place, since it is no proof against the record.
 * - **The database's state, an outage** (`isRetriablePgError`): everything else. The connection
 *   failed or was cut (socket errors, `pg`'s own "Connection terminated…", a connect timeout, a
 *   client or pool already closed by such a failure); any error of severity FATAL or PANIC, which
 *   ends the session and is how the server refuses a connection (55000 a database that takes no
 *   connections, 28xxx a refused login such as a rotated password, 3D000 a database that does not
 *   exist, 42501 CONNECT revoked, 53300 too many connections, 57P03 cannot connect now); and every
 *   other SQLSTATE: 08 connection exception, 57P0x shutdown, idle-session and idle-transaction
 *   timeouts, a dropped database, 53 insufficient resources (disk full, out of memory), 58 system
 *   errors (I/O), XX internal errors and corruption, 25006 read-only after a failover, 57014 a
 *   statement timeout or cancel, 55P03 a lock timeout, 40001 / 40P01 a lost race, 42501 a privilege
 *   revoked, and codes this list never heard of. Translated to the adapter's
 *   BackendUnavailableError: HTTP answers 503 with Retry-After, consumers retry in place, readiness
 *   reports it. Taking any of them for the record's fault would dead-letter good calls, or stop a
 *   projection on a good event, for as long as the condition lasts.
 */
import { DataAtFaultError } from '../../ports/data-at-fault.ts';

/** Socket and DNS failures Node.js reports as `error.code`. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
]);

/** A SQLSTATE: five digits or upper-case letters. */
const SQLSTATE = /^[0-9A-Z]{5}$/;

/** SQLSTATE classes of values the server refuses: 22 data exception, 23 integrity constraint violation. */
const DATA_SQLSTATE = /^2[23]/;

/** SQLSTATEs of a statement that cannot run as written: 42 (but 42501, a privilege) and 0A. */
const STATEMENT_SQLSTATE = /^(42(?!501)|0A)/;

/** TLS failures of the connection (Node.js and OpenSSL codes): the server's or the configuration's. */
const TLS_CODES = /^(ERR_SSL_|ERR_TLS_|CERT_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT|UNABLE_TO_)/;

/** Messages `pg` and `pg-pool` give to connection failures, which carry no code. */
const CONNECTION_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Client was closed and is not queryable|Cannot use a pool after calling end|server does not support SSL|^SASL: /i;

interface PgErrorFields {
  code?: unknown;
  severity?: unknown;
  message?: unknown;
  syscall?: unknown;
}

const fieldsOf = (error: unknown): PgErrorFields | undefined =>
  typeof error === 'object' && error !== null ? error : undefined;

/** Whether the server refused the statement's values (class 22 or 23): the data's fault. */
export const isPgDataError = (error: unknown): boolean => {
  const fields = fieldsOf(error);
  if (!fields || typeof fields.code !== 'string' || !SQLSTATE.test(fields.code)) return false;
  return !endsSession(fields) && DATA_SQLSTATE.test(fields.code);
};

/** FATAL or PANIC: the server ended the session (or never began it), whatever the code. */
const endsSession = (fields: PgErrorFields): boolean => fields.severity === 'FATAL' || fields.severity === 'PANIC';

/**
 * Whether a failure from `pg` is the database's state rather than the data's or the statement's:
 * the same operation may succeed later, and nothing is to blame on what it carried.
 */
export const isRetriablePgError = (error: unknown): boolean => {
  if (error instanceof AggregateError) return error.errors.some(isRetriablePgError);
  const fields = fieldsOf(error);
  if (!fields) return false;
  const { code, message } = fields;
  if (typeof code === 'string') {
    if (NETWORK_CODES.has(code) || TLS_CODES.test(code)) return true;
    if (SQLSTATE.test(code)) return endsSession(fields) || !(DATA_SQLSTATE.test(code) || STATEMENT_SQLSTATE.test(code));
  }
  // A system call that failed (a socket's connect, read or write), whatever its errno.
  if (typeof fields.syscall === 'string') return true;
  return typeof message === 'string' && CONNECTION_MESSAGES.test(message);
};

/**
 * Translates a failure of the database's state with `unavailable` (the adapter's
 * BackendUnavailableError subclass), and a refusal of the statement's values with
 * `DataAtFaultError`; returns anything else (a bug) unchanged, so it can be rethrown as it is.
 */
export const translatePgError = (error: unknown, unavailable: (message: string, cause: unknown) => Error): unknown => {
  if ((error as { retriable?: unknown } | null)?.retriable === true) return error;
  const { code, message }: PgErrorFields = fieldsOf(error) ?? {};
  const text = typeof message === 'string' && message !== '' ? message : String(code ?? error);
  if (isPgDataError(error)) return new DataAtFaultError(`PostgreSQL refused the data: ${text}`, { cause: error });
  if (!isRetriablePgError(error)) return error;
  return unavailable(text, error);
};
