/**
 * The one mark of a failure that proves the data being handled is at fault, not a backend, the
 * service or its configuration: a record that does not parse or decode, an event of the wrong
 * shape, a value the database refuses for what it is (a data exception, a constraint), a record
 * the log refuses for its size. Trying it again fails the same way, so a consumer dead-letters the
 * record and a projection stops on the event (docs/decisions/0025-what-blames-the-data.md).
 *
 * It is the exception and must be proven: any other failure (an outage, a refused login, a full
 * disk, a database that takes no connections, a bug) is retried in place and reported by
 * readiness, since taking it for the data's fault would dead-letter or skip good records for as
 * long as it lasts. An error says it with `dataAtFault: true`, as `retriable` says the other way.
 */
import type { RecordedEvent } from './event-store.ts';

export class DataAtFaultError extends Error {
  readonly code = 'DATA_AT_FAULT';
  readonly retriable = false;
  readonly dataAtFault = true;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DataAtFaultError';
  }
}

/**
 * Data at fault in one stored event, found before any follower was handed it (its personal
 * fields do not open): names the event, so a projection can stop on it and an operator skip it.
 */
export class EventDataAtFaultError extends DataAtFaultError {
  constructor(
    readonly event: RecordedEvent,
    cause: unknown,
  ) {
    super((cause as Error)?.message ?? String(cause), { cause });
    this.name = 'EventDataAtFaultError';
  }
}

/** Whether `error` proves the data at fault (it says `dataAtFault: true`); anything else is not proof. */
export const isDataAtFault = (error: unknown): boolean =>
  (error as { dataAtFault?: unknown } | null)?.dataAtFault === true;
