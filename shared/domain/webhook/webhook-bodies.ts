/**
 * The body of every webhook delivery, `{type, timestamp, data}` (README "Webhooks"): the shape of
 * each type's `data`, the one function that writes a body (`webhookBody`, which takes only data of
 * that shape), and the JSON Schemas served for them at /docs/webhooks/{type}.json
 * (docs/decisions/0024-every-published-message-has-a-schema.md). The data of call.completed and
 * call.failed is the call as GET /api/calls/:callId shows it; of deal.outcome.updated, the deal
 * record with its personal fields open: their schemas are those, not copies.
 */
import { type Static, type TObject, Type } from '@sinclair/typebox';
import { schemaDocument, type JsonSchemaDocument } from '../json-schema-document.ts';
import { CallErasedSchema } from '../call/call-event-data.ts';
import { CallDetailSchema } from '../call/call-view-schema.ts';
import { DealOutcomeUpdatedSchema } from '../call/event-schemas.ts';
import type { WebhookDeliveryType } from './webhook-events.ts';

/** call.erased: nothing personal, only which call, when and why. */
export const CallErasedNotificationSchema = Type.Object(
  {
    callId: Type.String(),
    erasedAt: Type.String({ format: 'date-time', description: 'When the call was erased.' }),
    cause: CallErasedSchema.properties.cause,
  },
  { additionalProperties: false },
);

/** webhook.test: sent on an operator's request only. */
export const WebhookTestSchema = Type.Object(
  {
    webhookId: Type.String({ description: 'The webhook this delivery was requested for.' }),
    teamId: Type.String(),
    message: Type.String({ description: 'A test delivery requested by an operator.' }),
  },
  { additionalProperties: false },
);

const RECORDED = 'When the event was recorded (ISO 8601).';

/** Per delivery type: its data's schema, what it tells, and what its `timestamp` is. */
export const WEBHOOK_BODIES = {
  'call.completed': {
    data: CallDetailSchema,
    about: 'The call completed. data: the call as GET /api/calls/{callId} shows it at that moment.',
    timestamp: RECORDED,
  },
  'call.failed': {
    data: CallDetailSchema,
    about: 'Processing of the call failed. data: the call as GET /api/calls/{callId} shows it at that moment.',
    timestamp: RECORDED,
  },
  'deal.outcome.updated': {
    data: DealOutcomeUpdatedSchema,
    about:
      'A deal record was written. data: the payload of deals.outcome-updated.v1 with its personal fields open ' +
      '(/docs/events/deal.outcome.updated.opened.json), the same eventId; sent once its deal record is written.',
    timestamp: "The deal's recordedAt, the instant deals.outcome-updated.v1 carries as ce_time.",
  },
  'call.erased': {
    data: CallErasedNotificationSchema,
    about:
      "The call was erased: drop what you keep of it. Nothing personal; the call's earlier deliveries not yet " +
      'sent are dropped.',
    timestamp: RECORDED,
  },
  'webhook.test': {
    data: WebhookTestSchema,
    about: 'A test delivery an operator requested (POST /api/admin/teams/{teamId}/webhooks/{webhookId}/test).',
    timestamp: 'When the test was requested (ISO 8601).',
  },
} as const satisfies Record<WebhookDeliveryType, { data: TObject; about: string; timestamp: string }>;

/** The `data` of a delivery of type `T`. */
export type WebhookData<T extends WebhookDeliveryType> = Static<(typeof WEBHOOK_BODIES)[T]['data']>;

/** The body of a delivery: the only way one is written, so every body has its documented shape. */
export const webhookBody = <T extends WebhookDeliveryType>(type: T, timestamp: string, data: WebhookData<T>): string =>
  JSON.stringify({ type, timestamp, data });

/** One served webhook document. */
export interface WebhookSchema {
  /** The delivery type, also its name: /docs/webhooks/{type}.json. */
  type: WebhookDeliveryType;
  document: JsonSchemaDocument;
}

export const WEBHOOK_SCHEMA_LIST: readonly WebhookSchema[] = (Object.keys(WEBHOOK_BODIES) as WebhookDeliveryType[]).map(
  (type) => {
    const body: { data: TObject; about: string; timestamp: string } = WEBHOOK_BODIES[type];
    return {
      type,
      document: schemaDocument(
        Type.Object({
          type: Type.Literal(type),
          timestamp: Type.String({ format: 'date-time', description: body.timestamp }),
          data: body.data,
        }),
        {
          $id: `webhook.${type}`,
          title: `${type} webhook`,
          description:
            `The body of a ${type} webhook delivery. ${body.about} Signed as Standard Webhooks specify: the ` +
            'webhook-id (the same on every attempt: deduplicate by it), webhook-timestamp and webhook-signature headers.',
        },
      ),
    };
  },
);

/** The served webhook documents by type. */
export const WEBHOOK_SCHEMAS: Readonly<Record<string, JsonSchemaDocument>> = Object.freeze(
  Object.fromEntries(WEBHOOK_SCHEMA_LIST.map((entry) => [entry.type, entry.document])),
);
