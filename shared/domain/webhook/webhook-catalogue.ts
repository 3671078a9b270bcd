/**
 * The Webhook aggregate's event catalogue: category `webhook`, streams `webhook-{webhookId}`
 * (docs/decisions/0016-event-catalogues-and-upcasting.md). Every type is at version 1.
 */
import { Type } from '@sinclair/typebox';
import { type EventCatalogue, eventCatalogue } from '../event-catalogue.ts';
import { WEBHOOK_EVENT_TYPES, type WebhookEvent } from './webhook-events.ts';

const Instant = Type.String({ format: 'date-time' });

export const webhookEvents: EventCatalogue<WebhookEvent> = eventCatalogue<WebhookEvent>('webhook', {
  WebhookRegistered: {
    schema: Type.Object({
      webhookId: Type.String({ minLength: 1 }),
      teamId: Type.String({ minLength: 1 }),
      url: Type.String(),
      events: Type.Array(Type.Union(WEBHOOK_EVENT_TYPES.map((type) => Type.Literal(type)))),
      secret: Type.String(),
      at: Instant,
    }),
  },
  WebhookSecretRotated: {
    schema: Type.Object({
      secret: Type.String(),
      previousSecret: Type.String(),
      previousValidUntil: Instant,
      at: Instant,
    }),
  },
  WebhookTestRequested: { schema: Type.Object({ testId: Type.String(), teamId: Type.String(), at: Instant }) },
  WebhookDisabled: { schema: Type.Object({ reason: Type.String(), at: Instant }) },
  WebhookDeleted: { schema: Type.Object({ at: Instant }) },
});

/** The stream of one webhook: `webhook-{webhookId}`. */
export const webhookStreamId = webhookEvents.streamId;
/** The webhook id of a `webhook-{webhookId}` stream, or undefined for any other stream. */
export const webhookIdOfStream = webhookEvents.idOf;
