/**
 * Relays every call event from the event store to `calls.events.v1` for downstream systems, in
 * stream order (key = call id). At least once: the checkpoint advances only after the log took the
 * batch (and, caught up, moves to the head of the feed past other categories' events, so its lag
 * reads 0), and each message carries the event's own id as `ce_id`, so a consumer deduplicates a
 * redelivery by it, and its revision as `ce_sequence`, zero-padded (see `ceSequence`).
 */
import type { Logger } from 'pino';
import { toRecord } from '../../shared/cloudevents.ts';
import { CLOUD_EVENT_TYPES, isCallEventType } from '../../shared/domain/call/call-event-types.ts';
import type { EventLog } from '../../shared/ports/event-log.ts';
import type { EventStore, Subscription } from '../../shared/ports/event-store.ts';
import type { Topics } from '../../shared/topics.ts';
import { inSpansPerItem } from '../../shared/observability/tracing.ts';
import { callEvents, callIdOfStream } from '../../shared/domain/call/call-catalogue.ts';

export const CALL_EVENTS_RELAY = 'relay.call-events';

/**
 * Digits of `ce_sequence`: enough for every revision a stream can reach (a revision is a safe
 * integer, at most 16 digits).
 */
export const SEQUENCE_DIGITS = 16;

/**
 * The revision as the CloudEvents sequence extension wants it: a string whose lexicographic order
 * is the events' order, so zero-padded to a fixed width ("10" would sort before "9").
 */
export const ceSequence = (revision: number): string => String(revision).padStart(SEQUENCE_DIGITS, '0');

export const startCallEventsRelay = (deps: {
  eventStore: EventStore;
  eventLog: EventLog;
  topics: Topics;
  logger: Logger;
}): Subscription =>
  deps.eventStore.subscribeToAll({
    checkpointId: CALL_EVENTS_RELAY,
    // Call streams (`call-<callId>`) only; forwarded as stored, still sealed, so not decoded here.
    categories: [callEvents.category],
    batchSize: 500,
    handler: async (events) => {
      const records = events.flatMap((event) => {
        const callId = callIdOfStream(event.streamId);
        if (!callId || !isCallEventType(event.type)) return [];
        const { teamId, traceparent, tracestate } = event.metadata;
        return [
          toRecord({
            id: event.id,
            type: CLOUD_EVENT_TYPES[event.type],
            source: '/calls',
            subject: callId,
            time: event.recordedAt.toISOString(),
            data: event.data,
            extensions: {
              sequence: ceSequence(event.revision),
              ...(typeof teamId === 'string' ? { teamid: teamId } : {}),
              // The call's trace continues downstream (CloudEvents distributed-tracing extension).
              ...(typeof traceparent === 'string' ? { traceparent } : {}),
              ...(typeof tracestate === 'string' ? { tracestate } : {}),
            },
          }),
        ];
      });
      if (records.length > 0) {
        await inSpansPerItem(
          `publish ${deps.topics.callEvents}`,
          events,
          (event) => event.metadata,
          (event) => ({ 'event.type': event.type, 'event.stream': event.streamId }),
          () => deps.eventLog.publish(deps.topics.callEvents, records),
        );
      }
      deps.logger.debug({ relayed: records.length }, 'call events relayed');
    },
  });
