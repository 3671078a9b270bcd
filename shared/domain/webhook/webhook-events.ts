/**
 * Events of the Webhook aggregate, stream `webhook-{webhookId}`: an integrator's endpoint that
 * receives signed notifications of its team's calls (docs/decisions/0012-webhook-outbox.md). The
 * secret travels in the events because it must sign every delivery (Standard Webhooks is a shared
 * secret, not a hash the service could keep instead).
 */

/** Notification types a webhook may subscribe to (`webhook.test` is sent on request only). */
export const WEBHOOK_EVENT_TYPES = ['call.completed', 'call.failed', 'deal.outcome.updated', 'call.erased'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];
/** What a delivery's body `type` may be. */
export type WebhookDeliveryType = WebhookEventType | 'webhook.test';

export type WebhookRegistered = {
  type: 'WebhookRegistered';
  data: { webhookId: string; teamId: string; url: string; events: WebhookEventType[]; secret: string; at: string };
};
/** The new secret signs from now on; the previous one also signs until `previousValidUntil`. */
export type WebhookSecretRotated = {
  type: 'WebhookSecretRotated';
  data: { secret: string; previousSecret: string; previousValidUntil: string; at: string };
};
/** An operator asked for a `webhook.test` delivery (`testId` is its event id). */
export type WebhookTestRequested = {
  type: 'WebhookTestRequested';
  data: { testId: string; teamId: string; at: string };
};
/** The receiver answered 410 Gone: nothing more is sent. */
export type WebhookDisabled = { type: 'WebhookDisabled'; data: { reason: string; at: string } };
export type WebhookDeleted = { type: 'WebhookDeleted'; data: { at: string } };

export type WebhookEvent =
  WebhookRegistered | WebhookSecretRotated | WebhookTestRequested | WebhookDisabled | WebhookDeleted;
