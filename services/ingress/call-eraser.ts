/**
 * Erasing one call (docs/decisions/0014-erasure-crypto-shredding.md): CallErased is appended to its
 * stream, then its data key is destroyed, so every stored and published copy of its personal fields
 * is unreadable at once, then a pending call's capacity reservation is released (as a failure would
 * release it; a finished call's was settled or released already). The projections drop its rows
 * when CallErased reaches them, and destroy the key again (idempotent) in case this process stopped
 * between the append and the destruction.
 *
 * The release comes after the append, never before: a release followed by a failed append (or a
 * crash) left the call pending with no reservation, and the processor then ran it free of charge
 * (its settlement found nothing to settle). The other way round, a process that stops after the
 * append leaves the reservation of a call no longer pending, which the orphan sweep releases.
 */
import type { PersonalData } from '../../shared/adapters/crypto/personal-data.ts';
import { callDecider } from '../../shared/domain/call/call-decider.ts';
import type { CallState } from '../../shared/domain/call/call-state.ts';
import type { ErasureCause } from '../../shared/domain/call/call-events.ts';
import { callEvents } from '../../shared/domain/call/call-catalogue.ts';
import { isDomainError } from '../../shared/domain/decider.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import { AggregateRepository, type Versioned } from '../runtime/aggregate-repository.ts';
import type { TeamService } from './teams/team-service.ts';

/** Longest wait for the CallSubmitted of a call accepted but not yet stored. */
export const SUBMISSION_WAIT_MS = 5_000;

export interface CallEraserDeps {
  eventStore: EventStore;
  teams: Pick<TeamService, 'release' | 'load'>;
  personalData: PersonalData;
  now?: () => Date;
  /** Longest wait for a call accepted but not yet stored (default SUBMISSION_WAIT_MS). */
  submissionWaitMs?: number;
}

/**
 * A call accepted (its team still holds a reservation for it) whose CallSubmitted has not reached
 * its stream within the wait: a processor that is down or behind. Nothing was erased, and the call
 * will be processed with its personal data once it lands, so this is no "absent" (a 404 would tell
 * the caller there is nothing to erase): it is retriable, answered 503 with Retry-After, and the
 * caller's retry erases the call once it is stored. A reservation whose call never lands (the ingest
 * died before publishing) is released by the orphan sweep, after which the call is absent.
 */
export class CallNotYetStoredError extends Error {
  override readonly name = 'CallNotYetStoredError';
  readonly code = 'CALL_NOT_YET_STORED';
  readonly retriable = true;
  constructor(readonly callId: string) {
    super(`call ${callId} was accepted but is not stored yet; it cannot be erased until it is`);
  }
}

/** `erased`: erased now; `absent`: no such call in that team, or it was erased already. */
export type EraseOutcome = 'erased' | 'absent';

export type CallEraser = (
  teamId: string,
  callId: string,
  cause: ErasureCause,
  erasureId?: string,
) => Promise<EraseOutcome>;

export const createCallEraser = (deps: CallEraserDeps): CallEraser => {
  const calls = new AggregateRepository(deps.eventStore, callDecider, callEvents);
  const now = deps.now ?? (() => new Date());
  /**
   * A call accepted a moment ago may be on the log and not yet in its stream: while the team holds
   * a reservation for it, its CallSubmitted is waited for (a few seconds at most), so it is erased
   * rather than answered 404. Still not stored then, with the reservation still held, it is a
   * CallNotYetStoredError: the caller is to try again, not told there is no such call.
   */
  const loadSubmitted = async (teamId: string, callId: string) => {
    const deadline = Date.now() + (deps.submissionWaitMs ?? SUBMISSION_WAIT_MS);
    for (;;) {
      const loaded = await calls.load(callId);
      if (loaded.state.status !== 'absent') return loaded;
      const team = await deps.teams.load(teamId);
      // No reservation: the call landed since the read above (and was settled, or released at a
      // failure, at once), or it never was accepted. Read again, so a fast call is not missed.
      if (!team?.reservations.has(callId)) return calls.load(callId);
      if (Date.now() > deadline) throw new CallNotYetStoredError(callId);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  /**
   * Whether the call was pending just before its CallErased (at `erasedAt`): read again when
   * anything was appended between the eraser's read and its erasure (an operator's retry of a failed
   * call reserves capacity again), so that the reservation such a call holds is not left behind.
   */
  const pendingBefore = async (callId: string, read: Versioned<CallState>, erasedAt: number): Promise<boolean> => {
    if (erasedAt === read.version + 1) return read.state.status === 'pending';
    let state = callDecider.initialState;
    for (const event of await deps.eventStore.readStream(callEvents.streamId(callId)))
      if (event.revision < erasedAt) state = callDecider.evolve(state, callEvents.decode(event));
    return state.status === 'pending';
  };

  return async (teamId, callId, cause, erasureId) => {
    const read = await loadSubmitted(teamId, callId);
    const { state } = read;
    if (state.status === 'absent' || state.status === 'erased' || state.submitted.teamId !== teamId) return 'absent';
    let erasedAt: number;
    try {
      erasedAt = (
        await calls.handle(
          callId,
          { type: 'EraseCall', cause, ...(erasureId ? { erasureId } : {}), now: now().toISOString() },
          { teamId },
        )
      ).version;
    } catch (error) {
      // Erased meanwhile by another request: the second one finds nothing to erase.
      if (isDomainError(error, 'CALL_ERASED')) return 'absent';
      throw error;
    }
    // Before the key goes: the events before the erasure may have to be read again.
    const wasPending = await pendingBefore(callId, read, erasedAt);
    await deps.personalData.erase(callId);
    // Nothing settles an erased call: the reservation of a call erased while pending is released
    // here, or by the orphan sweep.
    if (wasPending) await deps.teams.release(teamId, callId);
    return 'erased';
  };
};
