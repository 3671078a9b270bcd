/** The deal facts of a batch: calls submitted with a deal, and deal writes. */
import { type DealCall, dealCallOf, type RecordedDeal } from '../../domain/call/deal-record.ts';
import { callEvents } from '../../domain/call/call-catalogue.ts';
import type { RecordedEvent } from '../../ports/event-store.ts';

export interface DealBatch {
  /** Calls submitted with deal data: kept until their deal is recorded. */
  calls: DealCall[];
  /** Deal writes in feed order. */
  writes: Array<{ callId: string; position: bigint; recorded: RecordedDeal }>;
  /** Calls erased (CallErased): their deal facts, record and outbox entries are deleted after the writes. */
  erased: string[];
}

/** The only call events with deal facts: the others are not decoded (most of a call's events). */
const DEAL_TYPES: ReadonlySet<string> = new Set(['CallSubmitted', 'DealRecorded', 'CallErased']);

/** The deal facts of a batch's call events, decoded through the call catalogue. @throws EventDecodeError */
export const dealBatch = (events: readonly RecordedEvent[]): DealBatch => {
  const batch: DealBatch = { calls: [], writes: [], erased: [] };
  for (const stored of events) {
    if (!DEAL_TYPES.has(stored.type)) continue;
    const callId = callEvents.idOf(stored.streamId);
    if (callId === undefined) continue;
    const event = callEvents.decode(stored);
    if (event.type === 'CallSubmitted') {
      if (event.data.submission.deal) batch.calls.push(dealCallOf(event.data));
    } else if (event.type === 'DealRecorded') {
      batch.writes.push({ callId, position: event.position, recorded: { revision: event.revision, data: event.data } });
    } else if (event.type === 'CallErased') {
      batch.erased.push(callId);
    }
  }
  return batch;
};
