/**
 * How the projections publish what they derive (the relay's call events, the deal outcomes): a
 * batch in one publish. When the log refuses it for something in its records (`RecordRefusedError`:
 * a record too large for the topic, say), each record is sent alone, and one the log refuses alone
 * is left out (`leftOut` logs and counts it): at every retry the same record would be refused
 * again, and the topic would stop for every call, its batch-mates published again and again.
 * Records before it may have been written twice; a consumer deduplicates them by `ce_id`. Any other
 * failure is thrown: an outage is retried in place, and anything else (a missing topic, a server
 * error, not authorized) fails the caller, which reports it in readiness until it passes.
 */
import { type EventLog, type OutgoingRecord, RecordRefusedError } from '../../shared/ports/event-log.ts';

export const publishOrLeaveOut = async <T>(
  eventLog: EventLog,
  topic: string,
  items: readonly T[],
  recordOf: (item: T) => OutgoingRecord,
  leftOut: (item: T, refusal: RecordRefusedError) => void,
): Promise<void> => {
  try {
    await eventLog.publish(topic, items.map(recordOf));
    return;
  } catch (error) {
    if (!(error instanceof RecordRefusedError)) throw error;
  }
  for (const item of items) {
    try {
      await eventLog.publish(topic, [recordOf(item)]);
    } catch (error) {
      if (!(error instanceof RecordRefusedError)) throw error;
      leftOut(item, error);
    }
  }
};
