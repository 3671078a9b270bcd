/**
 * What the webhooks of a team are told, prepared from the events of the feed. The table
 * WEBHOOK_NOTIFICATIONS drives it: an event type, the notification type it becomes, and its `data`
 * (the call as GET /api/calls/:callId shows it at that event, or the deal record as
 * deals.outcome-updated.v1 carries it). Telling integrators of a new event is one more line.
 */
import { type CallHistoryRow, evolveHistoryRow } from '../../shared/domain/call/call-history.ts';
import type { CallSubmittedData } from '../../shared/domain/call/call-submitted.ts';
import type { CallErased } from '../../shared/domain/call/call-events.ts';
import { callIdOfStream, callStreamId } from '../../shared/domain/call/call-catalogue.ts';
import { dealCallOf, dealEventId, dealRecordOf, type RecordedDeal } from '../../shared/domain/call/deal-record.ts';
import { callDetailView } from '../../shared/domain/call/call-view.ts';
import type { WebhookEventType, WebhookTestRequested } from '../../shared/domain/webhook/webhook-events.ts';
import { webhookIdOfStream } from '../../shared/domain/webhook/webhook-catalogue.ts';
import type { EventStore, Json, RecordedEvent } from '../../shared/ports/event-store.ts';
import type { WebhookNotification } from '../../shared/ports/webhook-store.ts';

/** The call's events up to the notifying one, and that event. */
interface CallContext {
  callId: string;
  event: RecordedEvent;
  events: readonly RecordedEvent[];
  row: CallHistoryRow;
}

interface CallNotification {
  type: WebhookEventType;
  /** The event id the deliveries carry as `webhook-id` (default: the stored event's id). */
  eventId?: (context: CallContext) => string;
  data: (context: CallContext) => unknown;
}

/** Call events that notify webhooks, by stored event type. */
export const WEBHOOK_NOTIFICATIONS: Readonly<Record<string, CallNotification>> = {
  CallCompleted: { type: 'call.completed', data: ({ row }) => callDetailView(row) },
  CallFailed: { type: 'call.failed', data: ({ row }) => callDetailView(row) },
  DealRecorded: {
    type: 'deal.outcome.updated',
    // The id deals.outcome-updated.v1 gives the same deal write (its ce_id).
    eventId: ({ callId, event }) => dealEventId(callId, event.revision),
    data: ({ events, event }) => {
      const submitted = events[0]!.data as unknown as CallSubmittedData;
      return dealRecordOf(dealCallOf(submitted), {
        revision: event.revision,
        data: event.data,
      } as unknown as RecordedDeal);
    },
  },
};

const bodyOf = (type: string, event: RecordedEvent, data: unknown): string =>
  JSON.stringify({ type, timestamp: event.recordedAt.toISOString(), data: data as Json });

/**
 * The notifications of a batch. Reads each notifying call's stream once (up to its last notifying
 * event) to fold the call as the read API shows it at that event.
 */
export const webhookNotifications = async (
  store: EventStore,
  events: readonly RecordedEvent[],
): Promise<WebhookNotification[]> => {
  const notifications: WebhookNotification[] = [];
  const streams = new Map<string, Promise<RecordedEvent[]>>();
  for (const event of events) {
    if (event.type === 'WebhookTestRequested' && webhookIdOfStream(event.streamId) !== undefined) {
      const webhookId = webhookIdOfStream(event.streamId)!;
      const data = event.data as unknown as WebhookTestRequested['data'];
      notifications.push({
        position: event.position,
        eventId: data.testId,
        teamId: data.teamId,
        type: 'webhook.test',
        subject: webhookId,
        webhookId,
        body: bodyOf('webhook.test', event, {
          webhookId,
          teamId: data.teamId,
          message: 'A test delivery requested by an operator.',
        }),
      });
      continue;
    }
    if (event.type === 'CallErased') {
      // No personal data: the call's id, when and why. The store drops the call's earlier deliveries
      // (their bodies hold what the erasure destroys) and queues this one.
      const callId = callIdOfStream(event.streamId);
      const submitted =
        callId === undefined ? undefined : (await store.readStream(callStreamId(callId), { maxCount: 1 }))[0];
      if (callId === undefined || submitted?.type !== 'CallSubmitted') continue;
      const teamId = (submitted.data as unknown as CallSubmittedData).teamId;
      const data = event.data as unknown as CallErased['data'];
      notifications.push({
        position: event.position,
        eventId: event.id,
        teamId,
        type: 'call.erased',
        subject: callId,
        body: bodyOf('call.erased', event, { callId, erasedAt: data.at, cause: data.cause }),
      });
      continue;
    }
    const kind = Object.hasOwn(WEBHOOK_NOTIFICATIONS, event.type) ? WEBHOOK_NOTIFICATIONS[event.type] : undefined;
    const callId = kind ? callIdOfStream(event.streamId) : undefined;
    if (!kind || callId === undefined) continue;
    let stream = streams.get(callId);
    if (!stream) {
      stream = store.readStream(callStreamId(callId));
      streams.set(callId, stream);
    }
    const upTo = (await stream).filter((e) => e.revision <= event.revision);
    let row: CallHistoryRow | undefined;
    for (const e of upTo) row = evolveHistoryRow(row, e);
    if (!row) continue; // a call without its submission: nothing to show
    const context: CallContext = { callId, event, events: upTo, row };
    notifications.push({
      position: event.position,
      eventId: kind.eventId?.(context) ?? event.id,
      teamId: row.teamId,
      type: kind.type,
      subject: callId,
      body: bodyOf(kind.type, event, kind.data(context)),
    });
  }
  return notifications;
};
