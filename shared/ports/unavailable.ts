/**
 * The one base of every "a backend cannot serve this right now" error: the event store, the event
 * log, the read models, the rate limiter's storage. Each adapter translates its driver's transient
 * failures (connection refused or dropped, server shutting down, timeouts) into a subclass, so the
 * rest of the service decides on one property: `retriable`. HTTP answers 503 with Retry-After;
 * consumers retry in place; nothing treats it as a bad record.
 */
export class BackendUnavailableError extends Error {
  readonly retriable = true;
  /**
   * True when the operation may have taken effect anyway (a publish that timed out after the
   * request was sent): a caller must not say "nothing was accepted".
   */
  readonly outcomeUnknown: boolean;

  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown; outcomeUnknown?: boolean },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.outcomeUnknown = options?.outcomeUnknown ?? false;
    // The subclass's own name (`EventStoreUnavailableError`, …), as logs print it.
    this.name = new.target.name;
  }
}

/**
 * The base of one backend's unavailability error, its `code` fixed:
 * `export class EventStoreUnavailableError extends unavailableError('EVENT_STORE_UNAVAILABLE') {}`.
 */
export const unavailableError = (code: string) =>
  class extends BackendUnavailableError {
    constructor(message: string, options?: { cause?: unknown; outcomeUnknown?: boolean }) {
      super(code, message, options);
    }
  };

/** Whether `error` is a backend's transient unavailability (of any backend). */
export const isBackendUnavailable = (error: unknown): error is BackendUnavailableError =>
  error instanceof BackendUnavailableError;

/**
 * Whether an error is worth retrying in place: a backend outage, or an error that says so itself
 * (`retriable: true`). Anything else — a record that can never be stored or parsed — is not.
 */
export const isRetriableError = (error: unknown): boolean =>
  error instanceof BackendUnavailableError || (error as { retriable?: unknown } | null)?.retriable === true;
