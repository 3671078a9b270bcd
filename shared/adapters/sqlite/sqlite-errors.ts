/**
 * The one answer to "whose fault is this SQLite failure?", for every adapter on better-sqlite3
 * (docs/decisions/0025-what-blames-the-data.md), as pg-errors.ts answers it for PostgreSQL:
 *
 * - **The data's** (`isSqliteDataError`): a constraint (SQLITE_CONSTRAINT…), a value too large
 *   (SQLITE_TOOBIG) or of the wrong type (SQLITE_MISMATCH). The same values fail the same way every
 *   time: translated to `DataAtFaultError`.
 * - **The statement's** (a bug): SQLITE_ERROR (a syntax error, no such table or column),
 *   SQLITE_MISUSE, SQLITE_RANGE. Left as it is: no proof against the record either.
 * - **The machine's, an outage** (`isRetriableSqliteError`): every other result code. Another
 *   connection holds the lock past the busy timeout (SQLITE_BUSY and its extended codes such as
 *   SQLITE_BUSY_SNAPSHOT), a table is locked (SQLITE_LOCKED…), the disk is full or failing
 *   (SQLITE_FULL, SQLITE_IOERR…), the file cannot be opened or is read-only (SQLITE_CANTOPEN,
 *   SQLITE_READONLY…), memory ran out (SQLITE_NOMEM), the file is damaged or not a database
 *   (SQLITE_CORRUPT, SQLITE_NOTADB), a locking protocol error, a statement interrupted; and the
 *   database closed under the caller (shutting down). A consumer retries these in place instead of
 *   dead-lettering a good record, a projection instead of stopping on a good event, and readiness
 *   says so for as long as it lasts.
 */
import { DataAtFaultError } from '../../ports/data-at-fault.ts';

const DATA = /^SQLITE_(CONSTRAINT|TOOBIG|MISMATCH)(_|$)/;
const STATEMENT = /^SQLITE_(ERROR|MISUSE|RANGE)(_|$)/;

const codeOf = (error: unknown): string | undefined => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_') ? code : undefined;
};

/** Whether a better-sqlite3 error says another connection holds the lock (busy or locked). */
export const isSqliteBusy = (error: unknown): boolean => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^SQLITE_(BUSY|LOCKED)(_|$)/.test(code);
};

/** Whether SQLite refused the statement's values for what they are: the data's fault. */
export const isSqliteDataError = (error: unknown): boolean => DATA.test(codeOf(error) ?? '');

/** Whether a better-sqlite3 error is the machine's state: the same statement may succeed later. */
export const isRetriableSqliteError = (error: unknown): boolean => {
  const code = codeOf(error);
  if (code !== undefined) return !DATA.test(code) && !STATEMENT.test(code);
  return error instanceof TypeError && /database connection is not open/.test(error.message);
};

/**
 * Translates a failure of the machine's state with `unavailable` (the adapter's
 * BackendUnavailableError subclass), and a refusal of the statement's values with
 * `DataAtFaultError`; returns anything else (a bug) unchanged.
 */
export const translateSqliteError = (
  error: unknown,
  unavailable: (message: string, cause: unknown) => Error,
): unknown => {
  if (isSqliteDataError(error))
    return new DataAtFaultError(`SQLite refused the data: ${(error as Error).message}`, { cause: error });
  return isRetriableSqliteError(error) ? unavailable((error as Error).message, error) : error;
};
