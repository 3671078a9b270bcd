/**
 * Webhook storage port: the registered webhooks (a projection of the webhook streams) and the
 * delivery outbox (docs/decisions/0012-webhook-outbox.md).
 *
 * `apply(events, notifications, checkpoint)` folds the webhook events of a batch into the webhook
 * rows, queues one delivery per notification and per webhook of its team subscribed to its type
 * (as the webhooks stood at that point of the feed), and stores `checkpoint`: all in one
 * transaction, so a notification is queued exactly once however often the feed is re-read (a
 * delivery's id is derived from the webhook and the event). A delivery worker then claims due
 * deliveries (a lease, so two processes never send one delivery at once), and records each
 * attempt's outcome.
 */
import type { WebhookDeliveryType, WebhookEventType } from '../domain/webhook/webhook-events.ts';
import type { RecordedEvent } from './event-store.ts';
import type { ApplyOptions } from './read-models.ts';

/** Something to tell the webhooks of a team about, prepared from one event of the feed. */
export interface WebhookNotification {
  /** Position of the event it comes from (applied in feed order with the webhook events). */
  position: bigint;
  /** The `webhook-id` of every delivery of it: stable, the event's id. */
  eventId: string;
  teamId: string;
  type: WebhookDeliveryType;
  /** What deliveries of one subject keep in order (the call id, or the webhook id of a test). */
  subject: string;
  /** The body sent, `{type, timestamp, data}` as JSON text. */
  body: string;
  /** Only this webhook (a `webhook.test`); otherwise every subscribed webhook of the team. */
  webhookId?: string;
}

export interface WebhookView {
  webhookId: string;
  teamId: string;
  url: string;
  events: WebhookEventType[];
  status: 'active' | 'disabled';
  createdAt: string;
}

export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
export type WebhookDeliveryStatus = (typeof WEBHOOK_DELIVERY_STATUSES)[number];

export interface WebhookDeliveryView {
  deliveryId: string;
  webhookId: string;
  eventId: string;
  type: WebhookDeliveryType;
  status: WebhookDeliveryStatus;
  attempts: number;
  lastStatusCode: number | null;
  lastError: string | null;
  /** ISO instant; null once delivered or failed. */
  nextAttemptAt: string | null;
  deliveredAt: string | null;
}

/** A delivery claimed for one attempt, with what it needs to be sent. */
export interface ClaimedDelivery {
  deliveryId: string;
  webhookId: string;
  teamId: string;
  eventId: string;
  type: WebhookDeliveryType;
  /** The call id (a webhook id for `webhook.test`): what the worker checks before it sends. */
  subject: string;
  url: string;
  body: string;
  /** Secrets that sign this attempt: the current one, and a rotated-out one still in its overlap. */
  secrets: string[];
  /** Attempts made before this one. */
  attempts: number;
}

export type AttemptOutcome =
  | { kind: 'delivered'; statusCode: number }
  /** Retry at `nextAttemptAt`, or mark failed when it is null (the schedule is spent). */
  | { kind: 'retry'; statusCode: number | null; error: string; nextAttemptAt: Date | null }
  /** 410 Gone: this delivery failed; the webhook is disabled by its own event. */
  | { kind: 'gone'; statusCode: 410; error: string };

export interface WebhookStore {
  /** See the file comment. Idempotent per event. @throws CheckpointMismatchError as ProjectionWriter.apply. */
  apply(
    events: readonly RecordedEvent[],
    notifications: readonly WebhookNotification[],
    checkpoint: bigint,
    options?: ApplyOptions,
  ): Promise<void>;
  checkpoint(): Promise<bigint>;
  /** Whether any webhook was ever registered (when none, the feed's notifications need not be prepared). */
  anyWebhook(): Promise<boolean>;
  /** The team's webhooks (not deleted), oldest first. */
  list(teamId: string): Promise<WebhookView[]>;
  get(webhookId: string): Promise<WebhookView | undefined>;
  /**
   * Claims up to `limit` deliveries due at `now` (pending, webhook active, no earlier pending
   * delivery of the same webhook and subject, not leased), at most `perTeam` of one team less the
   * attempts it has `inFlight` already, leasing each until `now + leaseMs`.
   */
  claim(
    now: Date,
    options: { limit: number; perTeam: number; leaseMs: number; inFlight: Readonly<Record<string, number>> },
  ): Promise<ClaimedDelivery[]>;
  /** Records an attempt's outcome and ends the lease. */
  recordAttempt(deliveryId: string, outcome: AttemptOutcome, at: Date): Promise<void>;
  /**
   * Ends the lease of a pending delivery and makes it due at `until`, its attempts unchanged: it
   * was not attempted (what it tells of is not written yet), so it spends none of its schedule.
   * `note`, when given, says why it still waits: it becomes the delivery's last error.
   */
  postpone(deliveryId: string, until: Date, note?: string): Promise<void>;
  /**
   * Fails a pending delivery without attempting it, because what it tells of will never be (its
   * deal record is never written): `reason` becomes its last error, its attempts unchanged, its
   * lease ended. A redelivery queues it again, and it is checked again before it is sent.
   */
  failUnsent(deliveryId: string, reason: string): Promise<void>;
  /**
   * Deletes the deliveries of `subject` (a call id) but its `call.erased` notice, as the projection
   * does when it applies CallErased: the worker calls it once it sees the call's data key destroyed,
   * so a body holding erased personal data is never sent while the projection lags behind.
   */
  forgetSubject(subject: string): Promise<void>;
  /** The webhook's deliveries, newest first. @throws InvalidQueryError for a cursor it did not issue. */
  deliveries(
    webhookId: string,
    query: { status?: WebhookDeliveryStatus; limit: number; cursor?: string },
  ): Promise<{ deliveries: WebhookDeliveryView[]; nextCursor: string | null }>;
  /** Queues the delivery again now, its attempts counted from zero; false when the webhook has no such delivery. */
  redeliver(webhookId: string, deliveryId: string, now: Date): Promise<boolean>;
  /**
   * When the next claim may find something: the earliest next attempt (or lease end) of a pending
   * delivery of an active webhook; undefined when there is none. Reads only.
   */
  nextDue(): Promise<Date | undefined>;
}
