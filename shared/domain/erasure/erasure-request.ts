/**
 * An erasure request by e-mail (docs/decisions/0014-erasure-crypto-shredding.md), stream
 * `erasure-{erasureId}`: the calls it covers are fixed when it is made (the team's calls whose rep
 * e-mail or attributed member is the address), then each is erased, then it completes. The
 * address itself is never stored: the list of call ids is what the request is. A call that could
 * not be erased (not for an outage, which leaves the request pending, but for a reason of its own)
 * is named in `failed` when it completes, with the error's code: the request never claims it.
 *
 *   ErasureRequested → ErasureCompleted
 */
import { Type } from '@sinclair/typebox';
import { DomainError, type Decider } from '../decider.ts';
import { type EventCatalogue, eventCatalogue } from '../event-catalogue.ts';

export type ErasureRequested = {
  type: 'ErasureRequested';
  data: { erasureId: string; teamId: string; calls: string[]; at: string };
};
/** A call of the request that was not erased, and the code of the error that kept it (no message: no data). */
export type ErasureFailure = { callId: string; code: string };
export type ErasureCompleted = { type: 'ErasureCompleted'; data: { at: string; failed?: ErasureFailure[] } };
export type ErasureEvent = ErasureRequested | ErasureCompleted;

export type ErasureCommand =
  | { type: 'RequestErasure'; erasureId: string; teamId: string; calls: string[]; now: string }
  | { type: 'CompleteErasure'; now: string; failed?: ErasureFailure[] };

export type ErasureState =
  | { status: 'absent' }
  | {
      status: 'pending' | 'completed';
      erasureId: string;
      teamId: string;
      calls: string[];
      requestedAt: string;
      completedAt?: string;
      /** Once completed: the calls it could not erase (none when absent). */
      failed?: ErasureFailure[];
    };

const Instant = Type.String({ format: 'date-time' });

/** The catalogue of category `erasure` (docs/decisions/0016-event-catalogues-and-upcasting.md); every type at version 1. */
export const erasureEvents: EventCatalogue<ErasureEvent> = eventCatalogue<ErasureEvent>('erasure', {
  ErasureRequested: {
    schema: Type.Object({
      erasureId: Type.String({ minLength: 1 }),
      teamId: Type.String({ minLength: 1 }),
      calls: Type.Array(Type.String()),
      at: Instant,
    }),
  },
  ErasureCompleted: {
    schema: Type.Object({
      at: Instant,
      // Absent on requests completed before failures were recorded, and when every call was erased.
      failed: Type.Optional(
        Type.Array(Type.Object({ callId: Type.String({ minLength: 1 }), code: Type.String({ minLength: 1 }) })),
      ),
    }),
  },
});

/** The stream of one erasure request: `erasure-{erasureId}`. */
export const erasureStreamId = erasureEvents.streamId;

export const erasureDecider: Decider<ErasureCommand, ErasureState, ErasureEvent> = {
  initialState: { status: 'absent' },
  decide(command, state) {
    switch (command.type) {
      case 'RequestErasure':
        if (state.status !== 'absent') return [];
        return [
          {
            type: 'ErasureRequested',
            data: { erasureId: command.erasureId, teamId: command.teamId, calls: [...command.calls], at: command.now },
          },
        ];
      case 'CompleteErasure':
        if (state.status === 'absent')
          throw new DomainError('ERASURE_NOT_FOUND', 'The erasure request does not exist.');
        return state.status === 'completed'
          ? []
          : [
              {
                type: 'ErasureCompleted',
                data: { at: command.now, ...(command.failed?.length ? { failed: [...command.failed] } : {}) },
              },
            ];
    }
  },
  evolve(state, event) {
    switch (event.type) {
      case 'ErasureRequested':
        return {
          status: 'pending',
          erasureId: event.data.erasureId,
          teamId: event.data.teamId,
          calls: event.data.calls,
          requestedAt: event.data.at,
        };
      case 'ErasureCompleted':
        return state.status === 'absent'
          ? state
          : {
              ...state,
              status: 'completed',
              completedAt: event.data.at,
              ...(event.data.failed ? { failed: event.data.failed } : {}),
            };
    }
  },
};
