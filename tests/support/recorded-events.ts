/**
 * A call's events as a reader gets them from the store: encoded through the call catalogue as the
 * aggregate repository appends them, given revisions from 0 and positions from `firstPosition`, then
 * decoded through the catalogue as every reader decodes them.
 */
import { callEvents } from '../../shared/domain/call/call-catalogue.ts';
import type { CallEvent } from '../../shared/domain/call/call-events.ts';
import type { RecordedCallEvent } from '../../shared/domain/call/call-history.ts';
import type { RecordedEvent } from '../../shared/ports/event-store.ts';

export const storedCallEvents = (
  events: readonly CallEvent[],
  callId = 'c1',
  firstPosition = 1n,
  recordedAt = new Date('2026-11-20T10:00:00.000Z'),
): RecordedEvent[] =>
  events.map((event, i) => {
    const { type, data, metadata } = callEvents.encode(event);
    return {
      id: `${callId}-${i}`,
      streamId: callEvents.streamId(callId),
      revision: i,
      position: firstPosition + BigInt(i),
      type,
      data,
      metadata: metadata ?? {},
      recordedAt,
    };
  });

export const recordedCallEvents = (
  events: readonly CallEvent[],
  callId = 'c1',
  firstPosition = 1n,
): RecordedCallEvent[] => storedCallEvents(events, callId, firstPosition).map(callEvents.decode);
