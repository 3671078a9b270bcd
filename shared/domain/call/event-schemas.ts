/**
 * JSON Schemas of the messages downstream systems consume, written in TypeBox so the types and the
 * documents cannot drift apart. Served at /docs/events/{name}.json; a message with personal fields
 * has two (docs/decisions/0014-erasure-crypto-shredding.md):
 * - `{type}`: the message as it goes out on its topic. Its personal fields are not in it: they
 *   travel encrypted in `sealed`. Derived from the opened schema and `PERSONAL_FIELDS`, the list
 *   the sealing itself follows, so the document and the messages cannot disagree.
 * - `{type}.opened`: the payload with its personal fields open, as the service reads it and a
 *   deal.outcome.updated webhook carries it (and as messages written before sealing existed are).
 */
import { type Static, Type } from '@sinclair/typebox';
import { SEGMENT_LIMITS } from '../transcript/transcript-segments.ts';
import type { CallErased, CallRetried, TranscriptRecorded } from './call-events.ts';
import type { DealRecord } from './deal-record.ts';
import { sealedMessage } from './sealed-message-schema.ts';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

/**
 * `deal.outcome.updated` with its personal fields open: the deal record as written, the data of a
 * deal.outcome.updated webhook. On `deals.outcome-updated.v1` it is `SealedDealOutcomeUpdatedSchema`.
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
    $id: 'deal.outcome.updated.opened',
    title: 'deal.outcome.updated (personal fields open)',
    description:
      'Emitted after valid deal data in a submission has been written to the deal record. This is the payload with ' +
      'its personal fields open: the data of a deal.outcome.updated webhook. On deals.outcome-updated.v1 they ' +
      'travel sealed: /docs/events/deal.outcome.updated.json.',
    additionalProperties: false,
  },
);

// The payload is the deal record as written: a compile error here means the two drifted apart.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _dealRecordMatchesSchema: Same<Static<typeof DealOutcomeUpdatedSchema>, DealRecord> = true;
void _dealRecordMatchesSchema;

/**
 * `deal.outcome.updated` on `deals.outcome-updated.v1`: the value of the message (CloudEvents
 * binary mode: `ce_id` equals `eventId`, `ce_type` is `deal.outcome.updated`, `ce_subject` and
 * the key are the call id, `ce_teamid` the team), its personal fields sealed.
 */
export const SealedDealOutcomeUpdatedSchema = sealedMessage('deal.outcome.updated', DealOutcomeUpdatedSchema, {
  $id: 'deal.outcome.updated',
  title: 'deal.outcome.updated',
  description: (personalFields) =>
    'Emitted after valid deal data in a submission has been written to the deal record: the message as it is on ' +
    `deals.outcome-updated.v1. Its personal fields (${personalFields}) are not in it; they travel encrypted in ` +
    'sealed. The payload with them open, as a deal.outcome.updated webhook carries it (and as messages written ' +
    'before sealing existed carry it), is /docs/events/deal.outcome.updated.opened.json.',
});

/**
 * `call.retried` with its personal field open (the previous failure's reason): the CallRetried
 * event as the service reads it. On `calls.events.v1` it is `SealedCallRetriedSchema`.
 */
export const CallRetriedSchema = Type.Object(
  {
    previousFailure: Type.Object(
      {
        code: Type.String({ description: 'The processingError the call had, e.g. audio_unreachable.' }),
        reason: Type.String({ description: 'The statusReason the call had.' }),
        at: Type.String({ format: 'date-time', description: 'When the call failed.' }),
      },
      { additionalProperties: false, description: 'The failure the retry answers.' },
    ),
    resumesAt: Type.Union(
      [
        Type.Literal('queued'),
        Type.Literal('fetching_audio'),
        Type.Literal('transcribing'),
        Type.Literal('analysing'),
        Type.Literal('recording_deal'),
        Type.Literal('completing'),
      ],
      { description: 'The stage processing resumes at; the steps before it are not done again.' },
    ),
    capacity: Type.Object(
      {
        reservedMinutes: Type.Integer({
          minimum: 1,
          description: 'Capacity reserved again for the retry (the same estimate as at submission).',
        }),
        autoRechargedMinutes: Type.Integer({
          minimum: 0,
          description: 'Capacity the reservation bought by auto-recharge.',
        }),
      },
      { additionalProperties: false },
    ),
    at: Type.String({
      format: 'date-time',
      description: 'When the call was retried; its processing deadline is this plus PROCESSING_TIMEOUT_MS.',
    }),
  },
  {
    $id: 'call.retried.opened',
    title: 'call.retried (personal fields open)',
    description:
      'An operator retried a failed call whose failure may not happen again; processing resumes from its last good ' +
      'step. This is the payload with its personal field open (previousFailure.reason); on calls.events.v1 it ' +
      'travels sealed: /docs/events/call.retried.json.',
    additionalProperties: false,
  },
);

// The schema and the event's type describe one shape.
const _callRetriedMatchesSchema: Same<Static<typeof CallRetriedSchema>, CallRetried['data']> = true;
void _callRetriedMatchesSchema;

/**
 * `call.retried` on `calls.events.v1`: the value of the message (CloudEvents binary mode: `ce_id`
 * is the event's id, `ce_subject` and the key the call id, `ce_sequence` its revision in the
 * call's stream zero-padded to 16 digits, `ce_teamid` the team), its personal field sealed. The
 * call is pending again; its next events follow.
 */
export const SealedCallRetriedSchema = sealedMessage('CallRetried', CallRetriedSchema, {
  $id: 'call.retried',
  title: 'call.retried',
  description: (personalFields) =>
    'An operator retried a failed call whose failure may not happen again; processing resumes from its last good ' +
    `step. The message as it is on calls.events.v1: its personal field (${personalFields}: it may name the audio ` +
    'host) is not in it; it travels encrypted in sealed. The payload with it open (and messages written before ' +
    'sealing existed) is /docs/events/call.retried.opened.json.',
});

const Seconds = Nullable(
  Type.Number({
    minimum: 0,
    description: 'Seconds from the start of the call, to the millisecond; null when the transcript carries no times.',
  }),
);

/**
 * `call.transcript.recorded` with its personal fields open (`text`, `segments`): the
 * TranscriptRecorded event as the service reads it. `segments` is absent from events recorded
 * before it existed; read them from the text then (GET /api/calls/{callId}/transcript does). On
 * `calls.events.v1` it is `SealedTranscriptRecordedSchema`.
 */
export const TranscriptRecordedSchema = Type.Object(
  {
    source: Type.Union([Type.Literal('audio'), Type.Literal('inline')], {
      description: 'audio: transcribed from the recording; inline: the transcript sent with the call.',
    }),
    text: Type.String({ description: 'The transcript as recorded (an inline one as sent, WebVTT/SRT cues included).' }),
    truncated: Type.Boolean({ description: 'The inline transcript was cut to 512,000 bytes.' }),
    durationSeconds: Nullable(
      Type.Number({
        minimum: 0,
        description: 'The audio length, or for an inline transcript its normalised duration or a length estimate.',
      }),
    ),
    engine: Nullable(
      Type.String({
        description: 'The transcription engine, e.g. pocketsphinx or openai:whisper-1; null for an inline transcript.',
      }),
    ),
    segments: Type.Optional(
      Type.Array(
        Type.Object(
          {
            start: Seconds,
            end: Seconds,
            speaker: Nullable(
              Type.String({
                maxLength: SEGMENT_LIMITS.maxSpeakerChars,
                description: 'The speaker as labelled; null when not known.',
              }),
            ),
            text: Type.String({
              minLength: 1,
              description: 'What was said; lines of one cue are joined by a line break.',
            }),
          },
          { additionalProperties: false },
        ),
        {
          maxItems: SEGMENT_LIMITS.maxSegments,
          description:
            "Who said what and when, in order: the engine's timed segments, else one per WebVTT/SRT cue or per line of the text. " +
            `Past ${SEGMENT_LIMITS.maxSegments}, the last one holds the rest, a line each, "Speaker: " where the speaker changes (its speaker null unless they all have one). ` +
            `Their text totals at most ${SEGMENT_LIMITS.maxTextBytes} bytes of UTF-8.`,
        },
      ),
    ),
    at: Type.String({ format: 'date-time', description: 'When the transcript was recorded.' }),
  },
  {
    $id: 'call.transcript.recorded.opened',
    title: 'call.transcript.recorded (personal fields open)',
    description:
      "The call's transcript, with its timed, speaker-labelled segments. This is the payload with its personal " +
      'fields open (text, segments); on calls.events.v1 they travel sealed: /docs/events/call.transcript.recorded.json.',
    additionalProperties: false,
  },
);

// Every event written today fits the message schema, which also admits version-1 events (no segments).
type Fits<A, B> = [A] extends [B] ? true : false;
const _transcriptRecordedMatchesSchema: Fits<
  TranscriptRecorded['data'],
  Static<typeof TranscriptRecordedSchema>
> = true;
void _transcriptRecordedMatchesSchema;

/**
 * `call.transcript.recorded` on `calls.events.v1`: the value of the message (CloudEvents binary
 * mode as for call.retried), its personal fields (the transcript's text and segments) sealed.
 */
export const SealedTranscriptRecordedSchema = sealedMessage('TranscriptRecorded', TranscriptRecordedSchema, {
  $id: 'call.transcript.recorded',
  title: 'call.transcript.recorded',
  description: (personalFields) =>
    "The call's transcript was recorded: the message as it is on calls.events.v1. The transcript itself " +
    `(${personalFields}: what was said, and who said it when) is personal: it is not in the message but travels ` +
    'encrypted in sealed; read it through GET /api/calls/{callId}/transcript. The payload with it open (and ' +
    'messages written before sealing existed) is /docs/events/call.transcript.recorded.opened.json.',
});

/**
 * `call.erased` on `calls.events.v1` (docs/decisions/0014-erasure-crypto-shredding.md): the call was
 * erased; its personal fields can no longer be read from any earlier message. No personal data.
 */
export const CallErasedSchema = Type.Object(
  {
    cause: Type.Union([Type.Literal('deleted'), Type.Literal('retention'), Type.Literal('erasure_request')], {
      description:
        "deleted: the team's DELETE /api/calls/{callId}; retention: the team's retention period; erasure_request: an erasure request by e-mail.",
    }),
    erasureId: Type.Optional(
      Type.String({ description: 'The erasure request that erased the call (cause erasure_request).' }),
    ),
    at: Type.String({ format: 'date-time', description: 'When the call was erased.' }),
  },
  {
    $id: 'call.erased',
    title: 'call.erased',
    description: 'The call was erased: drop what you keep of it.',
    additionalProperties: false,
  },
);

const _callErasedMatchesSchema: Same<Static<typeof CallErasedSchema>, CallErased['data']> = true;
void _callErasedMatchesSchema;

/**
 * The served documents by name: a message's type is the message as it is on its topic; `.opened`,
 * the same payload with its personal fields open. call.erased has none.
 */
export const EVENT_SCHEMAS = {
  'call.erased': CallErasedSchema,
  'deal.outcome.updated': SealedDealOutcomeUpdatedSchema,
  'deal.outcome.updated.opened': DealOutcomeUpdatedSchema,
  'call.retried': SealedCallRetriedSchema,
  'call.retried.opened': CallRetriedSchema,
  'call.transcript.recorded': SealedTranscriptRecordedSchema,
  'call.transcript.recorded.opened': TranscriptRecordedSchema,
} as const;
