/**
 * Keeps a subscription running and says how it is doing. Outages never reach here (the
 * subscription retries them in place). What does:
 * - the checkpoint moved under it (a replay was activated): it follows at once;
 * - one event the projection cannot take (`ProjectionEventError`): it stops, logs the event at
 *   error level once, reports it (readiness fails), has it recorded (`onHalted`, again until that
 *   succeeds) and waits until an operator skips that event, then resumes; it never restarts into
 *   the same failure forever;
 * - anything else: started again from its checkpoint after a growing pause (1 s … 30 s); the
 *   pause shrinks back once a restarted subscription has run for a minute. When that failure is
 *   one event's, with an error that proves nothing against it (`UnexplainedEventError`: a bug,
 *   not an outage) and the same event has failed `STUCK_AFTER_FAILURES` times in a row, the
 *   projection is stuck on it: it goes on retrying, but logs the event at error level once,
 *   reports it (readiness names it, with the error), has it recorded (`onStuck`, again until that
 *   succeeds), and looks for an operator's skip of that event while it waits to restart
 *   (docs/decisions/0027-stuck-on-an-event.md). It is no longer stuck once it goes past the event.
 */
import type { Logger } from 'pino';
import type { RecordedEvent, Subscription } from '../../shared/ports/event-store.ts';
import type { ComponentReport } from '../runtime/health.ts';

/** Where an event is, never its data: the errors naming it are logged, and the data may be personal. */
export type EventRef = Pick<RecordedEvent, 'position' | 'streamId' | 'revision' | 'type' | 'id'>;

const refOf = (event: EventRef): EventRef => ({
  position: event.position,
  streamId: event.streamId,
  revision: event.revision,
  type: event.type,
  id: event.id,
});

/**
 * The projection failed on this one event, and the failure proves the event bad (it does not
 * decode, the database refuses its values): not an outage, nor anything that could pass.
 */
export class ProjectionEventError extends Error {
  readonly retriable = false;
  /** Where the event is, never its data: the error is logged, and the data may be personal. */
  readonly event: EventRef;
  constructor(
    readonly projection: string,
    event: EventRef,
    cause: unknown,
  ) {
    super(
      `${projection} cannot project event ${event.type} at position ${event.position} (stream ${event.streamId}, revision ${event.revision}): ${(cause as Error)?.message ?? String(cause)}`,
      { cause },
    );
    this.name = 'ProjectionEventError';
    this.event = refOf(event);
  }
}

/**
 * The projection failed on this one event with an error that proves nothing against it: not an
 * outage, not the event's data (an error nothing recognises: a bug, a statement the database
 * rejects). Restarted from the checkpoint like any failure; stuck on the event once it keeps
 * failing there.
 */
export class UnexplainedEventError extends Error {
  /** Where the event is, never its data. */
  readonly event: EventRef;
  constructor(
    readonly projection: string,
    event: EventRef,
    cause: unknown,
  ) {
    const why = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    super(
      `${projection} failed on event ${event.type} at position ${event.position} (stream ${event.streamId}, revision ${event.revision}): ${why}`,
      { cause },
    );
    this.name = 'UnexplainedEventError';
    this.event = refOf(event);
  }
}

/**
 * Failures in a row on the same event, with errors that prove nothing against it, after which a
 * projection is stuck on it: with the pauses between them (1, 2, 4, 8 s), at least 15 s of the
 * same failure on the same event, which no blip explains (outages never count: the subscription
 * retries them in place). Being stuck skips nothing: it only lets an operator skip that event.
 */
export const STUCK_AFTER_FAILURES = 5;

export interface Supervised {
  /** Resolves once the current subscription has handled everything present when called. */
  caughtUp(): Promise<void>;
  /** How it is doing, for readiness. */
  report(retryingTooLong: (since: Date) => boolean): ComponentReport;
  stop(): Promise<void>;
}

export interface SupervisedOptions {
  /** For a projection that can skip events: whether the event at `position` has been skipped since. */
  isSkipped?: (position: bigint) => Promise<boolean>;
  /** How often a stopped projection looks for the skip; default 2000 ms. */
  skipPollMs?: number;
  /**
   * Told each time it stops on an event, to record it where every process can see it: an operator
   * may skip only the event a projection is recorded as stopped on. A record that fails (its
   * promise rejects) is tried again at each look for the skip until it is stored.
   */
  onHalted?: (error: ProjectionEventError) => void | Promise<void>;
  /**
   * Told each time it gets stuck on an event (see `STUCK_AFTER_FAILURES`), with the failures so
   * far and the time of the first, to record it where every process can see it: an operator may
   * skip the event a projection is recorded as stuck on. Tried again until it is stored, as a stop.
   */
  onStuck?: (error: UnexplainedEventError, failures: number, since: Date) => void | Promise<void>;
  /** Failures in a row on one event before it is stuck on it; default `STUCK_AFTER_FAILURES`. */
  stuckAfterFailures?: number;
}

export const supervised = (
  name: string,
  start: () => Subscription,
  logger: Logger,
  options: SupervisedOptions = {},
): Supervised => {
  let current = start();
  let startedAt = Date.now();
  let stopped = false;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  let halted: ProjectionEventError | undefined;
  /** The stop or stuck event whose record failed, and its record: tried again at the next look for its skip. */
  let unrecorded: { error: ProjectionEventError | UnexplainedEventError; write: () => unknown } | undefined;
  let restarting: { since: Date; error: string } | undefined;
  /** The event the last failures in a row were on, with errors that prove nothing against it. */
  let failingOn: { position: bigint; failures: number; since: Date } | undefined;
  /** Stuck on an event: the failure that made it so, the failures so far and the first one's time. */
  let stuck: { error: UnexplainedEventError; failures: number; since: Date } | undefined;
  const stuckAfter = options.stuckAfterFailures ?? STUCK_AFTER_FAILURES;
  const skipPollMs = options.skipPollMs ?? 2000;

  const restart = (delayMs: number) => {
    timer = setTimeout(() => {
      if (stopped) return;
      current = start();
      startedAt = Date.now();
      watch(current);
    }, delayMs);
  };

  /** The stop or stuck whose failed record was logged: an outage is logged once, not at every look. */
  let warnedFor: ProjectionEventError | UnexplainedEventError | undefined;
  const record = (error: ProjectionEventError | UnexplainedEventError, write: (() => unknown) | undefined) => {
    if (!write) return;
    Promise.resolve()
      .then(write)
      .catch((recordError: unknown) => {
        if (halted !== error && stuck?.error !== error) return;
        unrecorded = { error, write };
        if (warnedFor === error) return;
        warnedFor = error;
        logger.warn(
          { err: recordError, subscription: name },
          `${name}: the ${error instanceof ProjectionEventError ? 'stop' : 'stuck event'} could not be recorded in the event store; trying again while it waits`,
        );
      });
  };
  const recordStop = (error: ProjectionEventError) => {
    const { onHalted } = options;
    record(error, onHalted && (() => onHalted(error)));
  };

  /** Records again what could not be recorded, if it still holds. */
  const recordAgain = (error: ProjectionEventError | UnexplainedEventError) => {
    if (unrecorded?.error !== error) return;
    const { write } = unrecorded;
    unrecorded = undefined;
    record(error, write);
  };

  const waitForSkip = (error: ProjectionEventError) => {
    timer = setTimeout(() => void checkSkipped(error), skipPollMs);
  };

  const checkSkipped = async (error: ProjectionEventError) => {
    if (stopped) return;
    recordAgain(error);
    const skipped = await options.isSkipped!(error.event.position).catch(() => false);
    if (!skipped) return waitForSkip(error);
    logger.warn(
      { subscription: name, position: error.event.position.toString() },
      `${name}: event skipped by an operator; resuming`,
    );
    halted = undefined;
    unrecorded = undefined;
    restart(0);
  };

  /**
   * Stuck: restarts after `delayMs` as any failure does, looking for an operator's skip of the
   * event every `skipPollMs` meanwhile; skipped, it restarts at once (past the event).
   */
  const restartOrSkip = (delayMs: number, error: UnexplainedEventError) => {
    const due = Date.now() + delayMs;
    const look = async () => {
      if (stopped) return;
      recordAgain(error);
      const skipped = await options.isSkipped!(error.event.position).catch(() => false);
      if (stopped) return;
      if (skipped) {
        logger.warn(
          { subscription: name, position: error.event.position.toString() },
          `${name}: event skipped by an operator; resuming`,
        );
        stuck = undefined;
        failingOn = undefined;
        unrecorded = undefined;
        return restart(0);
      }
      const left = due - Date.now();
      if (left <= 0) return restart(0);
      timer = setTimeout(() => void look(), Math.min(left, skipPollMs));
    };
    timer = setTimeout(() => void look(), Math.min(delayMs, skipPollMs));
  };

  /** Counts a failure on one event; stuck on it once it has failed there `stuckAfter` times in a row. */
  const failedOn = (error: UnexplainedEventError) => {
    const { position } = error.event;
    failingOn =
      failingOn?.position === position
        ? { ...failingOn, failures: failingOn.failures + 1 }
        : { position, failures: 1, since: new Date() };
    if (stuck && stuck.error.event.position !== position) stuck = undefined;
    if (stuck) {
      stuck.failures = failingOn.failures;
      return;
    }
    if (failingOn.failures < stuckAfter) return;
    const { failures: failed, since } = failingOn;
    stuck = { error, failures: failed, since };
    logger.error(
      {
        err: error,
        subscription: name,
        position: position.toString(),
        streamId: error.event.streamId,
        eventType: error.event.type,
        failures: failed,
      },
      `${name} is stuck on an event: it failed ${failed} times in a row with an error that does not prove the event bad; it goes on retrying, and if the error is a bug that only a change fixes, skip the event with: npm run admin -- skip ${error.projection} ${position} --reason "…"`,
    );
    const { onStuck } = options;
    record(error, onStuck && (() => onStuck(error, failed, since)));
  };

  /** Forgets being stuck once the subscription has gone past the event. */
  const passed = () => {
    if (stuck && current.position >= stuck.error.event.position) {
      stuck = undefined;
      failingOn = undefined;
    }
  };

  const watch = (subscription: Subscription) => {
    subscription.done.then(
      () => undefined,
      (error: unknown) => {
        if (stopped) return;
        if ((error as { code?: string }).code === 'CHECKPOINT_MISMATCH') {
          // Another writer (a replay that was activated) moved the checkpoint: follow it at once.
          logger.info({ subscription: name }, `${name}: checkpoint moved; resuming from it`);
          return restart(0);
        }
        if (error instanceof ProjectionEventError && options.isSkipped) {
          halted = error;
          logger.error(
            {
              err: error,
              subscription: name,
              position: error.event.position.toString(),
              streamId: error.event.streamId,
              eventType: error.event.type,
            },
            `${name} stopped on an event it cannot project; skip it with: npm run admin -- skip ${error.projection} ${error.event.position} --reason "…"`,
          );
          recordStop(error);
          return waitForSkip(error);
        }
        passed();
        if (error instanceof UnexplainedEventError && options.isSkipped) failedOn(error);
        if (Date.now() - startedAt > 60_000) failures = 0;
        failures++;
        const delayMs = Math.min(30_000, 1000 * 2 ** Math.min(failures - 1, 5));
        restarting = { since: restarting?.since ?? new Date(), error: (error as Error)?.message ?? String(error) };
        logger.error(
          { err: error, subscription: name, retryInMs: delayMs, failures },
          `${name} failed; restarting from its checkpoint`,
        );
        if (stuck) restartOrSkip(delayMs, stuck.error);
        else restart(delayMs);
      },
    );
  };
  watch(current);

  return {
    caughtUp: () => current.caughtUp(),
    report(retryingTooLong) {
      if (halted) {
        return {
          ready: false,
          reason: halted.message,
          position: halted.event.position.toString(),
          streamId: halted.event.streamId,
          eventType: halted.event.type,
        };
      }
      passed();
      if (stuck) {
        return {
          ready: false,
          reason: `stuck since ${stuck.since.toISOString()}, ${stuck.failures} failures in a row: ${stuck.error.message}`,
          position: stuck.error.event.position.toString(),
          streamId: stuck.error.event.streamId,
          eventType: stuck.error.event.type,
          stuck: true,
        };
      }
      const status = current.status();
      if (status.state === 'live' && restarting && Date.now() - startedAt > 60_000) restarting = undefined;
      if (status.state === 'retrying' && retryingTooLong(status.since))
        return { ready: false, reason: `retrying since ${status.since.toISOString()}: ${status.error}` };
      if (restarting && status.state !== 'live')
        return { ready: false, reason: `restarting since ${restarting.since.toISOString()}: ${restarting.error}` };
      // Still reading where to begin: as patient as with an outage, then not ready.
      if (status.state === 'starting' && retryingTooLong(status.since))
        return { ready: false, reason: `starting since ${status.since.toISOString()}: not following the feed yet` };
      return { ready: true, state: status.state };
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await current.stop();
    },
  };
};
