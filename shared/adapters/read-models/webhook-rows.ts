/** What the SQLite and PostgreSQL webhook stores share: ids, row shapes, the cursor, the fold of webhook events. */
import { uuidV5 } from '../../domain/call/deal-record.ts';
import type { WebhookDeliveryType, WebhookEvent, WebhookEventType } from '../../domain/webhook/webhook-events.ts';
import { webhookEvents } from '../../domain/webhook/webhook-catalogue.ts';
import type { RecordedEvent } from '../../ports/event-store.ts';
import { InvalidQueryError } from '../../ports/read-models.ts';
import type {
  AttemptOutcome,
  ClaimedDelivery,
  WebhookDeliveryStatus,
  WebhookDeliveryView,
  WebhookNotification,
  WebhookView,
} from '../../ports/webhook-store.ts';

const DELIVERY_NAMESPACE = '2f0c7b7e-4c1a-4d0e-9a57-8b3e6f1d2a44';

/** One delivery per webhook and event: replaying the feed queues nothing twice. */
export const deliveryIdOf = (webhookId: string, eventId: string): string =>
  uuidV5(`${webhookId}:${eventId}`, DELIVERY_NAMESPACE);

export const MODEL = 'webhooks';

export interface WebhookRow {
  webhook_id: string;
  team_id: string;
  url: string;
  events: string;
  status: 'active' | 'disabled' | 'deleted';
  created_at: string;
  secret: string;
  previous_secret: string | null;
  previous_valid_until: string | number | null;
}

export interface DeliveryRow {
  seq: string | number;
  delivery_id: string;
  webhook_id: string;
  event_id: string;
  type: WebhookDeliveryType;
  status: WebhookDeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: string | number | null;
  delivered_at: string | number | null;
}

const iso = (ms: string | number | null): string | null => (ms === null ? null : new Date(Number(ms)).toISOString());

export const webhookView = (row: WebhookRow): WebhookView => ({
  webhookId: row.webhook_id,
  teamId: row.team_id,
  url: row.url,
  events: JSON.parse(row.events) as WebhookEventType[],
  status: row.status === 'disabled' ? 'disabled' : 'active',
  createdAt: row.created_at,
});

export const deliveryView = (row: DeliveryRow): WebhookDeliveryView => ({
  deliveryId: row.delivery_id,
  webhookId: row.webhook_id,
  eventId: row.event_id,
  type: row.type,
  status: row.status,
  attempts: row.attempts,
  lastStatusCode: row.last_status_code,
  lastError: row.last_error,
  nextAttemptAt: row.status === 'pending' ? iso(row.next_attempt_at) : null,
  deliveredAt: iso(row.delivered_at),
});

/** The secrets that sign at `now`: the current one, and the previous one within its overlap. */
export const signingSecrets = (
  row: Pick<WebhookRow, 'secret' | 'previous_secret' | 'previous_valid_until'>,
  now: Date,
): string[] =>
  row.previous_secret !== null && row.previous_valid_until !== null && Number(row.previous_valid_until) > now.getTime()
    ? [row.secret, row.previous_secret]
    : [row.secret];

/** A claimed delivery's row: its webhook's columns and the delivery's own. */
export type ClaimedRow = WebhookRow & {
  delivery_id: string;
  event_id: string;
  type: WebhookDeliveryType;
  subject: string;
  body: string;
  attempts: number;
};

export const claimed = (row: ClaimedRow, now: Date): ClaimedDelivery => ({
  deliveryId: row.delivery_id,
  webhookId: row.webhook_id,
  teamId: row.team_id,
  eventId: row.event_id,
  type: row.type,
  subject: row.subject,
  url: row.url,
  body: row.body,
  secrets: signingSecrets(row, now),
  attempts: row.attempts,
});

/** Column values an attempt's outcome sets. */
export const outcomeColumns = (outcome: AttemptOutcome, at: Date) => {
  switch (outcome.kind) {
    case 'delivered':
      return {
        status: 'delivered',
        statusCode: outcome.statusCode,
        error: null,
        nextAttemptAt: null,
        deliveredAt: at.getTime(),
      };
    case 'gone':
      return {
        status: 'failed',
        statusCode: outcome.statusCode,
        error: outcome.error,
        nextAttemptAt: null,
        deliveredAt: null,
      };
    case 'retry':
      return {
        status: outcome.nextAttemptAt === null ? 'failed' : 'pending',
        statusCode: outcome.statusCode,
        error: outcome.error.slice(0, 500),
        nextAttemptAt: outcome.nextAttemptAt?.getTime() ?? null,
        deliveredAt: null,
      };
  }
};

export const encodeCursor = (seq: string | number): string => Buffer.from(`d:${seq}`).toString('base64url');
const MAX_SEQ = 2n ** 63n - 1n;
export const decodeCursor = (cursor: string | undefined): bigint | undefined => {
  if (cursor === undefined) return undefined;
  const match = /^d:([0-9]{1,19})$/.exec(Buffer.from(cursor, 'base64url').toString());
  // Past a 64-bit sequence number it is no cursor this API issued (PostgreSQL refused it with a 500).
  if (!match || BigInt(match[1]!) > MAX_SEQ) throw new InvalidQueryError('cursor', 'cursor is not one this API issued');
  return BigInt(match[1]!);
};

/** Why a webhook's pending deliveries end failed when it is disabled or deleted: nothing attempts them any more. */
export const notSentAfter = (
  event: { type: 'WebhookDisabled'; data: { reason: string } } | { type: 'WebhookDeleted' },
) =>
  event.type === 'WebhookDisabled'
    ? `not sent: the webhook was disabled (${event.data.reason})`
    : 'not sent: the webhook was deleted';

/**
 * A webhook event of the feed, decoded through the webhook catalogue, with its webhook id; undefined
 * for other streams. @throws EventDecodeError
 */
export const webhookEventOf = (event: RecordedEvent): { webhookId: string; event: WebhookEvent } | undefined => {
  const webhookId = webhookEvents.idOf(event.streamId);
  return webhookId === undefined ? undefined : { webhookId, event: webhookEvents.decode(event) };
};

/** The batch as one sequence in feed order: webhook events and notifications. */
export type BatchStep =
  | { kind: 'webhook'; webhookId: string; event: WebhookEvent; position: bigint }
  | { kind: 'notify'; notification: WebhookNotification };

/** Steps after `applied` (the stored checkpoint): a batch applied again changes nothing. */
export const batchSteps = (
  events: readonly RecordedEvent[],
  notifications: readonly WebhookNotification[],
  applied: bigint,
): BatchStep[] => {
  const byPosition = new Map<bigint, WebhookNotification[]>();
  for (const n of notifications) byPosition.set(n.position, [...(byPosition.get(n.position) ?? []), n]);
  const steps: BatchStep[] = [];
  for (const event of events) {
    if (event.position <= applied) continue;
    const webhook = webhookEventOf(event);
    if (webhook) steps.push({ kind: 'webhook', ...webhook, position: event.position });
    for (const notification of byPosition.get(event.position) ?? []) steps.push({ kind: 'notify', notification });
  }
  return steps;
};

/** Whether a webhook row takes a notification. */
export const subscribed = (
  row: Pick<WebhookRow, 'events' | 'webhook_id'>,
  notification: WebhookNotification,
): boolean =>
  notification.webhookId !== undefined
    ? notification.webhookId === row.webhook_id
    : (JSON.parse(row.events) as string[]).includes(notification.type);
