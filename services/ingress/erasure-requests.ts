/**
 * Erasure requests by e-mail (docs/decisions/0014-erasure-crypto-shredding.md): the request fixes
 * its calls and is stored, then its calls are erased one by one in the background and it completes.
 * A request this process is not working on and that has not completed (its process stopped) is
 * taken up again when it is read: erasing a call twice is harmless.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import { erasureDecider, erasureEvents, type ErasureState } from '../../shared/domain/erasure/erasure-request.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import type { CallHistoryStore } from '../../shared/ports/read-models.ts';
import { AggregateRepository } from '../runtime/aggregate-repository.ts';
import type { CallEraser } from './call-eraser.ts';

export interface ErasureRequestsDeps {
  eventStore: EventStore;
  callHistory: CallHistoryStore;
  erase: CallEraser;
  log: Pick<FastifyBaseLogger, 'info' | 'error'>;
  now?: () => Date;
}

export type ErasureView = Extract<ErasureState, { status: 'pending' | 'completed' }>;

export const createErasureRequests = (deps: ErasureRequestsDeps) => {
  const requests = new AggregateRepository(deps.eventStore, erasureDecider, erasureEvents);
  const now = deps.now ?? (() => new Date());
  const working = new Map<string, Promise<void>>();

  const work = (request: ErasureView): void => {
    if (working.has(request.erasureId)) return;
    const run = (async () => {
      let erased = 0;
      for (const callId of request.calls)
        if ((await deps.erase(request.teamId, callId, 'erasure_request', request.erasureId)) === 'erased') erased++;
      await requests.handle(request.erasureId, { type: 'CompleteErasure', now: now().toISOString() });
      deps.log.info(
        { erasureId: request.erasureId, teamId: request.teamId, calls: request.calls.length, erased },
        'erasure request completed',
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

  return {
    /** Stores the request (its calls fixed now) and starts erasing them; returns its id. */
    async request(teamId: string, email: string): Promise<string> {
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
    /** Waits for the requests this process is working on. */
    async close(): Promise<void> {
      await Promise.all(working.values());
    },
  };
};

export type ErasureRequests = ReturnType<typeof createErasureRequests>;
