/**
 * Erasure requests by e-mail (docs/decisions/0014-erasure-crypto-shredding.md): the request fixes
 * its calls and is stored, then its calls are erased one by one in the background and it completes.
 * A request this process is not working on and that has not completed (its process stopped, or a
 * backend was down) is taken up again when it is read, and by every ingress process at start and
 * every minute after (`startResuming`), so that a request nobody reads again is still finished:
 * erasing a call twice is harmless.
 *
 * The calls are found in the call history, so a request waits (SUBMISSION_WAIT_MS at most) until
 * the history holds every call the team has accepted and not yet finished (each call the team holds
 * a reservation for): a call accepted while the processors are down or behind is on the log, not
 * yet in its stream or the history, and a request made then would have missed it and completed
 * with the call kept. Still missing after the wait, the request is refused as retriable
 * (CallsNotInHistoryError, a 503): nothing is requested, and a retry covers them once stored.
 *
 * A call that cannot be erased for a reason of its own (its stream holds an event this version does
 * not decode) would fail again at every attempt: it is logged by its id, the work goes on to the
 * calls after it, and the request completes naming it in `failed` with the error's code, so the
 * operator sees that it was not erased and why, and the request does not start over at every read.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import {
  erasureDecider,
  erasureEvents,
  type ErasureFailure,
  type ErasureState,
} from '../../shared/domain/erasure/erasure-request.ts';
import { callEvents } from '../../shared/domain/call/call-catalogue.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import type { CallHistoryStore } from '../../shared/ports/read-models.ts';
import { isRetriableError } from '../../shared/ports/unavailable.ts';
import { AggregateRepository } from '../runtime/aggregate-repository.ts';
import { type CallEraser, SUBMISSION_WAIT_MS } from './call-eraser.ts';
import type { TeamService } from './teams/team-service.ts';

/** The team has accepted calls the call history does not hold yet: a request now would miss them. */
export class CallsNotInHistoryError extends Error {
  override readonly name = 'CallsNotInHistoryError';
  readonly code = 'CALLS_NOT_YET_STORED';
  readonly retriable = true;
  constructor(readonly missing: number) {
    super(`${missing} call(s) of this team were accepted but are not in the call history yet`);
  }
}

export interface ErasureRequestsDeps {
  eventStore: EventStore;
  callHistory: CallHistoryStore;
  /** The teams' reservations: the calls accepted and not yet finished, which the history must hold first. */
  teams: Pick<TeamService, 'load'>;
  /** How long a request waits for the history to hold them (default SUBMISSION_WAIT_MS). */
  historyWaitMs?: number;
  erase: CallEraser;
  log: Pick<FastifyBaseLogger, 'info' | 'warn' | 'error'>;
  now?: () => Date;
}

/** How often every ingress process looks for pending erasure requests nobody works on. */
export const RESUME_INTERVAL_MS = 60_000;

export type ErasureView = Extract<ErasureState, { status: 'pending' | 'completed' }>;

/**
 * What a failed call is recorded with: the error's code when it has one of the usual shape
 * (EVENT_DECODE_FAILED, a domain error's), never its message, which is stored with the request.
 */
const failureCode = (error: unknown): string => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[A-Z][A-Z0-9_]{0,63}$/.test(code) ? code : 'UNEXPECTED_ERROR';
};

export const createErasureRequests = (deps: ErasureRequestsDeps) => {
  const requests = new AggregateRepository(deps.eventStore, erasureDecider, erasureEvents);
  const now = deps.now ?? (() => new Date());
  const working = new Map<string, Promise<void>>();
  /** Where the next scan for pending requests starts (see `resumePending`). */
  let scanAfter = 0n;

  const work = (request: ErasureView): void => {
    if (working.has(request.erasureId)) return;
    const run = (async () => {
      let erased = 0;
      const failed: ErasureFailure[] = [];
      for (const callId of request.calls) {
        try {
          if ((await deps.erase(request.teamId, callId, 'erasure_request', request.erasureId)) === 'erased') erased++;
        } catch (error) {
          // An outage ends the work (the request stays pending, taken up again when read); anything
          // else is this call's alone, and must not keep the request's other calls from their erasure.
          if (isRetriableError(error)) throw error;
          failed.push({ callId, code: failureCode(error) });
          deps.log.warn(
            { err: error, erasureId: request.erasureId, teamId: request.teamId, callId },
            'erasure request: this call cannot be erased; the request names it as failed, and goes on',
          );
        }
      }
      await requests.handle(request.erasureId, { type: 'CompleteErasure', now: now().toISOString(), failed });
      deps.log.info(
        {
          erasureId: request.erasureId,
          teamId: request.teamId,
          calls: request.calls.length,
          erased,
          failed: failed.length,
        },
        failed.length > 0
          ? 'erasure request completed; some of its calls could not be erased'
          : 'erasure request completed',
      );
    })()
      .catch((error: unknown) =>
        deps.log.error(
          { err: error, erasureId: request.erasureId },
          'erasure request failed; it is taken up again when it is read',
        ),
      )
      .finally(() => working.delete(request.erasureId));
    working.set(request.erasureId, run);
  };

  /**
   * A call whose reservation was let go while the request waited: one stored and not erased
   * (finished; its history row may still be on its way) is waited for like the reserved ones; one
   * never stored (its reservation released, nothing to find) is not.
   */
  const storedNotErased = async (callId: string): Promise<boolean> => {
    const events = await deps.eventStore.readStream(callEvents.streamId(callId));
    return events.length > 0 && events.at(-1)!.type !== 'CallErased';
  };

  /** Resolves once the history holds every call the team holds a reservation for; see CallsNotInHistoryError. */
  const historyHoldsAccepted = async (teamId: string): Promise<void> => {
    const deadline = Date.now() + (deps.historyWaitMs ?? SUBMISSION_WAIT_MS);
    let waiting = [...((await deps.teams.load(teamId))?.reservations.entries() ?? [])].map(([callId]) => callId);
    for (;;) {
      const missing: string[] = [];
      for (const callId of waiting) if (!(await deps.callHistory.get(teamId, callId))) missing.push(callId);
      if (missing.length === 0) return;
      const reserved = (await deps.teams.load(teamId))?.reservations;
      waiting = [];
      for (const callId of missing) if (reserved?.has(callId) || (await storedNotErased(callId))) waiting.push(callId);
      if (waiting.length === 0) return;
      if (Date.now() > deadline) throw new CallsNotInHistoryError(waiting.length);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  };

  const api = {
    /**
     * Stores the request (its calls fixed now) and starts erasing them; returns its id.
     * @throws CallsNotInHistoryError when calls the team accepted are still not in the history.
     */
    async request(teamId: string, email: string): Promise<string> {
      await historyHoldsAccepted(teamId);
      const calls = await deps.callHistory.callsOfEmail(teamId, email);
      const erasureId = randomUUID();
      const { state } = await requests.handle(erasureId, {
        type: 'RequestErasure',
        erasureId,
        teamId,
        calls,
        now: now().toISOString(),
      });
      if (state.status !== 'absent') work(state);
      return erasureId;
    },
    /** The team's request, or undefined; a pending one nobody works on is taken up again. */
    async get(teamId: string, erasureId: string): Promise<ErasureView | undefined> {
      const { state } = await requests.load(erasureId);
      if (state.status === 'absent' || state.teamId !== teamId) return undefined;
      if (state.status === 'pending') work(state);
      return state;
    },
    /**
     * Takes up every pending request this process is not working on; resolves with how many it found.
     * Reads the `erasure` category from the earliest request a scan left pending onwards.
     */
    async resumePending(): Promise<number> {
      // Each pending request with the position read just before it (a position the store gave, so
      // a valid place to read after on every store, KurrentDB's included).
      const pending = new Map<string, bigint>();
      let after = scanAfter;
      for (;;) {
        const events = await deps.eventStore.readAll({ after, maxCount: 500, categories: [erasureEvents.category] });
        if (events.length === 0) break;
        for (const event of events) {
          const before = after;
          after = event.position;
          const erasureId = erasureEvents.idOf(event.streamId);
          if (erasureId === undefined) continue;
          if (event.type === 'ErasureRequested') pending.set(erasureId, before);
          else if (event.type === 'ErasureCompleted') pending.delete(erasureId);
        }
      }
      // The next scan starts at the earliest request still pending, or where this one ended.
      scanAfter = pending.size > 0 ? [...pending.values()].reduce((x, y) => (x < y ? x : y)) : after;
      for (const erasureId of pending.keys()) {
        if (working.has(erasureId)) continue;
        const { state } = await requests.load(erasureId);
        if (state.status === 'pending') work(state);
      }
      return pending.size;
    },
    /** Runs `resumePending` now and every `intervalMs` until stopped; a failure is logged and tried at the next. */
    startResuming(intervalMs = RESUME_INTERVAL_MS): { stop(): Promise<void> } {
      let running: Promise<unknown> | undefined;
      const tick = () => {
        running ??= api
          .resumePending()
          .catch((error: unknown) =>
            deps.log.warn({ err: error }, 'pending erasure requests could not be read; trying again at the next scan'),
          )
          .finally(() => (running = undefined));
      };
      const timer = setInterval(tick, intervalMs);
      timer.unref();
      tick();
      return {
        async stop() {
          clearInterval(timer);
          await running;
        },
      };
    },
    /** Waits for the requests this process is working on. */
    async close(): Promise<void> {
      await Promise.all(working.values());
    },
  };
  return api;
};

export type ErasureRequests = ReturnType<typeof createErasureRequests>;
