/**
 * What every consumer does when handling one record fails, so that one record never stops a
 * partition and an outage never costs a member its group (docs/decisions/0025-what-blames-the-data.md):
 * - a failure that proves the record bad (`dataAtFault`: it does not parse or decode, the database
 *   refuses its values, the log refuses it for its size) belongs to the record: it goes to the
 *   dead-letter topic with the reason and its origin in headers, and the consumer moves on;
 * - any other failure is retried in place with jittered backoff for as long as it lasts: an outage
 *   (`BackendUnavailableError`, or `retriable: true`), and also a failure that proves nothing
 *   either way (a database error no classifier knows, a bug), since dead-lettering a good record
 *   for an outage costs an accepted call. The member keeps its partitions; one line when the
 *   retrying starts (a warning for an outage, an error otherwise), one when it ends; readiness
 *   reports records retrying past its threshold, with the last error;
 * - except one record stuck on a failure of its own: when it has failed with errors that prove
 *   nothing (never an outage) `stuckAfter.attempts` times in a row, over `stuckAfter.ms` at least,
 *   and other records were handled meanwhile (so the failure is not everyone's: not a bug that
 *   fails every record, nor an outage no classifier knows), it is set aside in the dead-letter
 *   topic, saying so, instead of holding its partition; an operator redrives it once the bug is
 *   fixed (docs/decisions/0027-stuck-on-an-event.md).
 * Only an abort signal ends the retrying, the consumer's (it is stopping) or the record's (the member
 * gave its partition up): the handler then throws, the record is not committed, and the partition's
 * next owner gets it again.
 */
import { type EventLog, type LogRecord, RecordRefusedError } from '../../ports/event-log.ts';
import { isDataAtFault } from '../../ports/data-at-fault.ts';
import { isRetriableError } from '../../ports/unavailable.ts';
import { toStorable } from '../../domain/submission/storable-text.ts';
import { truncateChars } from '../../domain/submission/truncate-utf8.ts';
import { jitteredBackoff } from './consumer-status.ts';
import { deadLetters } from '../../observability/metrics.ts';

export interface RecordFailureLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface ResilientHandlerOptions {
  /** Where records that can never be handled go. */
  deadLetter: { eventLog: Pick<EventLog, 'publish'>; topic: string };
  log: RecordFailureLog;
  /** Aborted when the consumer stops. */
  signal: AbortSignal;
  /** Backoff between attempts (full jitter); default 100 ms doubling up to 5 s. */
  backoff?: { baseMs: number; maxMs: number };
  /** When a record failing on its own with errors that prove nothing is set aside; default `STUCK_RECORD_AFTER`. */
  stuckAfter?: Partial<StuckRecordBounds>;
}

/**
 * A record is set aside after `attempts` failures in a row that prove nothing, over `ms` at least
 * while other records were handled, or over `aloneMs` whether or not any was. Nothing else handled
 * meanwhile is no evidence against the record: a bug that fails every record, or an outage no
 * classifier knows, looks the same. But a record may wait alone for other reasons too, and must get
 * out all the same: on Kafka its partition is held (no later record of it is fetched until it is
 * done, see kafka-consumer.ts), so a member that owns no other partition, or whose others are idle,
 * handles nothing else. Ten minutes of the same unexplained failure, which readiness names for 9.5
 * of them, outlasts a blip; at worst an outage no classifier knows sets aside one record per
 * partition every ten minutes, each of which a redrive puts back
 * (docs/decisions/0027-stuck-on-an-event.md).
 */
export interface StuckRecordBounds {
  attempts: number;
  ms: number;
  aloneMs: number;
}

/**
 * A record is set aside after failing 10 times in a row, over a minute at least, with errors that
 * prove nothing against it while other records were handled, or over ten minutes if none was. A
 * minute is twice readiness's default threshold (READY_RETRY_THRESHOLD_MS), so /readyz has named
 * it, with the error, before;
 * with the backoff (0.1 s doubling to 5 s) it is some 15 attempts, which no blip outlasts. Set
 * aside is not lost: the dead letter keeps the record whole, for a redrive.
 */
export const STUCK_RECORD_AFTER: StuckRecordBounds = { attempts: 10, ms: 60_000, aloneMs: 600_000 };

/** Records being retried right now, for readiness: the oldest retry's start and its error. */
export interface RetryingRecords {
  readonly count: number;
  /** When the oldest retry still running began; undefined when none is. */
  readonly since: Date | undefined;
  readonly lastError: string | undefined;
}

export interface ResilientHandler {
  /** Handles the record; `signal`, when given, ends its retrying as the consumer's own does. */
  handler: (record: LogRecord, signal?: AbortSignal) => Promise<void>;
  retrying(): RetryingRecords;
  /** Records sent to the dead-letter topic by this handler. */
  readonly deadLettered: number;
}

/** The dead-letter topic refused a record's dead letter: retried in place, never the record's fault. */
export class DeadLetterRefusedError extends Error {
  override readonly name = 'DeadLetterRefusedError';
}

/** A record that can never be handled (unparseable, invalid): thrown by a handler, it goes to the dead-letter topic. */
export class PoisonRecordError extends Error {
  readonly retriable = false;
  readonly dataAtFault = true;
  constructor(message: string) {
    super(message);
    this.name = 'PoisonRecordError';
  }
}

const describe = (error: unknown): string =>
  error instanceof Error ? `${error.name}: ${error.message}` : String(error);

const origin = (record: LogRecord) => ({
  topic: record.topic,
  partition: record.partition,
  offset: record.offset.toString(),
  key: record.key,
});

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', abort, { once: true });
  });

/** The dead-letter record: the original key, value and headers, plus why and where from. */
export const deadLetterRecord = (record: LogRecord, reason: string) => ({
  key: record.key,
  value: record.value,
  headers: {
    ...record.headers,
    dlq_reason: truncateChars(toStorable(reason), 2000),
    dlq_source_topic: record.topic,
    dlq_source_partition: String(record.partition),
    dlq_source_offset: record.offset.toString(),
  },
});

interface Stops {
  readonly aborted: boolean;
  signal(): AbortSignal;
}

export const resilientHandler = (
  /** Handles one record; `signal` aborts when the consumer stops or gives the record's partition up. */
  handle: (record: LogRecord, signal: AbortSignal) => Promise<void>,
  options: ResilientHandlerOptions,
): ResilientHandler => {
  const { log } = options;
  const baseMs = options.backoff?.baseMs ?? 100;
  const maxMs = options.backoff?.maxMs ?? 5000;
  const stuckAfter = { ...STUCK_RECORD_AFTER, ...options.stuckAfter };
  const retries = new Map<LogRecord, Date>();
  let lastError: string | undefined;
  let deadLettered = 0;
  /** Records handled so far: whether others were while one kept failing. */
  let handled = 0;

  /**
   * The consumer's signal combined with a partition's (the record's own when given), made once per
   * partition signal: every record of the partition is handed the same one.
   */
  const combined = new WeakMap<AbortSignal, AbortSignal>();
  const both = (given: AbortSignal): AbortSignal => {
    let signal = combined.get(given);
    if (!signal) combined.set(given, (signal = AbortSignal.any([options.signal, given])));
    return signal;
  };
  /** What ends a record's retrying: the consumer's signal, or the record's own when given. */
  const stops = (given: AbortSignal | undefined): Stops => ({
    get aborted() {
      return options.signal.aborted || given?.aborted === true;
    },
    signal: () => (given ? both(given) : options.signal),
  });

  /**
   * Runs `work` until it succeeds, retrying every failure but one that proves the data bad, which is
   * returned; so is the last of a record's failures that prove nothing once it is stuck on them
   * (`setAside`: not for the dead letter's own publishing).
   */
  const untilDone = async (
    record: LogRecord,
    work: () => Promise<void>,
    setAside: boolean,
    signal: Stops,
  ): Promise<{ failed: unknown; stuck?: { attempts: number; ms: number; alone: boolean } } | undefined> => {
    /** Failures in a row that prove nothing: how many, since when, and the records handled before them. */
    let unexplained: { attempts: number; since: number; handledBefore: number } | undefined;
    for (let attempt = 1; ; attempt++) {
      try {
        await work();
        if (setAside) handled++;
        if (retries.delete(record)) log.info({ ...origin(record), attempts: attempt }, 'record handled after retrying');
        return undefined;
      } catch (error) {
        if (signal.aborted) {
          retries.delete(record);
          throw error;
        }
        if (isDataAtFault(error)) {
          retries.delete(record);
          return { failed: error };
        }
        if (isRetriableError(error)) unexplained = undefined;
        else {
          unexplained = unexplained
            ? { ...unexplained, attempts: unexplained.attempts + 1 }
            : { attempts: 1, since: Date.now(), handledBefore: handled };
          const ms = Date.now() - unexplained.since;
          if (
            setAside &&
            unexplained.attempts >= stuckAfter.attempts &&
            ((ms >= stuckAfter.ms && handled > unexplained.handledBefore) || ms >= stuckAfter.aloneMs)
          ) {
            retries.delete(record);
            const alone = handled === unexplained.handledBefore;
            return { failed: error, stuck: { attempts: unexplained.attempts, ms, alone } };
          }
        }
        lastError = describe(error);
        if (!retries.has(record)) {
          retries.set(record, new Date());
          if (isRetriableError(error))
            log.warn(
              { ...origin(record), err: error },
              'record hit a retriable failure; retrying in place until it succeeds',
            );
          else
            log.error(
              { ...origin(record), err: error },
              'record failed with an error that does not prove it bad; retrying in place until it succeeds',
            );
        }
        try {
          await sleep(jitteredBackoff(attempt, baseMs, maxMs), signal.signal());
        } catch (aborted) {
          // Retried here no more: readiness must not go on reporting it.
          retries.delete(record);
          throw aborted;
        }
      }
    }
  };

  const handler = async (record: LogRecord, given?: AbortSignal): Promise<void> => {
    const signal = stops(given);
    const outcome = await untilDone(record, () => handle(record, signal.signal()), true, signal);
    if (!outcome) return;
    const { stuck } = outcome;
    const reason = stuck
      ? `failed ${stuck.attempts} times in a row over ${Math.round(stuck.ms / 1000)} s with an error that does not prove it bad, ${stuck.alone ? 'while no other record was handled' : 'while other records were handled'}: set aside; redrive it once the cause is fixed. Last error: ${describe(outcome.failed)}`
      : describe(outcome.failed);
    if (stuck)
      log.error(
        { ...origin(record), err: outcome.failed, deadLetterTopic: options.deadLetter.topic, attempts: stuck.attempts },
        'record keeps failing with an error that does not prove it bad while other records are handled; set aside in the dead-letter topic for a redrive',
      );
    else
      log.error(
        { ...origin(record), err: outcome.failed, deadLetterTopic: options.deadLetter.topic },
        'record cannot be handled; dead-lettered',
      );
    const sent = await untilDone(
      record,
      async () => {
        try {
          await options.deadLetter.eventLog.publish(options.deadLetter.topic, [deadLetterRecord(record, reason)]);
        } catch (error) {
          // The dead-letter topic refuses the dead letter itself (a topic made with a smaller limit
          // than the record's): not the record's fault, so it is retried in place like any failure
          // that proves nothing, holding this record's partition alone and named in readiness, until
          // an operator raises the topic's limit. It was thrown, and the whole consumer started
          // again and again, every partition handled again from its commit.
          if (error instanceof RecordRefusedError)
            throw new DeadLetterRefusedError(
              `the dead-letter topic ${options.deadLetter.topic} refuses the dead letter of this record (${error.message}); raise that topic's max.message.bytes`,
              { cause: error },
            );
          throw error;
        }
      },
      false,
      signal,
    );
    // Anything else the dead letter's publish is refused for that proves the data bad: the record
    // is kept (not committed) rather than lost.
    if (sent) throw sent.failed;
    deadLettered++;
    deadLetters.inc({ source_topic: record.topic });
  };

  return {
    handler,
    retrying() {
      let since: Date | undefined;
      for (const started of retries.values()) if (!since || started < since) since = started;
      return { count: retries.size, since, lastError };
    },
    get deadLettered() {
      return deadLettered;
    },
  };
};
