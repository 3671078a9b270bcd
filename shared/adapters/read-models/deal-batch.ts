/** The deal facts of a batch: calls submitted with a deal, and deal writes. */
import type { CallSubmittedData } from '../../domain/call/call-submitted.ts';
import { type DealCall, dealCallOf, type RecordedDeal } from '../../domain/call/deal-record.ts';
import { callIdOfStream } from '../../domain/call/call-catalogue.ts';
import type { RecordedEvent } from '../../ports/event-store.ts';

export interface DealBatch {
  /** Calls submitted with deal data: kept until their deal is recorded. */
  calls: DealCall[];
  /** Deal writes in feed order. */
  writes: Array<{ callId: string; position: bigint; recorded: RecordedDeal }>;
  /** Calls erased (CallErased): their deal facts, record and outbox entries are deleted after the writes. */
  erased: string[];
}

export const dealBatch = (events: readonly RecordedEvent[]): DealBatch => {
  const batch: DealBatch = { calls: [], writes: [], erased: [] };
  for (const event of events) {
    const callId = callIdOfStream(event.streamId);
    if (callId === undefined) continue;
    if (event.type === 'CallSubmitted') {
      const data = event.data as unknown as CallSubmittedData;
      if (data.submission.deal) batch.calls.push(dealCallOf(data));
    } else if (event.type === 'DealRecorded') {
      batch.writes.push({
        callId,
        position: event.position,
        recorded: { revision: event.revision, data: event.data as unknown as RecordedDeal['data'] },
      });
    } else if (event.type === 'CallErased') {
      batch.erased.push(callId);
    }
  }
  return batch;
};
