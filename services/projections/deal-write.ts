/**
 * Where the deal write a `deal.outcome.updated` tells of stands in the deals read model. The webhook
 * delivery worker sends the notification only once the deal record is written, as
 * deals.outcome-updated.v1 is published only then; it must not wait for a record that will never
 * be written (docs/decisions/0012-webhook-outbox.md). The deal projection stores its checkpoint in
 * the same transaction as its records, so a checkpoint past the deal write with neither its record
 * nor a later one of the call in the read model means the projection went past it for good: an
 * operator skipped the DealRecorded for it (or an event the record is built from).
 */
import { callEvents } from '../../shared/domain/call/call-catalogue.ts';
import { dealEventId } from '../../shared/domain/call/deal-record.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import type { DealStore } from '../../shared/ports/read-models.ts';
import { skippedPositions } from './skipped-events.ts';

/** The deal write a `deal.outcome.updated` delivery tells of. */
export interface DealWrite {
  callId: string;
  /** The deal write's id (the delivery's `webhook-id`, the topic's `ce_id`). */
  eventId: string;
  /** The deal's `recordedAt` as the delivery's body tells it. */
  recordedAt: string | undefined;
}

export type DealWriteState =
  /** Its deal record is in the read model, or a later write of the same call replaced it. */
  | { state: 'written' }
  /** The deal projection has not reached it yet (or is stopped before it). */
  | { state: 'pending' }
  /** The deal projection went past it without writing its record: it never will; `reason` says why. */
  | { state: 'never'; reason: string };

/** Deal write positions remembered (a write's position never changes); the oldest are forgotten first. */
const REMEMBERED_POSITIONS = 10_000;

/**
 * Reads where a deal write stands: `deals` for its record and the deal projection's checkpoint,
 * `events` (the store as written; only positions and types are read) for the write's position.
 */
export const dealWriteState = (deals: Pick<DealStore, 'get' | 'checkpoint'>, events: EventStore) => {
  const positions = new Map<string, bigint>();
  const positionOf = async ({ callId, eventId }: DealWrite): Promise<bigint | undefined> => {
    const known = positions.get(eventId);
    if (known !== undefined) return known;
    const stream = await events.readStream(callEvents.streamId(callId));
    const write = stream.find((e) => e.type === 'DealRecorded' && dealEventId(callId, e.revision) === eventId);
    if (!write) return undefined;
    if (positions.size >= REMEMBERED_POSITIONS) positions.delete(positions.keys().next().value!);
    positions.set(eventId, write.position);
    return write.position;
  };

  return async (write: DealWrite): Promise<DealWriteState> => {
    // The checkpoint first: a record the projection wrote with it (or before) is then read below.
    const checkpoint = await deals.checkpoint();
    const record = await deals.get(write.callId);
    if (record?.eventId === write.eventId) return { state: 'written' };
    // A later write replaces the record, so this write's own is never seen again.
    if (record && write.recordedAt !== undefined && Date.parse(record.recordedAt) >= Date.parse(write.recordedAt))
      return { state: 'written' };
    const position = await positionOf(write);
    if (position === undefined || position > checkpoint) return { state: 'pending' };
    const why = (await skippedPositions(events, 'deals')).has(position)
      ? `an operator skipped its deal write (position ${position}) for the deals projection`
      : `the deals projection went past its deal write (position ${position}) without writing a deal record`;
    return {
      state: 'never',
      reason: `not sent: ${why}, so its deal record is never written and deals.outcome-updated.v1 never carries it`,
    };
  };
};
