/**
 * An operator's retry of a failed call (POST /api/admin/calls/:callId/retry). Like an ingest, it
 * reserves the call's capacity first (the same estimate, the same rules: 402 when nothing is left
 * and auto-recharge is off), then records the retry as a `CallRetried` event in the call's stream,
 * through the call decider and with the expected version. The processor that owns the call sees
 * the event on the event store's feed (its open-calls tracker) and resumes the call from its last
 * good step, with a deadline that runs from the retry.
 *
 * A retry that is refused after the reservation (another retry got there first, the call changed)
 * gives the reservation back unless the call is pending again, in which case it is that call's.
 * It is given back only when the call, read after the failure, is seen not pending: an append of
 * unknown outcome may have stored CallRetried all the same, so a call that cannot be read then keeps
 * the reservation (released as stale by the orphan sweep if the call turns out not pending), rather
 * than a retried call running with none and never being charged.
 */
import type { FastifyBaseLogger } from 'fastify';
import { callDecider } from '../../shared/domain/call/call-decider.ts';
import type { CallRetried } from '../../shared/domain/call/call-events.ts';
import { callEvents } from '../../shared/domain/call/call-catalogue.ts';
import { isDomainError } from '../../shared/domain/decider.ts';
import { estimateCallMinutes } from '../../shared/domain/team/capacity.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import { capacityRefusals } from '../../shared/observability/metrics.ts';
import { AggregateRepository } from '../runtime/aggregate-repository.ts';
import { capacityExhausted, ProblemError } from './errors.ts';
import type { TeamService } from './teams/team-service.ts';

export interface CallRetryDeps {
  eventStore: EventStore;
  teams: TeamService;
  now?: () => Date;
}

export type RetriedCall = { callId: string; teamId: string; status: 'pending' } & CallRetried['data'];

/** Longest a retry waits for the failed call's own reservation to be given back. */
const RELEASE_WAIT_MS = 1_000;

export const createCallRetry = (deps: CallRetryDeps) => {
  const calls = new AggregateRepository(deps.eventStore, callDecider, callEvents);
  const now = deps.now ?? (() => new Date());

  return async (callId: string, log: FastifyBaseLogger): Promise<RetriedCall> => {
    const { state } = await calls.load(callId);
    if (state.status === 'absent' || state.status === 'erased')
      throw new ProblemError('NOT_FOUND', `No call ${callId}.`, {
        errors: [{ field: 'callId', message: 'must name a call' }],
      });
    // Refused before anything is reserved: the decider's own rule (a DomainError, answered 409).
    callDecider.decide(
      { type: 'RetryCall', now: now().toISOString(), capacity: { reservedMinutes: 1, autoRechargedMinutes: 0 } },
      state,
    );

    const { teamId, submission } = state.submitted;
    const reservedMinutes = estimateCallMinutes(submission);
    let autoRechargedMinutes: number;
    try {
      let reservation = await deps.teams.reserve(teamId, callId, reservedMinutes);
      // The failed call still holds a reservation: its failure gives it back a moment after
      // CallFailed is stored. Taken over, it would then be released under the retried call, which
      // would run uncharged: wait for that release (a second at most) and reserve anew. One left
      // by a process that stopped between the two writes stays; the orphan sweep judges it.
      for (let waited = 0; !reservation.reserved && waited < RELEASE_WAIT_MS; waited += 50) {
        await new Promise((resolve) => setTimeout(resolve, 50));
        // Read as stored now: the release is written by the processor, maybe in another process.
        if (!(await deps.teams.load(teamId))?.reservations.has(callId))
          reservation = await deps.teams.reserve(teamId, callId, reservedMinutes);
      }
      ({ autoRechargedMinutes } = reservation);
    } catch (error) {
      if (isDomainError(error, 'CAPACITY_EXHAUSTED')) {
        capacityRefusals.inc();
        // The call named is what needs the capacity: a retry takes no body.
        throw capacityExhausted(
          `The team's live call hours are used up; the call was not retried. Add capacity or enable auto-recharge, then retry the call again.`,
          'callId',
          reservedMinutes,
          deps.teams.directoryTeam(teamId)?.remainingMinutes ?? 0,
        );
      }
      throw error;
    }

    try {
      const { events } = await calls.handle(
        callId,
        { type: 'RetryCall', now: now().toISOString(), capacity: { reservedMinutes, autoRechargedMinutes } },
        { teamId },
      );
      const retried = events.find((e): e is CallRetried => e.type === 'CallRetried')!;
      log.warn(
        { callId, teamId, previousFailure: retried.data.previousFailure.code, resumesAt: retried.data.resumesAt },
        'call retried by an operator',
      );
      return { callId, teamId, status: 'pending', ...retried.data };
    } catch (error) {
      const after = await calls.load(callId).catch((loadError: unknown) => {
        log.warn(
          { err: loadError, callId, teamId },
          'call unreadable after a failed retry; its reservation stays (the retry may have been stored), for the orphan sweep to judge',
        );
        return undefined;
      });
      if (after !== undefined && after.state.status !== 'pending') {
        await deps.teams
          .release(teamId, callId)
          .catch((releaseError: unknown) => log.error({ err: releaseError, callId }, 'capacity release failed'));
      }
      throw error;
    }
  };
};
