/**
 * An `Idempotency-Key` sent with a submission (docs/decisions/0006-idempotency-key.md): the first request with a key claims it;
 * once that request is accepted, the same key with the same body replays its response for 24
 * hours, and the same key with another body is refused. A request that ends without a 201 releases
 * its claim, so a retry of it runs for real. A claim is a lease: one older than
 * `IDEMPOTENCY_CLAIM_LEASE_MS` belongs to a request that died (a crash, or a 201 whose response
 * could not be stored), and the same body may claim the key again. A release after a publish of
 * unknown outcome keeps the body: the call may exist under the key's call id, so only the same
 * body may use the key. Stream `idempotency-{keyId}-{hash of the key}`.
 *
 * The claim names the call: a claim of a free key takes the call id the command proposes, and a
 * claim that takes over from an earlier request (its lease ran out, or its publish had an unknown
 * outcome) keeps that request's call id, so every attempt of one request submits one call. A key
 * used again after the window is a new request and names a new call.
 *
 * The claim also names its attempt: once another attempt has taken the claim over, a late answer
 * of the one before (its release, or its response) changes nothing, since the call is now the
 * other attempt's to accept.
 */
import { Type } from '@sinclair/typebox';
import { DomainError, type Decider } from '../decider.ts';
import { type EventCatalogue, eventCatalogue } from '../event-catalogue.ts';

/** How long a key is remembered. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** How long a claim holds the key against a second request with it (409 meanwhile). */
export const IDEMPOTENCY_CLAIM_LEASE_MS = 30_000;

export type IdempotencyEvent =
  /**
   * `callId` and `attempt` are absent from claims stored before claims named them: the ingress then
   * derives the call id from the key, and any attempt may answer for the claim.
   */
  | { type: 'IdempotencyKeyClaimed'; data: { bodyHash: string; at: string; callId?: string; attempt?: string } }
  /**
   * `body` is the 201 without its `warnings` (they may quote personal data; a replay rebuilds them
   * from its own request). One stored by an earlier version holds them; they are not replayed.
   */
  | { type: 'IdempotentResponseStored'; data: { status: number; body: unknown; at: string } }
  | { type: 'IdempotencyKeyReleased'; data: { at: string; outcomeUnknown?: boolean } };

export type IdempotencyState =
  | { status: 'free' }
  | { status: 'claimed'; bodyHash: string; at: string; callId?: string; attempt?: string }
  /** Released after a publish that may have been written: free for the same body only. */
  | { status: 'uncertain'; bodyHash: string; at: string; callId?: string }
  | { status: 'stored'; bodyHash: string; at: string; response: { status: number; body: unknown } };

export type IdempotencyCommand =
  /** `callId`: the call this request submits if the key is free; `attempt`: this request's own id. */
  | { type: 'Claim'; bodyHash: string; now: string; callId: string; attempt: string }
  | { type: 'StoreResponse'; status: number; body: unknown; now: string; attempt: string }
  | { type: 'Release'; now: string; outcomeUnknown?: boolean; attempt: string };

export const IDEMPOTENCY_ERROR_CODES = [
  'IDEMPOTENCY_KEY_REUSED',
  'IDEMPOTENCY_KEY_IN_USE',
  'IDEMPOTENCY_KEY_NOT_CLAIMED',
] as const;

/**
 * IDEMPOTENCY_KEY_IN_USE: another request of this body holds the key. Its claim's lease ends at
 * `leaseEndsAt`, after which the key may be claimed again; the holder's release may free it sooner.
 */
export class IdempotencyKeyInUseError extends DomainError<'IDEMPOTENCY_KEY_IN_USE'> {
  constructor(readonly leaseEndsAt: string) {
    super('IDEMPOTENCY_KEY_IN_USE', 'a request with this Idempotency-Key is still being handled');
  }
}

/** When a claim made at `at` stops holding its key against another request. */
export const leaseEndOf = (at: string): string => new Date(Date.parse(at) + IDEMPOTENCY_CLAIM_LEASE_MS).toISOString();

/** The state as it stands at `now`: a claim or a stored response older than the window is forgotten. */
export const current = (state: IdempotencyState, now: string): IdempotencyState =>
  state.status !== 'free' && Date.parse(now) - Date.parse(state.at) >= IDEMPOTENCY_WINDOW_MS
    ? { status: 'free' }
    : state;

/** Whether another attempt than `attempt` holds the claim now (a claim that names none: no). */
const takenOver = (claim: Extract<IdempotencyState, { status: 'claimed' }>, attempt: string): boolean =>
  claim.attempt !== undefined && claim.attempt !== attempt;

const decide = (command: IdempotencyCommand, stored: IdempotencyState): IdempotencyEvent[] => {
  switch (command.type) {
    case 'Claim': {
      const state = current(stored, command.now);
      const claim = (callId: string | undefined): IdempotencyEvent[] => [
        {
          type: 'IdempotencyKeyClaimed',
          data: {
            bodyHash: command.bodyHash,
            at: command.now,
            ...(callId === undefined ? {} : { callId }),
            attempt: command.attempt,
          },
        },
      ];
      if (state.status === 'free') return claim(command.callId);
      if (state.bodyHash !== command.bodyHash)
        throw new DomainError('IDEMPOTENCY_KEY_REUSED', 'this Idempotency-Key was used with another body');
      // Taking over from an earlier request of this body: its call, which may exist.
      if (state.status === 'uncertain') return claim(state.callId);
      if (state.status === 'claimed') {
        if (Date.parse(command.now) - Date.parse(state.at) >= IDEMPOTENCY_CLAIM_LEASE_MS) return claim(state.callId); // its request died
        throw new IdempotencyKeyInUseError(leaseEndOf(state.at));
      }
      return []; // stored: the caller replays the stored response
    }
    case 'StoreResponse':
      if (stored.status !== 'claimed')
        throw new DomainError('IDEMPOTENCY_KEY_NOT_CLAIMED', 'no claim to store a response for');
      if (takenOver(stored, command.attempt)) return [];
      return [
        { type: 'IdempotentResponseStored', data: { status: command.status, body: command.body, at: command.now } },
      ];
    case 'Release':
      if (stored.status !== 'claimed' || takenOver(stored, command.attempt)) return [];
      return [
        {
          type: 'IdempotencyKeyReleased',
          data: command.outcomeUnknown ? { at: command.now, outcomeUnknown: true } : { at: command.now },
        },
      ];
    default: {
      const unhandled: never = command;
      throw new Error(`unknown idempotency command ${(unhandled as { type: string }).type}`);
    }
  }
};

const evolve = (state: IdempotencyState, event: IdempotencyEvent): IdempotencyState => {
  switch (event.type) {
    case 'IdempotencyKeyClaimed': {
      const { bodyHash, at, callId, attempt } = event.data;
      return {
        status: 'claimed',
        bodyHash,
        at,
        ...(callId === undefined ? {} : { callId }),
        ...(attempt === undefined ? {} : { attempt }),
      };
    }
    case 'IdempotentResponseStored':
      return state.status === 'claimed'
        ? {
            status: 'stored',
            bodyHash: state.bodyHash,
            at: state.at,
            response: { status: event.data.status, body: event.data.body },
          }
        : state;
    case 'IdempotencyKeyReleased':
      return event.data.outcomeUnknown && state.status === 'claimed'
        ? {
            status: 'uncertain',
            bodyHash: state.bodyHash,
            at: state.at,
            ...(state.callId === undefined ? {} : { callId: state.callId }),
          }
        : { status: 'free' };
  }
};

export const idempotencyDecider: Decider<IdempotencyCommand, IdempotencyState, IdempotencyEvent> = {
  decide,
  evolve,
  initialState: { status: 'free' },
};

const Instant = Type.String({ format: 'date-time' });

/** The catalogue of category `idempotency` (docs/decisions/0016-event-catalogues-and-upcasting.md); every type at version 1. */
export const idempotencyEvents: EventCatalogue<IdempotencyEvent> = eventCatalogue<IdempotencyEvent>('idempotency', {
  IdempotencyKeyClaimed: {
    schema: Type.Object({
      bodyHash: Type.String(),
      at: Instant,
      callId: Type.Optional(Type.String()),
      attempt: Type.Optional(Type.String()),
    }),
  },
  IdempotentResponseStored: { schema: Type.Object({ status: Type.Integer(), body: Type.Unknown(), at: Instant }) },
  IdempotencyKeyReleased: { schema: Type.Object({ at: Instant, outcomeUnknown: Type.Optional(Type.Boolean()) }) },
});

/** The stream of one idempotency key: `idempotency-{id}`. */
export const idempotencyStreamId = idempotencyEvents.streamId;
