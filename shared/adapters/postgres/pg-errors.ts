/**
 * The one answer to "is this PostgreSQL failure worth retrying?", for every adapter on `pg`.
 *
 * Retriable: the connection failed or was cut (socket errors, `pg`'s own "Connection terminated…",
 * a connect timeout, a client or pool already closed by such a failure), the server refused or
 * ended the session for now (SQLSTATE class 08 connection exception, 57P01–57P03 shutdown / cannot
 * connect now, class 53 insufficient resources such as too many connections; 57P05 and 25P03, an
 * idle session or an idle transaction ended by idle_session_timeout or
 * idle_in_transaction_session_timeout, which a client whose event loop was busy meets at its next
 * statement: that statement never ran, or its transaction was rolled back, so a new session runs it
 * once), the server cannot take this write or wait for it now (25006 read-only transaction: a
 * connection still open to a primary that was demoted in a failover; 57014 a statement timeout or
 * an administrator's cancel; 55P03 a lock timeout), or the transaction lost a race it can win on a
 * second try (40001 serialization failure, 40P01 deadlock). Taking one of those for the record's
 * own fault would dead-letter good calls for as long as the condition lasts. 57P04 (the database
 * was dropped) ends the session for good, and is not retriable.
 * Anything else — a data exception (22xxx), a constraint, a syntax or schema error — fails the same
 * way every time and is not retriable.
 */

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

/** SQLSTATE codes of a transient condition. */
const TRANSIENT_SQLSTATE = /^(08[0-9A-Z]{3}|57P0[1235]|53[0-9A-Z]{3}|25006|25P03|57014|55P03|40001|40P01)$/;

/** Messages `pg` and `pg-pool` give to connection failures, which carry no code. */
const CONNECTION_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Query read timeout|Client has encountered a connection error|Client was closed and is not queryable|Cannot use a pool after calling end/i;

/** Whether a failure from `pg` is transient: the same operation may succeed later. */
export const isRetriablePgError = (error: unknown): boolean => {
  if (error instanceof AggregateError) return error.errors.some(isRetriablePgError);
  if (typeof error !== 'object' || error === null) return false;
  const { code, message } = error as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && (NETWORK_CODES.has(code) || TRANSIENT_SQLSTATE.test(code))) return true;
  return typeof message === 'string' && CONNECTION_MESSAGES.test(message);
};

/**
 * Translates a retriable failure with `unavailable` (the adapter's BackendUnavailableError
 * subclass); returns anything else unchanged, so it can be rethrown as it is.
 */
export const translatePgError = (error: unknown, unavailable: (message: string, cause: unknown) => Error): unknown => {
  if ((error as { retriable?: unknown } | null)?.retriable === true) return error;
  if (!isRetriablePgError(error)) return error;
  const { code, message } = error as { code?: unknown; message?: unknown };
  const text = typeof message === 'string' && message !== '' ? message : String(code ?? error);
  return unavailable(text, error);
};
