/**
 * The one answer to "is this SQLite failure worth retrying?", for every adapter on better-sqlite3.
 * Retriable: another connection holds the lock past the busy timeout (SQLITE_BUSY and its extended
 * codes such as SQLITE_BUSY_SNAPSHOT) or a table is locked (SQLITE_LOCKED…). Anything else (a
 * constraint, a malformed database, a full disk, a bug) fails the same way on a second try.
 */
const TRANSIENT = /^SQLITE_(BUSY|LOCKED)(_|$)/;

/** Whether a better-sqlite3 error is transient: the same statement may succeed later. */
export const isRetriableSqliteError = (error: unknown): boolean => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && TRANSIENT.test(code);
};

/**
 * Translates a retriable failure with `unavailable` (the adapter's BackendUnavailableError
 * subclass); returns anything else unchanged.
 */
export const translateSqliteError = (error: unknown, unavailable: (message: string, cause: unknown) => Error): unknown =>
  isRetriableSqliteError(error) ? unavailable((error as Error).message, error) : error;
