/**
 * What the webhooks of a team are told, prepared from the events of the feed. The table
 * WEBHOOK_NOTIFICATIONS drives it: an event type, the notification type it becomes, and its `data`
 * (the call as GET /api/calls/:callId shows it at that event, or the deal record as
 * deals.outcome-updated.v1 carries it). Telling integrators of a new event is one more line, and
 * its data's shape in shared/domain/webhook/webhook-bodies.ts, which writes every body and
 * documents it (docs/decisions/0024-every-published-message-has-a-schema.md).
 */
import {
  type CallHistoryRow,
  evolveHistoryRow,
  type RecordedCallEvent,
} from '../../shared/domain/call/call-history.ts';
import { callEvents } from '../../shared/domain/call/call-catalogue.ts';
import { dealCallOf, dealEventId, dealRecordOf } from '../../shared/domain/call/deal-record.ts';
import { callDetailView } from '../../shared/domain/call/call-view.ts';
import type { WebhookEventType } from '../../shared/domain/webhook/webhook-events.ts';
import { webhookBody, type WebhookData } from '../../shared/domain/webhook/webhook-bodies.ts';
import { webhookEvents } from '../../shared/domain/webhook/webhook-catalogue.ts';
import type { EventStore, RecordedEvent } from '../../shared/ports/event-store.ts';
import type { WebhookNotification } from '../../shared/ports/webhook-store.ts';

/** The call's events up to the notifying one, and that event. */
interface CallContext {
  callId: string;
  event: RecordedCallEvent;
  events: readonly RecordedCallEvent[];
  row: CallHistoryRow;
}

interface CallNotification<T extends WebhookEventType = WebhookEventType> {
  type: T;
  /** The event id the deliveries carry as `webhook-id` (default: the stored event's id). */
  eventId?: (context: CallContext) => string;
  /** The body's `timestamp`, an ISO instant (default: when the event was stored). */
  timestamp?: (context: CallContext) => string;
  /** The body's `data`, of the shape its type documents (webhook-bodies.ts); undefined: nothing to tell. */
  data: (context: CallContext) => WebhookData<T> | undefined;
}

/** A notification whose data is checked against its own type's shape. */
const notification = <T extends WebhookEventType>(kind: CallNotification<T>): CallNotification => kind;

/** Call events that notify webhooks, by stored event type. */
export const WEBHOOK_NOTIFICATIONS: Readonly<Record<string, CallNotification>> = {
  CallCompleted: notification({ type: 'call.completed', data: ({ row }) => callDetailView(row) }),
  CallFailed: notification({ type: 'call.failed', data: ({ row }) => callDetailView(row) }),
  DealRecorded: notification({
    type: 'deal.outcome.updated',
    // The id deals.outcome-updated.v1 gives the same deal write (its ce_id).
    eventId: ({ callId, event }) => dealEventId(callId, event.revision),
    // The deal's recordedAt, which deals.outcome-updated.v1 carries as ce_time: one instant per deal write.
    timestamp: ({ event }) => (event.type === 'DealRecorded' ? event.data.at : event.recordedAt.toISOString()),
    data: ({ events, event }) => {
      const submitted = events[0];
      if (submitted?.type !== 'CallSubmitted' || event.type !== 'DealRecorded') return undefined;
      return dealRecordOf(dealCallOf(submitted.data), { revision: event.revision, data: event.data });
    },
  }),
};

/**
 * The call's events up to `revision`, decoded, without those the projection skips. Only these are
 * decoded: an event an operator skipped, or one the feed has not reached yet, must not stop the
 * projection of this one. Each event is decoded once (`decoded`), however many of a batch's
 * notifications of its call fold it.
 */
const callEventsUpTo = (
  stream: readonly RecordedEvent[],
  revision: number,
  skipped: ReadonlySet<bigint>,
  decoded: WeakMap<RecordedEvent, RecordedCallEvent>,
): RecordedCallEvent[] =>
  stream
    .filter((e) => e.revision <= revision && !skipped.has(e.position))
    .map((e) => {
      let event = decoded.get(e);
      if (!event) decoded.set(e, (event = callEvents.decode(e)));
      return event;
    });

/**
 * The notifications of a batch, its events decoded through their catalogues (an event that does
 * not decode stops the projection: EventDecodeError). Reads each notifying call's stream once to
 * fold the call as the read API shows it at that event, leaving out the events at `skipped` (those
 * an operator told this projection to skip), as the feed does.
 */
export const webhookNotifications = async (
  store: EventStore,
  events: readonly RecordedEvent[],
  skipped: ReadonlySet<bigint>,
): Promise<WebhookNotification[]> => {
  const notifications: WebhookNotification[] = [];
  const streams = new Map<string, Promise<RecordedEvent[]>>();
  const decoded = new WeakMap<RecordedEvent, RecordedCallEvent>();
  for (const stored of events) {
    const webhookId = webhookEvents.idOf(stored.streamId);
    if (webhookId !== undefined) {
      const event = webhookEvents.decode(stored);
      if (event.type !== 'WebhookTestRequested') continue;
      notifications.push({
        position: event.position,
        eventId: event.data.testId,
        teamId: event.data.teamId,
        type: 'webhook.test',
        subject: webhookId,
        webhookId,
        body: webhookBody('webhook.test', event.recordedAt.toISOString(), {
          webhookId,
          teamId: event.data.teamId,
          message: 'A test delivery requested by an operator.',
        }),
      });
      continue;
    }
    const callId = callEvents.idOf(stored.streamId);
    if (callId === undefined) continue;
    const event = callEvents.decode(stored);
    if (event.type === 'CallErased') {
      // No personal data: the call's id, when and why. The store drops the call's earlier deliveries
      // (their bodies hold what the erasure destroys) and queues this one.
      const [submitted] = callEventsUpTo(
        await store.readStream(callEvents.streamId(callId), { maxCount: 1 }),
        0,
        skipped,
        decoded,
      );
      if (submitted?.type !== 'CallSubmitted') continue;
      notifications.push({
        position: event.position,
        eventId: event.id,
        teamId: submitted.data.teamId,
        type: 'call.erased',
        subject: callId,
        body: webhookBody('call.erased', event.recordedAt.toISOString(), {
          callId,
          erasedAt: event.data.at,
          cause: event.data.cause,
        }),
      });
      continue;
    }
    const kind = Object.hasOwn(WEBHOOK_NOTIFICATIONS, event.type) ? WEBHOOK_NOTIFICATIONS[event.type] : undefined;
    if (!kind) continue;
    let stream = streams.get(callId);
    if (!stream) {
      stream = store.readStream(callEvents.streamId(callId));
      streams.set(callId, stream);
    }
    const upTo = callEventsUpTo(await stream, event.revision, skipped, decoded);
    let row: CallHistoryRow | undefined;
    for (const e of upTo) row = evolveHistoryRow(row, e);
    if (!row) continue; // a call without its submission: nothing to show
    const context: CallContext = { callId, event, events: upTo, row };
    const data = kind.data(context);
    if (data === undefined) continue;
    notifications.push({
      position: event.position,
      eventId: kind.eventId?.(context) ?? event.id,
      teamId: row.teamId,
      type: kind.type,
      subject: callId,
      body: webhookBody(kind.type, kind.timestamp?.(context) ?? event.recordedAt.toISOString(), data),
    });
  }
  return notifications;
};
