/**
 * The one answer to "is this SQLite failure worth retrying?", for every adapter on better-sqlite3.
 * Retriable, because it is about the machine and not the statement: another connection holds the
 * lock past the busy timeout (SQLITE_BUSY and its extended codes such as SQLITE_BUSY_SNAPSHOT), a
 * table is locked (SQLITE_LOCKED…), the disk is full or failing (SQLITE_FULL, SQLITE_IOERR…), the
 * file cannot be opened (SQLITE_CANTOPEN), a locking protocol error, or the database was closed
 * under the caller (shutting down). A consumer retries these in place instead of dead-lettering a
 * good record. Anything else (a constraint, a malformed database, a bug) fails the same way twice.
 */
const TRANSIENT = /^SQLITE_(BUSY|LOCKED|FULL|IOERR|CANTOPEN|PROTOCOL)(_|$)/;

/** Whether a better-sqlite3 error says another connection holds the lock (busy or locked). */
export const isSqliteBusy = (error: unknown): boolean => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)(_|$)/.test(code);
};

/** Whether a better-sqlite3 error is transient: the same statement may succeed later. */
export const isRetriableSqliteError = (error: unknown): boolean => {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return TRANSIENT.test(code);
  return error instanceof TypeError && /database connection is not open/.test(error.message);
};

/**
 * Translates a retriable failure with `unavailable` (the adapter's BackendUnavailableError
 * subclass); returns anything else unchanged.
 */
export const translateSqliteError = (
  error: unknown,
  unavailable: (message: string, cause: unknown) => Error,
): unknown => (isRetriableSqliteError(error) ? unavailable((error as Error).message, error) : error);
