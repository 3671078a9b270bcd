/**
 * TypeBox schemas of the Push API: the request body with every alias, the 201 body and the
 * RFC 9457 problem body. They document the contract (OpenAPI); `normaliseSubmission` is the
 * validator. Register the body schema for documentation only and let the normaliser answer: it
 * collects every error with the field name the caller sent, where a JSON Schema validator would
 * report in its own words (and refuse `null`, which the normaliser reads as "not sent").
 *
 * Unknown fields: ignored, never a 400 — integrations add fields over time and the spec names no
 * error for them — but each is reported in the 201 body's `warnings`, so a misspelt field
 * (`repEmial`) does not go unnoticed. Hence `additionalProperties: true`.
 *
 * The normaliser's list of known fields is read from these schemas, so a field cannot be accepted
 * without being documented here.
 */
import { Type, type Static, type TSchema, type TOptional } from '@sinclair/typebox';
import { AnyKeyRecord } from '../any-key-record.ts';

const MAX_TAGS = 20;
const MAX_TAG_CHARS = 50;
const MAX_NOTES_CHARS = 2000;
const MAX_METADATA_KEYS = 20;
// The spec's bounds above; the ones it leaves open below: docs/decisions/0026-bounds-the-spec-leaves-open.md.
const MAX_REP_NAME_CHARS = 200;
const MAX_CALL_TITLE_CHARS = 500;
const MAX_AUDIO_URL_CHARS = 2048;
const MAX_METADATA_KEY_CHARS = 100;
const MAX_METADATA_VALUE_CHARS = 1000;

/** The same field under its camelCase and snake_case names. */
function pair<C extends string, S extends string, T extends TSchema>(
  camel: C,
  snake: S,
  make: (description: string) => T,
  description: string,
): Record<C | S, TOptional<T>>;
function pair(
  camel: string,
  snake: string,
  make: (description: string) => TSchema,
  description: string,
): Record<string, TOptional<TSchema>> {
  return {
    [camel]: Type.Optional(make(description)),
    [snake]: Type.Optional(make(`${description} snake_case alias of ${camel}.`)),
  };
}

const booleanLike = (description: string) =>
  Type.Union([Type.Boolean(), Type.Literal('true'), Type.Literal('false')], {
    description: `${description} A real boolean; the strings "true" and "false" are also accepted.`,
  });
const amount = (description: string) =>
  Type.Union(
    [Type.Number({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }), Type.String({ pattern: '^\\d+(\\.\\d+)?$' })],
    {
      description: `${description} A number from 0 to ${Number.MAX_SAFE_INTEGER} (2^53 − 1: past it a double cannot keep an amount exactly), or a plain decimal string such as "1200.50" within the same range.`,
    },
  );
const isoDate = (description: string) =>
  Type.String({
    description: `${description} ISO 8601 date (YYYY-MM-DD, midnight UTC) or date-time (YYYY-MM-DDThh:mm[:ss[.fff]] and an offset Z, ±hh:mm, ±hhmm or ±hh; a date-time without an offset is read as UTC). T and Z may be lower case and the fraction may follow a comma; the basic format (20260101) and hours alone (T10Z) are refused.`,
    examples: ['2026-11-20', '2026-11-20T14:30:00Z'],
  });
const notes = (description: string) => Type.String({ maxLength: MAX_NOTES_CHARS, description });
const tags = (description: string) =>
  Type.Array(Type.String({ minLength: 1, maxLength: MAX_TAG_CHARS }), { maxItems: MAX_TAGS, description });
const durationUnit = (description: string) =>
  Type.Union([Type.Literal('seconds'), Type.Literal('minutes'), Type.Literal('milliseconds')], { description });

/** The deal object, `deal` in the body. */
export const DealSchema = Type.Object(
  {
    ...pair('dealSize', 'deal_size', amount, 'Deal amount.'),
    ...pair('revenueCollected', 'revenue_collected', amount, 'Revenue collected so far.'),
    ...pair('dealDate', 'deal_date', isoDate, 'Date of the deal.'),
    notes: Type.Optional(notes(`Deal notes, at most ${MAX_NOTES_CHARS} characters.`)),
  },
  {
    additionalProperties: true,
    description:
      'Deal data, written to the deal record the call page and revenue analytics use. Each field may instead be sent flat ' +
      '(dealSize, revenueCollected, dealDate, dealNotes); sending both with different values is a 400.',
  },
);

/** The request body of POST /api/integrations/push-api/ingest. */
export const SubmissionBodySchema = Type.Object(
  {
    transcript: Type.Optional(
      Type.String({
        description:
          'Inline transcript. One of transcript or audioUrl is required (non-empty). Capped at 500 KB (512,000 bytes of UTF-8): ' +
          'longer text is truncated on a character boundary and the response says so in warnings.',
      }),
    ),
    ...pair(
      'audioUrl',
      'audio_url',
      (d) => Type.String({ format: 'uri', maxLength: MAX_AUDIO_URL_CHARS, description: d }),
      `Absolute http(s) link to the recording, downloaded by the service, at most ${MAX_AUDIO_URL_CHARS} characters. One of transcript or audioUrl is required. When both are sent, the audio is transcribed and used.`,
    ),
    ...pair(
      'repName',
      'rep_name',
      (d) => Type.String({ maxLength: MAX_REP_NAME_CHARS, description: d }),
      `Rep's full name, at most ${MAX_REP_NAME_CHARS} characters.`,
    ),
    ...pair(
      'repEmail',
      'rep_email',
      (d) => Type.String({ format: 'email', description: d }),
      'E-mail of the rep; matched case-insensitively to a team member. No match: tags and notes go to the team owner.',
    ),
    ...pair(
      'callTitle',
      'call_title',
      (d) => Type.String({ maxLength: MAX_CALL_TITLE_CHARS, description: d }),
      `At most ${MAX_CALL_TITLE_CHARS} characters. Displayed only when AI title generation is disabled and the title is not blank.`,
    ),
    ...pair('disableAiTitleGeneration', 'disable_ai_title_generation', booleanLike, 'Default false.'),
    ...pair(
      'useAiCallTitle',
      'use_ai_call_title',
      booleanLike,
      'Inverse of disableAiTitleGeneration; contradicting it is a 400.',
    ),
    ...pair('callDate', 'call_date', isoDate, 'When the call happened.'),
    duration: Type.Optional(
      Type.Union([Type.Number({ minimum: 0 }), Type.String({ pattern: '^\\d+(\\.\\d+)?$' })], {
        description:
          'Call length in seconds, minutes or milliseconds, normalised to seconds: by durationUnit when sent, else by the ' +
          'platform in metadata.source, else by magnitude; corrected later by the audio or transcript length.',
      }),
    ),
    ...pair('durationUnit', 'duration_unit', durationUnit, 'Unit of duration, when the sender knows it.'),
    ...pair(
      'tags',
      'call_tags',
      tags,
      `At most ${MAX_TAGS} tags, each a non-empty string of at most ${MAX_TAG_CHARS} characters.`,
    ),
    callTags: Type.Optional(tags('Alias of tags.')),
    ...pair('notes', 'call_notes', notes, `Free text, at most ${MAX_NOTES_CHARS} characters.`),
    callNotes: Type.Optional(notes('Alias of notes.')),
    metadata: Type.Optional(
      AnyKeyRecord(
        Type.Union([Type.String({ maxLength: MAX_METADATA_VALUE_CHARS }), Type.Number(), Type.Boolean(), Type.Null()]),
        {
          maxProperties: MAX_METADATA_KEYS,
          propertyNames: { maxLength: MAX_METADATA_KEY_CHARS },
          description: `Flat key/value object, at most ${MAX_METADATA_KEYS} keys of at most ${MAX_METADATA_KEY_CHARS} characters; values are strings (at most ${MAX_METADATA_VALUE_CHARS} characters), numbers (an integer within ±(2^53 − 1): send a larger id as a string), booleans or null. Recommended: source (lower-case platform name), the platform's call id, syncMethod.`,
        },
      ),
    ),
    deal: Type.Optional(DealSchema),
    ...pair('dealSize', 'deal_size', amount, 'Flat alias of deal.dealSize.'),
    ...pair('revenueCollected', 'revenue_collected', amount, 'Flat alias of deal.revenueCollected.'),
    ...pair('dealDate', 'deal_date', isoDate, 'Flat alias of deal.dealDate.'),
    ...pair('dealNotes', 'deal_notes', notes, 'Flat alias of deal.notes.'),
  },
  {
    additionalProperties: true,
    description:
      'A call to analyse. Every optional field accepts its camelCase or snake_case name. No string anywhere in the body (keys included) ' +
      'may contain U+0000 or an unpaired surrogate, and objects and arrays nest at most 32 levels: either is a 400 naming the field.',
  },
);

/** The request body as a JSON Schema validator would type it (the normaliser takes `unknown`). */
export type SubmissionBody = Static<typeof SubmissionBodySchema>;

/** Every top-level field name the service understands. */
export const SUBMISSION_FIELDS: ReadonlySet<string> = new Set(Object.keys(SubmissionBodySchema.properties));
/** Every field name the service understands inside `deal`. */
export const DEAL_FIELDS: ReadonlySet<string> = new Set(Object.keys(DealSchema.properties));

/** The 201 body. */
export const SubmissionAcceptedSchema = Type.Object({
  callId: Type.String({ description: 'Identifier of the created call, for auditing.' }),
  status: Type.Literal('pending', { description: 'A new call waits for analysis.' }),
  processingTriggered: Type.Boolean({ description: 'Whether processing was started.' }),
  processingError: Type.Union([Type.Null(), Type.String()], {
    description: 'Why processing could not start; null when it did.',
  }),
  statusReason: Type.String({ description: "Reason for the call's status, e.g. queued_for_processing." }),
  warnings: Type.Array(Type.String(), {
    description: 'What the service changed or ignored: truncated transcript, unknown fields.',
  }),
});
export type SubmissionAccepted = Static<typeof SubmissionAcceptedSchema>;

/**
 * What a 4xx is about: a field of the body as the caller named it (`call_tags[3]`), `body` for the
 * body as a whole, a header (`X-API-Key`), a path or query parameter (`callId`), or `url`; and the
 * rule it breaks.
 */
export const FieldErrorSchema = Type.Object({
  field: Type.String({
    description:
      'What the error is about, as the caller named it: a body field (call_tags[3], deal.dealSize), body for the body as a whole, a header (X-API-Key, Idempotency-Key, Content-Encoding), a path or query parameter (callId, status), or url.',
  }),
  message: Type.String({ description: 'The rule it breaks, e.g. "at most 50 characters".' }),
});
export type FieldError = Static<typeof FieldErrorSchema>;

/** RFC 9457 problem details (`application/problem+json`), with a stable `code` and, on every 4xx, `errors` naming each field and its rule. */
export const ProblemSchema = Type.Object({
  type: Type.String({ description: 'URI reference identifying the problem type.' }),
  title: Type.String({ description: 'Short summary of the problem type.' }),
  status: Type.Integer({ minimum: 400, maximum: 599, description: 'HTTP status code.' }),
  detail: Type.String({ description: 'Explanation of this occurrence.' }),
  code: Type.String({ description: 'Stable machine-readable error code, e.g. VALIDATION_FAILED.' }),
  errors: Type.Optional(
    Type.Array(FieldErrorSchema, {
      description: 'Each field and the rule it breaks: on every 4xx (at least one entry), never on a 5xx.',
    }),
  ),
});
export type Problem = Static<typeof ProblemSchema>;

/** Limits the schema documents and the normaliser enforces. */
export const SUBMISSION_LIMITS = {
  maxTags: MAX_TAGS,
  maxTagChars: MAX_TAG_CHARS,
  maxNotesChars: MAX_NOTES_CHARS,
  maxMetadataKeys: MAX_METADATA_KEYS,
  maxRepNameChars: MAX_REP_NAME_CHARS,
  maxCallTitleChars: MAX_CALL_TITLE_CHARS,
  maxAudioUrlChars: MAX_AUDIO_URL_CHARS,
  maxMetadataKeyChars: MAX_METADATA_KEY_CHARS,
  maxMetadataValueChars: MAX_METADATA_VALUE_CHARS,
} as const;
