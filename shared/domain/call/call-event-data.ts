/**
 * The shape of each call event's data, today's version, in TypeBox with what each field means. The
 * call catalogue checks stored events against these (call-catalogue.ts), and the JSON Schemas the
 * service serves for its topics are derived from the catalogue (event-schemas.ts), so what a
 * consumer is told and what the service reads are one text
 * (docs/decisions/0024-every-published-message-has-a-schema.md).
 *
 * Objects are left open (no `additionalProperties: false`) where they always were: an event stored
 * with a field since dropped still decodes. The served documents close them: the service writes
 * no other field, which the contract test checks on real messages.
 */
import { type Static, Type } from '@sinclair/typebox';
import { AnyKeyRecord } from '../any-key-record.ts';
import { DURATION_UNITS } from '../submission/duration.ts';
import { SEGMENT_LIMITS } from '../transcript/transcript-segments.ts';
import type { CallErased, CallRetried, TranscriptRecorded } from './call-events.ts';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);
const Instant = (description: string) => Type.String({ format: 'date-time', description });

const DealSchema = Type.Object(
  {
    dealSize: Type.Optional(Type.Number({ description: 'Deal amount.' })),
    revenueCollected: Type.Optional(Type.Number({ description: 'Revenue collected so far.' })),
    dealDate: Type.Optional(
      Type.String({ description: 'ISO 8601 instant; a date-only value was read as midnight UTC.' }),
    ),
    notes: Type.Optional(Type.String({ description: 'Notes about the deal.' })),
  },
  {
    description:
      'The deal fields sent with the call, normalised (docs/decisions/0008-deal-fields.md); only those sent.',
  },
);

const SubmissionSchema = Type.Object(
  {
    transcript: Type.Optional(
      Type.Object(
        {
          text: Type.String({ description: 'The inline transcript, cut to 512,000 UTF-8 bytes.' }),
          truncated: Type.Boolean({ description: 'The transcript was cut.' }),
          originalBytes: Type.Number({ description: 'Its UTF-8 length as received.' }),
        },
        { description: 'The inline transcript; absent when only a recording was sent.' },
      ),
    ),
    audioUrl: Type.Optional(Type.String({ description: 'Absolute http(s) URL of the recording.' })),
    repName: Type.Optional(Type.String()),
    repEmail: Type.Optional(Type.String({ description: 'As sent (trimmed).' })),
    callTitle: Type.Optional(
      Type.String({ description: 'The title sent; displayed only when aiTitleEnabled is false.' }),
    ),
    aiTitleEnabled: Type.Boolean({
      description: 'False when disableAiTitleGeneration was true or useAiCallTitle false.',
    }),
    callDate: Type.Optional(
      Type.String({
        description: 'ISO 8601 instant; a date-only value is midnight UTC (docs/decisions/0007-dates.md).',
      }),
    ),
    duration: Type.Optional(
      Type.Object(
        {
          seconds: Type.Number({ description: 'Length of the call in seconds (millisecond precision).' }),
          unit: Type.Union(
            DURATION_UNITS.map((unit) => Type.Literal(unit)),
            { description: 'The unit the value sent was read in.' },
          ),
          basis: Type.Union(
            (['explicit', 'source', 'magnitude', 'audio', 'transcript'] as const).map((basis) => Type.Literal(basis)),
            { description: 'Why that unit: the body said so, the platform, the size of the number, or evidence.' },
          ),
          raw: Type.Number({ description: 'The value as sent.' }),
        },
        { description: 'The duration sent, normalised.' },
      ),
    ),
    tags: Type.Array(Type.String(), { description: 'Trimmed, exact duplicates removed; empty when none were sent.' }),
    notes: Type.Optional(Type.String()),
    metadata: AnyKeyRecord(Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]), {
      description: 'Flat key-value metadata as sent; empty when none was.',
    }),
    deal: Type.Optional(DealSchema),
  },
  { description: 'The submission, normalised: one name per field, aliases resolved, values checked and converted.' },
);

const AttributionSchema = Type.Union(
  [
    Type.Object({
      kind: Type.Literal('member'),
      memberId: Type.String(),
      email: Type.String(),
      name: Type.String(),
    }),
    Type.Object({ kind: Type.Literal('owner'), email: Type.String(), name: Type.String() }),
  ],
  { description: 'Who tags and notes attach to: the team member matched by repEmail, else the team owner.' },
);

export const CallSubmittedSchema = Type.Object(
  {
    callId: Type.String({ minLength: 1 }),
    teamId: Type.String({ minLength: 1 }),
    keyId: Type.String({ description: 'The API key that submitted the call (its id, never the secret).' }),
    submittedAt: Instant('When the ingress accepted the call.'),
    submission: SubmissionSchema,
    attributedTo: AttributionSchema,
    capacity: Type.Object(
      {
        reservedMinutes: Type.Number({ description: 'Minutes of live call capacity reserved for the call.' }),
        autoRechargedMinutes: Type.Number({ description: 'Of those, the minutes bought by auto-recharge.' }),
      },
      { description: 'Capacity reserved at submission; settled when the real length is known.' },
    ),
    warnings: Type.Array(Type.String(), { description: 'What the ingress changed or ignored (also in the 201 body).' }),
  },
  { description: 'A call was accepted: the submission as the ingress normalised it, before it answered 201.' },
);

export const ProcessingStartedSchema = Type.Object(
  {
    mode: Type.Union([Type.Literal('audio'), Type.Literal('transcript')], {
      description: 'audio: the recording is fetched and transcribed; transcript: the inline transcript is analysed.',
    }),
    deadline: Instant(
      'When the call fails processing_timeout unless it has finished (PROCESSING_TIMEOUT_MS after now).',
    ),
    at: Instant('When processing started.'),
  },
  { description: 'Processing of the call started.' },
);

export const AudioFetchedSchema = Type.Object(
  {
    bytes: Type.Number({ description: 'Size of the recording downloaded.' }),
    contentType: Type.String({ description: 'Its media type as served, lower-cased, e.g. audio/mpeg.' }),
    at: Instant('When the download finished.'),
  },
  { description: 'The recording was downloaded from audioUrl.' },
);

const Seconds = Nullable(
  Type.Number({
    minimum: 0,
    description: 'Seconds from the start of the call, to the millisecond; null when the transcript carries no times.',
  }),
);

/**
 * `TranscriptRecorded` in every version: `segments` is absent from events recorded before it
 * existed (version 1), which the call-events relay publishes as stored. Today's version
 * (`TranscriptRecordedV2Schema`) always has them.
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
            `Their text totals at most ${SEGMENT_LIMITS.maxTextBytes} bytes of UTF-8. Absent from events recorded before segments existed.`,
        },
      ),
    ),
    at: Instant('When the transcript was recorded.'),
  },
  {
    description: "The call's transcript was recorded, with its timed, speaker-labelled segments.",
    additionalProperties: false,
  },
);

// Every event written today fits it, and it also admits version-1 events (no segments).
type Fits<A, B> = [A] extends [B] ? true : false;
const _transcriptRecordedFits: Fits<TranscriptRecorded['data'], Static<typeof TranscriptRecordedSchema>> = true;
void _transcriptRecordedFits;

/** TranscriptRecorded v2, today's: segments always there. */
export const TranscriptRecordedV2Schema = Type.Composite([
  Type.Omit(TranscriptRecordedSchema, ['segments']),
  Type.Required(Type.Pick(TranscriptRecordedSchema, ['segments'])),
]);

export const CallAnalysedSchema = Type.Object(
  {
    title: Type.String({ description: 'The AI title (title rule 1, docs/decisions/0005-titles.md).' }),
    summary: Type.String(),
    score: Type.Number({ description: '0–100.' }),
    components: Type.Array(
      Type.Object({
        name: Type.String(),
        value: Type.Number({ description: 'The raw measure, e.g. 0.62 for a talk ratio or 7 questions.' }),
        score: Type.Number({ description: '0–100.' }),
        weight: Type.Number(),
        explanation: Type.String(),
      }),
      { description: 'What the score is made of.' },
    ),
    insights: Type.Array(
      Type.Object({
        kind: Type.Union([Type.Literal('strength'), Type.Literal('improvement')]),
        code: Type.String({ description: 'Stable, e.g. talk_ratio_high.' }),
        message: Type.String(),
        evidence: Type.String({ description: 'The transcript line the insight is based on.' }),
      }),
    ),
    engine: Type.String({ description: 'The analyser, e.g. conversation-analyser/1.' }),
    at: Instant('When the analysis was recorded.'),
  },
  { description: 'The call was analysed: its AI title, summary, score and coaching insights.' },
);

export const DealRecordedSchema = Type.Object(
  { deal: DealSchema, at: Instant('When the deal was written; the deal record says recordedAt.') },
  {
    description:
      'The deal sent with the call was written to its deal record; deals.outcome-updated.v1 carries the record.',
  },
);

export const CallCompletedSchema = Type.Object(
  {
    durationSeconds: Nullable(
      Type.Number({ description: 'The length of the call as its transcript measured it; null when unknown.' }),
    ),
    at: Instant('When the call completed.'),
  },
  { description: 'The call completed: it is analysed, and its deal recorded when it had one.' },
);

export const CallFailedSchema = Type.Object(
  {
    code: Type.String({
      description: "Stable code, shown as the call's processingError, e.g. processing_timeout, audio_fetch_blocked.",
    }),
    reason: Type.String({ description: "For a person, shown as the call's statusReason; it may name the audio host." }),
    at: Instant('When the call failed.'),
  },
  { description: 'Processing of the call failed: a step failed for good, or the processing deadline passed.' },
);

export const CallRetriedSchema = Type.Object(
  {
    previousFailure: Type.Object(
      {
        code: Type.String({ description: 'The processingError the call had, e.g. audio_unreachable.' }),
        reason: Type.String({ description: 'The statusReason the call had.' }),
        at: Instant('When the call failed.'),
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
    at: Instant('When the call was retried; its processing deadline is this plus PROCESSING_TIMEOUT_MS.'),
  },
  {
    description:
      'An operator retried a failed call whose failure may not happen again; processing resumes from its last good ' +
      'step. The call is pending again; its next events follow.',
    additionalProperties: false,
  },
);

// The schema and the event's type describe one shape.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _callRetriedMatchesSchema: Same<Static<typeof CallRetriedSchema>, CallRetried['data']> = true;
void _callRetriedMatchesSchema;

export const CallErasedSchema = Type.Object(
  {
    cause: Type.Union([Type.Literal('deleted'), Type.Literal('retention'), Type.Literal('erasure_request')], {
      description:
        "deleted: the team's DELETE /api/calls/{callId}; retention: the team's retention period; erasure_request: an erasure request by e-mail.",
    }),
    erasureId: Type.Optional(
      Type.String({ description: 'The erasure request that erased the call (cause erasure_request).' }),
    ),
    at: Instant('When the call was erased.'),
  },
  {
    description:
      'The call was erased (docs/decisions/0014-erasure-crypto-shredding.md): its personal fields can no longer be ' +
      'read from any earlier message. Drop what you keep of it.',
    additionalProperties: false,
  },
);

const _callErasedMatchesSchema: Same<Static<typeof CallErasedSchema>, CallErased['data']> = true;
void _callErasedMatchesSchema;
