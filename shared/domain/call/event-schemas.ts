/**
 * JSON Schemas of the messages downstream systems consume, one or two for every `ce_type` the
 * service publishes on a topic (docs/decisions/0024-every-published-message-has-a-schema.md).
 * Served at /docs/events/{name}.json and listed by /docs/events/index.json. None is written by
 * hand: a call event's comes from the call catalogue (the shape of every stored version of its
 * data, as the relay publishes it as stored), deal.outcome.updated's from `DealOutcomeUpdatedSchema`
 * (the deal record), and a message with personal fields has two
 * (docs/decisions/0014-erasure-crypto-shredding.md):
 * - `{type}`: the message as it goes out on its topic. Its personal fields are not in it: they
 *   travel encrypted in `sealed`. Derived from the open one and `PERSONAL_FIELDS`, the list the
 *   sealing itself follows, so the document and the messages cannot disagree.
 * - `{type}.opened`: the payload with its personal fields open, as the service reads it (and as
 *   messages written before sealing existed are).
 * A type without personal fields has the first only.
 */
import { KindGuard, type Static, type TObject, type TSchema, Type } from '@sinclair/typebox';
import { schemaDocument, type JsonSchemaDocument } from '../json-schema-document.ts';
import { topicNames, type Topics } from '../../topics.ts';
import { callEvents } from './call-catalogue.ts';
import { CLOUD_EVENT_TYPES } from './call-event-types.ts';
import type { CallEventType } from './call-events.ts';
import { DEAL_OUTCOME_UPDATED_TYPE, type DealRecord } from './deal-record.ts';
import { PERSONAL_FIELDS } from './personal-fields.ts';
import { sealedMessage } from './sealed-message-schema.ts';
import { TOPIC_MESSAGES } from './topic-messages.ts';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

/**
 * `deal.outcome.updated` with its personal fields open: the deal record as written, the data of a
 * deal.outcome.updated webhook. On `deals.outcome-updated.v1` its personal fields are sealed.
 */
export const DealOutcomeUpdatedSchema = Type.Object(
  {
    eventId: Type.String({
      format: 'uuid',
      description:
        'Stable id of this deal write: the same write always carries the same id (also ce_id). Deduplicate by it.',
    }),
    callId: Type.String({ description: 'The call the deal was submitted with.' }),
    teamId: Type.String(),
    repName: Nullable(Type.String()),
    repEmail: Nullable(Type.String()),
    attributedTo: Type.Object(
      { kind: Type.Union([Type.Literal('member'), Type.Literal('owner')]), email: Type.String(), name: Type.String() },
      { description: 'The team member matched by repEmail, else the team owner.' },
    ),
    dealSize: Nullable(Type.Number({ minimum: 0, description: 'Deal amount.' })),
    revenueCollected: Nullable(Type.Number({ minimum: 0, description: 'Revenue collected so far.' })),
    dealDate: Nullable(
      Type.String({
        format: 'date-time',
        description: 'ISO 8601 instant; a date-only value was read as midnight UTC.',
      }),
    ),
    notes: Nullable(Type.String({ maxLength: 2000 })),
    recordedAt: Type.String({ format: 'date-time', description: 'When the deal record was written.' }),
  },
  {
    description: 'Emitted after valid deal data in a submission has been written to the deal record.',
    additionalProperties: false,
  },
);

// The payload is the deal record as written: a compile error here means the two drifted apart.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _dealRecordMatchesSchema: Same<Static<typeof DealOutcomeUpdatedSchema>, DealRecord> = true;
void _dealRecordMatchesSchema;

/** How a served document shows its message: as on its topic, or with its personal fields open. */
export type EventSchemaForm = 'topic' | 'opened';

/** One served document and what it describes. */
export interface EventSchema {
  /** Its name: /docs/events/{name}.json. */
  name: string;
  ceType: string;
  form: EventSchemaForm;
  /** The topics that carry the type. */
  topics: ReadonlyArray<keyof Topics>;
  /** The personal fields (dotted paths) that travel in `sealed` on the topics; none in `opened`. */
  sealedFields: readonly string[];
  document: JsonSchemaDocument;
}

const BASE_NAMES = topicNames();
const topicsOf = (ceType: string) =>
  (Object.keys(TOPIC_MESSAGES) as Array<keyof Topics>).filter((topic) =>
    TOPIC_MESSAGES[topic].ceTypes.includes(ceType),
  );
const listed = (names: readonly string[]) =>
  names.length <= 1 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`;

/**
 * The documents of one type. `personalType` is its key in `PERSONAL_FIELDS` (a call event's stored
 * type, or the deal's ce_type); `about` says what the message means.
 */
const documentsOf = (ceType: string, personalType: string, open: TObject, about: string): EventSchema[] => {
  const topics = topicsOf(ceType);
  if (topics.length === 0) throw new Error(`${ceType} is on no topic (topic-messages.ts)`);
  const on = listed(topics.map((topic) => BASE_NAMES[topic]));
  const fields = (PERSONAL_FIELDS[personalType] ?? []).map((field) => field.dotted);
  if (fields.length === 0)
    return [
      {
        name: ceType,
        ceType,
        form: 'topic',
        topics,
        sealedFields: [],
        document: schemaDocument(open, {
          $id: ceType,
          title: ceType,
          description: `${about} The message as it is on ${on}; it holds no personal field.`,
        }),
      },
    ];
  const sealed = sealedMessage(personalType, open, {
    $id: ceType,
    title: ceType,
    description: (personal) =>
      `${about} The message as it is on ${on}: its personal fields (${personal}) are not in it; they travel ` +
      `encrypted in sealed. The payload with them open (and messages written before sealing existed) is ` +
      `/docs/events/${ceType}.opened.json.`,
  });
  return [
    {
      name: ceType,
      ceType,
      form: 'topic',
      topics,
      sealedFields: fields,
      document: schemaDocument(sealed, {
        $id: ceType,
        title: ceType,
        description: String(sealed.description),
      }),
    },
    {
      name: `${ceType}.opened`,
      ceType,
      form: 'opened',
      topics,
      sealedFields: [],
      document: schemaDocument(open, {
        $id: `${ceType}.opened`,
        title: `${ceType} (personal fields open)`,
        description:
          `${about} This is the payload with its personal fields open (${fields.join(', ')}), as the service reads ` +
          `it and as messages written before sealing existed carry it. On ${on} they travel sealed: ` +
          `/docs/events/${ceType}.json.`,
      }),
    },
  ];
};

/** The data of a call event type as it may be on calls.events.v1: every stored version of it. */
const publishedShape = (type: CallEventType): TObject => {
  const { everyVersion } = callEvents.shapeOf(type);
  if (everyVersion === undefined)
    throw new Error(`${type} has older versions: its catalogue entry needs everyVersion, the shape the topic carries`);
  if (!KindGuard.IsObject(everyVersion)) throw new Error(`${type}'s data is not an object`);
  return everyVersion;
};

const aboutOf = (schema: TSchema) => String(schema.description ?? '');

/** Every served document, in the order of the README's list: the call events, then the deal. */
export const EVENT_SCHEMA_LIST: readonly EventSchema[] = [
  ...(Object.entries(CLOUD_EVENT_TYPES) as Array<[CallEventType, string]>).flatMap(([type, ceType]) => {
    const shape = publishedShape(type);
    return documentsOf(ceType, type, shape, aboutOf(shape));
  }),
  ...documentsOf(
    DEAL_OUTCOME_UPDATED_TYPE,
    DEAL_OUTCOME_UPDATED_TYPE,
    DealOutcomeUpdatedSchema,
    `${aboutOf(DealOutcomeUpdatedSchema)} Its payload with the personal fields open is also the data of a ` +
      'deal.outcome.updated webhook (/docs/webhooks/deal.outcome.updated.json).',
  ),
];

/** The served documents by name. */
export const EVENT_SCHEMAS: Readonly<Record<string, JsonSchemaDocument>> = Object.freeze(
  Object.fromEntries(EVENT_SCHEMA_LIST.map((entry) => [entry.name, entry.document])),
);
