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
import type { CallEventType } from '../../shared/domain/call/call-events.ts';
import type { EventLog, OutgoingRecord } from '../../shared/ports/event-log.ts';
import type { EventStore, RecordedEvent, Subscription } from '../../shared/ports/event-store.ts';
import { relayedEventsLeftOut } from '../../shared/observability/metrics.ts';
import type { Topics } from '../../shared/topics.ts';
import { inSpansPerItem, SpanKind } from '../../shared/observability/tracing.ts';
import { publishOrLeaveOut } from './publish-or-leave-out.ts';
import { callEvents, callIdOfStream } from '../../shared/domain/call/call-catalogue.ts';
import { EventDecodeError } from '../../shared/domain/event-catalogue.ts';

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

/**
 * The most a relay publish holds, in characters of its records' keys and values (one record alone
 * may hold more): a publish shares the log's group commit (the embedded log's transaction, the
 * Kafka producer's request) with the ingress's, so a batch of many calls at their size limits
 * published at once kept every POST behind it waiting for all of it. Published one part after the
 * other, a POST waits for one part at most.
 */
export const RELAY_PUBLISH_MAX_CHARS = 1024 * 1024;

/** `relayed` in consecutive parts of at most `maxChars` each (a record larger than that alone). */
export const inParts = <T extends { record: OutgoingRecord }>(relayed: readonly T[], maxChars: number): T[][] => {
  const parts: T[][] = [];
  let part: T[] = [];
  let chars = 0;
  for (const item of relayed) {
    const size = item.record.key.length + item.record.value.length;
    if (part.length > 0 && chars + size > maxChars) {
      parts.push(part);
      part = [];
      chars = 0;
    }
    part.push(item);
    chars += size;
  }
  if (part.length > 0) parts.push(part);
  return parts;
};

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
      // A type this version does not know (a newer version wrote it, during an upgrade) has no
      // CloudEvents type here: the relay relays the events before it, then stops on it (restarted
      // from its checkpoint, reported in readiness) and relays it once a version that knows it
      // runs. Left out, it would be missing from the topic for good, the checkpoint past it.
      const unknown = events.findIndex((event) => !isCallEventType(event.type) && callIdOfStream(event.streamId));
      const relayable = (unknown === -1 ? events : events.slice(0, unknown)).filter(
        (event) => callIdOfStream(event.streamId) && isCallEventType(event.type),
      );
      /**
       * The event as its CloudEvent record. `trace`: the headers of its publish span (none with
       * tracing off): the call's trace continues downstream (CloudEvents distributed-tracing
       * extension), a consumer's span a child of this publish.
       */
      const recordOf = (event: RecordedEvent, trace: Record<string, string>) => {
        const { teamId } = event.metadata;
        return toRecord({
          id: event.id,
          type: CLOUD_EVENT_TYPES[event.type as CallEventType],
          source: '/calls',
          subject: callIdOfStream(event.streamId)!,
          time: event.recordedAt.toISOString(),
          data: event.data,
          extensions: {
            sequence: ceSequence(event.revision),
            ...(typeof teamId === 'string' ? { teamid: teamId } : {}),
            ...(trace.traceparent ? { traceparent: trace.traceparent } : {}),
            ...(trace.tracestate ? { tracestate: trace.tracestate } : {}),
          },
        });
      };
      if (relayable.length > 0) {
        await inSpansPerItem(
          `publish ${deps.topics.callEvents}`,
          relayable,
          (event) => event.metadata,
          (event) => ({ 'event.type': event.type, 'event.stream': event.streamId }),
          async (traceOf) => {
            const relayed = relayable.map((event) => ({ event, record: recordOf(event, traceOf(event)) }));
            // In order, one part after the other; the checkpoint moves once all are written.
            for (const part of inParts(relayed, RELAY_PUBLISH_MAX_CHARS)) await publishAll(deps, part);
          },
          SpanKind.PRODUCER,
        );
      }
      deps.logger.debug({ relayed: relayable.length }, 'call events relayed');
      if (unknown === -1) return;
      const event = events[unknown]!;
      // Past what was just relayed, so a restart does not publish it again before stopping here.
      if (unknown > 0) await deps.eventStore.storeCheckpoint(CALL_EVENTS_RELAY, events[unknown - 1]!.position);
      throw new EventDecodeError(
        event.streamId,
        event.revision,
        event.type,
        '',
        `at position ${event.position}: not a call event type this version knows, so it cannot be relayed; run a version that knows it`,
      );
    },
  });

/**
 * The log refuses these records for what they are, and will every time. Only the port's own
 * `RecordRefusedError` says so: any other failure, retriable or not (a Kafka server error, a
 * missing authorization), may pass, and an event left out for it would be lost for good.
 */
/** Publishes the batch; a record the log refuses on its own is left out (publish-or-leave-out.ts). */
const publishAll = (
  deps: { eventLog: EventLog; topics: Topics; logger: Logger },
  relayed: ReadonlyArray<{ event: RecordedEvent; record: OutgoingRecord }>,
): Promise<void> =>
  publishOrLeaveOut(
    deps.eventLog,
    deps.topics.callEvents,
    relayed,
    ({ record }) => record,
    ({ event }, refusal) => leftOut(deps, event, refusal),
  );

const leftOut = (deps: { topics: Topics; logger: Logger }, event: RecordedEvent, error: unknown): void => {
  relayedEventsLeftOut.inc();
  deps.logger.error(
    {
      err: error,
      eventId: event.id,
      eventType: event.type,
      callId: callIdOfStream(event.streamId),
      position: String(event.position),
    },
    `call event left out of ${deps.topics.callEvents}: the log refuses it (the relay goes on with the next)`,
  );
};
