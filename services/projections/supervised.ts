/**
 * Keeps a subscription running and says how it is doing. Outages never reach here (the
 * subscription retries them in place). What does:
 * - the checkpoint moved under it (a replay was activated): it follows at once;
 * - one event the projection cannot take (`ProjectionEventError`): it stops, logs the event at
 *   error level once, reports it (readiness fails), has it recorded (`onHalted`, again until that
 *   succeeds) and waits until an operator skips that event, then resumes; it never restarts into
 *   the same failure forever;
 * - anything else: started again from its checkpoint after a growing pause (1 s … 30 s); the
 *   pause shrinks back once a restarted subscription has run for a minute.
 */
import type { Logger } from 'pino';
import type { RecordedEvent, Subscription } from '../../shared/ports/event-store.ts';
import type { ComponentReport } from '../runtime/health.ts';

/**
 * The projection failed on this one event, and the failure proves the event bad (it does not
 * decode, the database refuses its values): not an outage, nor anything that could pass.
 */
export class ProjectionEventError extends Error {
  readonly retriable = false;
  /** Where the event is, never its data: the error is logged, and the data may be personal. */
  readonly event: Pick<RecordedEvent, 'position' | 'streamId' | 'revision' | 'type' | 'id'>;
  constructor(
    readonly projection: string,
    event: Pick<RecordedEvent, 'position' | 'streamId' | 'revision' | 'type' | 'id'>,
    cause: unknown,
  ) {
    super(
      `${projection} cannot project event ${event.type} at position ${event.position} (stream ${event.streamId}, revision ${event.revision}): ${(cause as Error)?.message ?? String(cause)}`,
      { cause },
    );
    this.name = 'ProjectionEventError';
    this.event = {
      position: event.position,
      streamId: event.streamId,
      revision: event.revision,
      type: event.type,
      id: event.id,
    };
  }
}

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
  /** The stop whose record failed: recorded again at the next look for its skip. */
  let unrecorded: ProjectionEventError | undefined;
  let restarting: { since: Date; error: string } | undefined;

  const restart = (delayMs: number) => {
    timer = setTimeout(() => {
      if (stopped) return;
      current = start();
      startedAt = Date.now();
      watch(current);
    }, delayMs);
  };

  /** The stop whose failed record was logged: an outage is logged once, not at every look. */
  let warnedFor: ProjectionEventError | undefined;
  const record = (error: ProjectionEventError) => {
    if (!options.onHalted) return;
    Promise.resolve()
      .then(() => options.onHalted!(error))
      .catch((recordError: unknown) => {
        if (halted !== error) return;
        unrecorded = error;
        if (warnedFor === error) return;
        warnedFor = error;
        logger.warn(
          { err: recordError, subscription: name },
          `${name}: the stop could not be recorded in the event store; trying again while it waits`,
        );
      });
  };

  const waitForSkip = (error: ProjectionEventError) => {
    timer = setTimeout(() => void checkSkipped(error), options.skipPollMs ?? 2000);
  };

  const checkSkipped = async (error: ProjectionEventError) => {
    if (stopped) return;
    if (unrecorded === error) {
      unrecorded = undefined;
      record(error);
    }
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
          record(error);
          return waitForSkip(error);
        }
        if (Date.now() - startedAt > 60_000) failures = 0;
        failures++;
        const delayMs = Math.min(30_000, 1000 * 2 ** Math.min(failures - 1, 5));
        restarting = { since: restarting?.since ?? new Date(), error: (error as Error)?.message ?? String(error) };
        logger.error(
          { err: error, subscription: name, retryInMs: delayMs, failures },
          `${name} failed; restarting from its checkpoint`,
        );
        restart(delayMs);
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
