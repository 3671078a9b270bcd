/**
 * An `Idempotency-Key` sent with a submission (docs/decisions/0006-idempotency-key.md): the first request with a key claims it;
 * once that request is accepted, the same key with the same body replays its response for 24
 * hours, and the same key with another body is refused. A request that ends without a 201 releases
 * its claim, so a retry of it runs for real. A claim is a lease: one older than
 * `IDEMPOTENCY_CLAIM_LEASE_MS` belongs to a request that died (a crash, or a 201 whose response
 * could not be stored), and the same body may claim the key again. A release after a publish of
 * unknown outcome keeps the body: the call may exist under the key's call id, so only the same
 * body may use the key. Stream `idempotency-{keyId}-{hash of the key}`.
 */
import { Type } from '@sinclair/typebox';
import { DomainError, type Decider } from '../decider.ts';
import { type EventCatalogue, eventCatalogue } from '../event-catalogue.ts';

/** How long a key is remembered. */
export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** How long a claim holds the key against a second request with it (409 meanwhile). */
export const IDEMPOTENCY_CLAIM_LEASE_MS = 30_000;

export type IdempotencyEvent =
  | { type: 'IdempotencyKeyClaimed'; data: { bodyHash: string; at: string } }
  | { type: 'IdempotentResponseStored'; data: { status: number; body: unknown; at: string } }
  | { type: 'IdempotencyKeyReleased'; data: { at: string; outcomeUnknown?: boolean } };

export type IdempotencyState =
  | { status: 'free' }
  | { status: 'claimed'; bodyHash: string; at: string }
  /** Released after a publish that may have been written: free for the same body only. */
  | { status: 'uncertain'; bodyHash: string; at: string }
  | { status: 'stored'; bodyHash: string; at: string; response: { status: number; body: unknown } };

export type IdempotencyCommand =
  | { type: 'Claim'; bodyHash: string; now: string }
  | { type: 'StoreResponse'; status: number; body: unknown; now: string }
  | { type: 'Release'; now: string; outcomeUnknown?: boolean };

export const IDEMPOTENCY_ERROR_CODES = [
  'IDEMPOTENCY_KEY_REUSED',
  'IDEMPOTENCY_KEY_IN_USE',
  'IDEMPOTENCY_KEY_NOT_CLAIMED',
] as const;

/** The state as it stands at `now`: a claim or a stored response older than the window is forgotten. */
export const current = (state: IdempotencyState, now: string): IdempotencyState =>
  state.status !== 'free' && Date.parse(now) - Date.parse(state.at) >= IDEMPOTENCY_WINDOW_MS
    ? { status: 'free' }
    : state;

const decide = (command: IdempotencyCommand, stored: IdempotencyState): IdempotencyEvent[] => {
  switch (command.type) {
    case 'Claim': {
      const state = current(stored, command.now);
      const claim: IdempotencyEvent[] = [
        { type: 'IdempotencyKeyClaimed', data: { bodyHash: command.bodyHash, at: command.now } },
      ];
      if (state.status === 'free') return claim;
      if (state.bodyHash !== command.bodyHash)
        throw new DomainError('IDEMPOTENCY_KEY_REUSED', 'this Idempotency-Key was used with another body');
      if (state.status === 'uncertain') return claim;
      if (state.status === 'claimed') {
        if (Date.parse(command.now) - Date.parse(state.at) >= IDEMPOTENCY_CLAIM_LEASE_MS) return claim; // its request died
        throw new DomainError('IDEMPOTENCY_KEY_IN_USE', 'a request with this Idempotency-Key is still being handled');
      }
      return []; // stored: the caller replays the stored response
    }
    case 'StoreResponse':
      if (stored.status !== 'claimed')
        throw new DomainError('IDEMPOTENCY_KEY_NOT_CLAIMED', 'no claim to store a response for');
      return [
        { type: 'IdempotentResponseStored', data: { status: command.status, body: command.body, at: command.now } },
      ];
    case 'Release':
      if (stored.status !== 'claimed') return [];
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
    case 'IdempotencyKeyClaimed':
      return { status: 'claimed', bodyHash: event.data.bodyHash, at: event.data.at };
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
        ? { status: 'uncertain', bodyHash: state.bodyHash, at: state.at }
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
  IdempotencyKeyClaimed: { schema: Type.Object({ bodyHash: Type.String(), at: Instant }) },
  IdempotentResponseStored: { schema: Type.Object({ status: Type.Integer(), body: Type.Unknown(), at: Instant }) },
  IdempotencyKeyReleased: { schema: Type.Object({ at: Instant, outcomeUnknown: Type.Optional(Type.Boolean()) }) },
});

/** The stream of one idempotency key: `idempotency-{id}`. */
export const idempotencyStreamId = idempotencyEvents.streamId;
