/**
 * An erasure request by e-mail (docs/decisions/0014-erasure-crypto-shredding.md), stream
 * `erasure-{erasureId}`: the calls it covers are fixed when it is made (the team's calls whose rep
 * e-mail or attributed member is the address), then each is erased, then it completes. The
 * address itself is never stored: the list of call ids is what the request is.
 *
 *   ErasureRequested → ErasureCompleted
 */
import { DomainError, type Decider } from '../decider.ts';

export type ErasureRequested = {
  type: 'ErasureRequested';
  data: { erasureId: string; teamId: string; calls: string[]; at: string };
};
export type ErasureCompleted = { type: 'ErasureCompleted'; data: { at: string } };
export type ErasureEvent = ErasureRequested | ErasureCompleted;

export type ErasureCommand =
  | { type: 'RequestErasure'; erasureId: string; teamId: string; calls: string[]; now: string }
  | { type: 'CompleteErasure'; now: string };

export type ErasureState =
  | { status: 'absent' }
  | {
      status: 'pending' | 'completed';
      erasureId: string;
      teamId: string;
      calls: string[];
      requestedAt: string;
      completedAt?: string;
    };

export const erasureStreamId = (erasureId: string): string => `erasure-${erasureId}`;

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
        return state.status === 'completed' ? [] : [{ type: 'ErasureCompleted', data: { at: command.now } }];
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
        return state.status === 'absent' ? state : { ...state, status: 'completed', completedAt: event.data.at };
    }
  },
};
