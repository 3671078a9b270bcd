/**
 * What the service publishes on each of its topics (README "Downstream: Kafka topics"): the
 * CloudEvents types a topic carries and what its headers hold. The served JSON Schemas are listed by
 * it (docs/decisions/0024-every-published-message-has-a-schema.md), and the contract test checks
 * the real messages of every topic against it: a type published without a schema fails there.
 */
import type { Topics } from '../../topics.ts';
import { CLOUD_EVENT_TYPES } from './call-event-types.ts';
import { CALL_SUBMITTED_TYPE } from './call-submitted.ts';
import { DEAL_OUTCOME_UPDATED_TYPE } from './deal-record.ts';

export interface TopicMessages {
  /** What the topic carries. */
  description: string;
  /** The `ce_type` of every message the service writes to it; empty for a topic of records as received. */
  ceTypes: readonly string[];
  /** `ce_source` of its messages; undefined when they keep the one they came with. */
  ceSource: string | undefined;
  /** What the headers that differ from topic to topic hold. */
  headers: Readonly<Record<string, string>>;
  /** Whether its messages carry the call's trace context (`traceparent`) when it is traced. */
  traced: boolean;
}

/**
 * The headers of a message the service writes (CloudEvents binary mode), in this order: those every
 * topic's have alike, and those the topic says (`TopicMessages.headers`). Every message also has
 * `content-type: application/json`.
 */
export const messageHeaders = (published: TopicMessages): Record<string, string> => ({
  ce_specversion: '1.0',
  ce_id: published.headers.ce_id!,
  ce_source: published.ceSource!,
  ce_type: 'the message type: the schema listed for it describes the value',
  ce_subject: 'the call id, also the key: the messages of one call stay in order on one partition',
  ce_time: published.headers.ce_time!,
  ...published.headers,
  ce_teamid: 'the team of the call',
  ...(published.traced
    ? {
        traceparent:
          'the W3C trace context of the call when it is traced, also as ce_traceparent (and tracestate, ce_tracestate)',
      }
    : {}),
});

export const TOPIC_MESSAGES: Readonly<Record<keyof Topics, TopicMessages>> = {
  callsSubmitted: {
    description:
      "Each accepted submission, written before the 201. Its value is the call's first event on calls.events.v1 " +
      '(the same fields; sealed is encrypted apart), its headers are not.',
    ceTypes: [CALL_SUBMITTED_TYPE],
    ceSource: '/api/integrations/push-api/ingest',
    headers: { ce_id: 'the call id', ce_time: 'when the call was accepted (submittedAt)' },
    traced: true,
  },
  callEvents: {
    description: "Every event of every call, in the order of the call's stream, its personal fields sealed.",
    ceTypes: Object.values(CLOUD_EVENT_TYPES),
    ceSource: '/calls',
    headers: {
      ce_id: "the event's id",
      ce_time: 'when the event was stored',
      ce_sequence:
        "the event's revision in its call's stream, zero-padded to 16 digits so the strings sort in order; bare in " +
        'records relayed before the padding: compare it as an integer where a topic holds both',
    },
    traced: true,
  },
  dealOutcomeUpdated: {
    description: 'A deal record was written: after valid deal data in a submission, its personal fields sealed.',
    ceTypes: [DEAL_OUTCOME_UPDATED_TYPE],
    ceSource: '/deals',
    headers: { ce_id: 'eventId, the id of the deal write', ce_time: 'recordedAt, when the deal record was written' },
    // Published from the deals outbox, which keeps no trace context (README "Traces").
    traced: false,
  },
  deadLetter: {
    description:
      'Records of calls.submitted.v1 the processor could not read, as received (key, value and headers), so no ' +
      'schema: a record is here because it may not match one.',
    ceTypes: [],
    ceSource: undefined,
    headers: {
      dlq_reason: 'why the record could not be read',
      dlq_source_topic: 'where it came from',
      dlq_source_partition: 'its partition there',
      dlq_source_offset: 'its offset there',
    },
    // As received: the trace context is the source record's, when it had one.
    traced: false,
  },
};
