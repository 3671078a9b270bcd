/**
 * The durable timer of capacity reservations. Every reservation records when it was made (in its
 * `CapacityReserved` event), so the timer survives any crash: an ingest that dies between reserving
 * and publishing, or whose publish never landed, leaves a reservation that this sweep finds. A
 * reservation older than `orphanAfterMs` whose call has no stream (no processor ever saw it) is
 * released as orphaned, and should the call be processed after all it is still charged in full. One
 * whose call already finished (a retried Idempotency-Key request reserved it again) or was erased
 * (the erasing process stopped between CallErased and the release) is released plainly. Every ingress process sweeps; a release is idempotent, so two sweeps never release twice.
 */
import type { FastifyBaseLogger } from 'fastify';
import { callDecider } from '../../../shared/domain/call/call-decider.ts';
import { callEvents } from '../../../shared/domain/call/call-catalogue.ts';
import type { EventStore } from '../../../shared/ports/event-store.ts';
import { isRetriableError } from '../../../shared/ports/unavailable.ts';
import { AggregateRepository } from '../../runtime/aggregate-repository.ts';
import type { TeamService } from './team-service.ts';

/** Default age past which a reservation with no call is released (ORPHAN_RESERVATION_MS). */
export const DEFAULT_ORPHAN_AFTER_MS = 15 * 60_000;

export interface OrphanSweepOptions {
  teams: TeamService;
  eventStore: EventStore;
  orphanAfterMs: number;
  /** How often to look; default a tenth of `orphanAfterMs`, at most one minute. */
  intervalMs?: number;
  log: Pick<FastifyBaseLogger, 'info' | 'warn'>;
  now?: () => Date;
}

export interface SweepResult {
  /** Reservations released because their call never appeared. */
  orphaned: number;
  /** Reservations released because their call had already finished. */
  stale: number;
  /** Reservations left as they were because reading their call failed (logged, each). */
  failed: number;
}

export interface OrphanSweep {
  /** One pass now (the timer runs passes too). */
  sweep(): Promise<SweepResult>;
  stop(): Promise<void>;
}

export const startOrphanSweep = (options: OrphanSweepOptions): OrphanSweep => {
  const now = options.now ?? (() => new Date());
  const calls = new AggregateRepository(options.eventStore, callDecider, callEvents);
  let running: Promise<SweepResult> | undefined;

  const pass = async (): Promise<SweepResult> => {
    const result: SweepResult = { orphaned: 0, stale: 0, failed: 0 };
    const cutoff = new Date(now().getTime() - options.orphanAfterMs).toISOString();
    for (const team of options.teams.directoryTeams()) {
      for (const [callId, reservation] of team.reservations.entries()) {
        if (reservation.at === undefined || Date.parse(reservation.at) > Date.parse(cutoff)) continue;
        try {
          const call = await calls.load(callId);
          if (call.version === -1) {
            if (await options.teams.releaseOrphan(team.teamId, callId, cutoff)) {
              result.orphaned++;
              options.log.warn(
                { teamId: team.teamId, callId, reservedAt: reservation.at, minutes: reservation.minutes },
                'released an orphaned capacity reservation: its call never reached the pipeline',
              );
            }
          } else if (call.state.status !== 'pending') {
            await options.teams.release(team.teamId, callId);
            result.stale++;
          }
        } catch (error) {
          // An outage postpones the whole pass; anything else is this call's alone (a stream with an
          // event that does not decode), and must not keep the reservations after it from their release.
          if (isRetriableError(error)) throw error;
          result.failed++;
          options.log.warn(
            { err: error, teamId: team.teamId, callId },
            'orphan reservation sweep: this reservation cannot be judged; it stays, and the sweep goes on',
          );
        }
      }
    }
    return result;
  };

  const sweep = (): Promise<SweepResult> => {
    running ??= pass().finally(() => (running = undefined));
    return running;
  };

  const timer = setInterval(
    () => {
      // A backend outage only postpones the sweep to the next tick.
      sweep().catch((error: unknown) =>
        options.log.warn({ err: error }, 'orphan reservation sweep failed; retrying at the next tick'),
      );
    },
    options.intervalMs ?? Math.min(60_000, Math.max(1000, options.orphanAfterMs / 10)),
  );
  timer.unref();

  return {
    sweep,
    async stop() {
      clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
};
