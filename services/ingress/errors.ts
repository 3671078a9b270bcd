import type { FieldError, Problem } from '../../shared/domain/submission/submission-schema.ts';
import type { CallErrorCode } from '../../shared/domain/call/call-decider.ts';
import type { IDEMPOTENCY_ERROR_CODES } from '../../shared/domain/idempotency/idempotency-decider.ts';
import type { TeamErrorCode } from '../../shared/domain/team/team-decider.ts';
import type { WebhookErrorCode } from '../../shared/domain/webhook/webhook-decider.ts';

export type { FieldError, Problem };

/**
 * The one catalogue of error codes the HTTP API answers with, and the one table from code to
 * status. Every error body is RFC 9457 `application/problem+json`:
 * `{ type, title, status, detail, code, errors? }`.
 */

export const ERROR_STATUS = {
  /** No API key, a malformed one, or one that is unknown or revoked. */
  API_KEY_INVALID: 401,
  /** Admin API called without the right bearer token. */
  ADMIN_TOKEN_INVALID: 401,
  /** More requests than the key's limit in the sliding window, or (admin API) too many failed admin authentications from one address. */
  RATE_LIMITED: 429,
  /** Body larger than the limit (10 MB on the ingest endpoint). */
  PAYLOAD_TOO_LARGE: 413,
  /** Content-Type is not application/json, or Content-Encoding is not identity. */
  UNSUPPORTED_MEDIA_TYPE: 415,
  /** The body is not valid JSON. */
  MALFORMED_JSON: 400,
  /** Not a request HTTP can carry: a URL that does not decode, a malformed Content-Length, a broken request line. */
  BAD_REQUEST: 400,
  /** The request line and headers together exceed 16 KB. */
  REQUEST_HEADERS_TOO_LARGE: 431,
  /** The request did not arrive completely within the time allowed (see the README's limits). */
  REQUEST_TIMEOUT: 408,
  /** One or more fields break a rule; `errors[]` names each field and rule. */
  VALIDATION_FAILED: 400,
  /** The team's live call capacity is used up and auto-recharge is off. */
  CAPACITY_EXHAUSTED: 402,
  /** A resource named in the path does not exist (or belongs to another team). */
  NOT_FOUND: 404,
  /** The request conflicts with the current state (e.g. revoking a revoked key). */
  CONFLICT: 409,
  /** The same Idempotency-Key was sent with a different body. */
  IDEMPOTENCY_KEY_REUSED: 422,
  /** An operator retry of a call that is not failed, or failed in a way trying again cannot change. */
  CALL_NOT_RETRIABLE: 409,
  /** The call has no transcript yet (pending before transcription) or will not have one (failed before it). */
  TRANSCRIPT_NOT_READY: 409,
  /** SubRip or WebVTT asked of a transcript without times (plain or `Speaker:` text); json and txt still answer. */
  TRANSCRIPT_NOT_TIMED: 409,
  /**
   * A backend (event log, event store, read models) cannot serve the request right now, or
   * concurrent writers kept conflicting, or (DELETE of a call) the call was accepted but is not
   * stored yet; retry after Retry-After. The detail says why, and whether the request may have
   * been accepted all the same (then retry with the same Idempotency-Key).
   */
  SERVICE_UNAVAILABLE: 503,
  /** An unexpected failure; the detail never carries internal messages. */
  INTERNAL: 500,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof ERROR_STATUS;

const TITLES: Record<ErrorCode, string> = {
  API_KEY_INVALID: 'Missing or invalid API key',
  ADMIN_TOKEN_INVALID: 'Missing or invalid admin token',
  RATE_LIMITED: 'Too many requests',
  PAYLOAD_TOO_LARGE: 'Request body too large',
  UNSUPPORTED_MEDIA_TYPE: 'Unsupported media type',
  MALFORMED_JSON: 'Malformed JSON body',
  BAD_REQUEST: 'Malformed request',
  REQUEST_HEADERS_TOO_LARGE: 'Request headers too large',
  REQUEST_TIMEOUT: 'Request timeout',
  VALIDATION_FAILED: 'Invalid request',
  CAPACITY_EXHAUSTED: 'Live call capacity exhausted',
  NOT_FOUND: 'Not found',
  CONFLICT: 'Conflict',
  IDEMPOTENCY_KEY_REUSED: 'Idempotency key reused with another body',
  CALL_NOT_RETRIABLE: 'Call cannot be retried',
  TRANSCRIPT_NOT_READY: 'Transcript not ready',
  TRANSCRIPT_NOT_TIMED: 'Transcript has no timings',
  SERVICE_UNAVAILABLE: 'Service temporarily unavailable',
  INTERNAL: 'Internal error',
};

type IdempotencyErrorCode = (typeof IDEMPOTENCY_ERROR_CODES)[number];

/** How each refusal of the domain is answered. */
export const DOMAIN_ERROR_CODES: Record<
  TeamErrorCode | IdempotencyErrorCode | CallErrorCode | WebhookErrorCode,
  ErrorCode
> = {
  CALL_NOT_FOUND: 'NOT_FOUND',
  CALL_ALREADY_FINISHED: 'CONFLICT',
  CALL_STEP_OUT_OF_ORDER: 'CONFLICT',
  CALL_NOT_RETRIABLE: 'CALL_NOT_RETRIABLE',
  CALL_ERASED: 'NOT_FOUND',
  IDEMPOTENCY_KEY_REUSED: 'IDEMPOTENCY_KEY_REUSED',
  IDEMPOTENCY_KEY_IN_USE: 'CONFLICT',
  IDEMPOTENCY_KEY_NOT_CLAIMED: 'INTERNAL',
  TEAM_ALREADY_EXISTS: 'CONFLICT',
  TEAM_NOT_FOUND: 'NOT_FOUND',
  INVALID_TEAM_INPUT: 'VALIDATION_FAILED',
  INVALID_MINUTES: 'VALIDATION_FAILED',
  MEMBER_ALREADY_EXISTS: 'CONFLICT',
  MEMBER_EMAIL_TAKEN: 'CONFLICT',
  API_KEY_ALREADY_EXISTS: 'CONFLICT',
  API_KEY_NOT_FOUND: 'NOT_FOUND',
  API_KEY_ALREADY_REVOKED: 'CONFLICT',
  CAPACITY_EXHAUSTED: 'CAPACITY_EXHAUSTED',
  WEBHOOK_NOT_FOUND: 'NOT_FOUND',
  WEBHOOK_ALREADY_EXISTS: 'CONFLICT',
  INVALID_WEBHOOK_INPUT: 'VALIDATION_FAILED',
  WEBHOOK_DISABLED: 'CONFLICT',
  WEBHOOK_ROTATION_OVERLAP: 'CONFLICT',
};

/**
 * The request's field each refusal of the domain is about, and the rule it breaks: every 4xx names
 * both (docs/decisions/0002-problem-json-errors.md). The domain's own words, more particular (which
 * key, revoked when), stay in the detail. A rule left out is the domain's message: the checks of
 * input a route's schema did not make first, told of the body.
 */
export const DOMAIN_ERROR_FIELDS: Record<
  keyof typeof DOMAIN_ERROR_CODES,
  { field: string; rule?: string } | undefined
> = {
  CALL_NOT_FOUND: { field: 'callId', rule: 'must name a call of this team' },
  CALL_ALREADY_FINISHED: { field: 'callId', rule: 'must name a call that is still pending' },
  CALL_STEP_OUT_OF_ORDER: { field: 'callId', rule: 'must name a call at a stage that takes this step' },
  CALL_NOT_RETRIABLE: { field: 'callId', rule: 'must name a failed call whose failure trying again can change' },
  CALL_ERASED: { field: 'callId', rule: 'must name a call of this team' },
  IDEMPOTENCY_KEY_REUSED: {
    field: 'Idempotency-Key',
    rule: 'was used with another body within 24 hours; a key stands for one request, so send a new key for a new body',
  },
  IDEMPOTENCY_KEY_IN_USE: {
    field: 'Idempotency-Key',
    rule: 'is held by a request with the same body still being handled',
  },
  // A claim missing when its 201 is stored: a fault of the service (500), not of the request.
  IDEMPOTENCY_KEY_NOT_CLAIMED: undefined,
  TEAM_ALREADY_EXISTS: { field: 'teamId', rule: 'must name no existing team' },
  TEAM_NOT_FOUND: { field: 'teamId', rule: 'must name an existing team' },
  INVALID_TEAM_INPUT: { field: 'body' },
  INVALID_MINUTES: { field: 'body' },
  MEMBER_ALREADY_EXISTS: { field: 'memberId', rule: 'must name no member of the team' },
  MEMBER_EMAIL_TAKEN: {
    field: 'email',
    rule: "must not be the e-mail of the team's owner or of another member (e-mails match ignoring case)",
  },
  API_KEY_ALREADY_EXISTS: { field: 'keyId', rule: 'must name no API key of the team' },
  API_KEY_NOT_FOUND: { field: 'keyId', rule: 'must name an API key of this team' },
  API_KEY_ALREADY_REVOKED: { field: 'keyId', rule: 'must name a key that is not revoked' },
  CAPACITY_EXHAUSTED: {
    field: 'body',
    rule: 'a call is accepted while the team has live call minutes left, or auto-recharge is on',
  },
  WEBHOOK_NOT_FOUND: { field: 'webhookId', rule: 'must name a webhook of this team' },
  WEBHOOK_ALREADY_EXISTS: { field: 'webhookId', rule: 'must name no existing webhook' },
  INVALID_WEBHOOK_INPUT: { field: 'body' },
  WEBHOOK_DISABLED: {
    field: 'webhookId',
    rule: 'must name a webhook that is not disabled (its receiver answered 410 Gone: register it again)',
  },
  WEBHOOK_ROTATION_OVERLAP: {
    field: 'webhookId',
    rule: 'must name a webhook whose last rotation is more than 24 hours old (the previous secret signs until then)',
  },
};

/** An error that becomes a problem+json response; extra headers (Retry-After, …) ride along. */
export class ProblemError extends Error {
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly extra: { errors?: FieldError[]; headers?: Record<string, string> } = {},
  ) {
    super(detail);
    this.name = 'ProblemError';
  }

  get status(): number {
    return ERROR_STATUS[this.code];
  }

  toProblem(): Problem {
    return problem(this.code, this.detail, this.extra.errors);
  }
}

/** The 404 of a `callId` that names no call of the caller's team (another team's included). */
export const callNotFound = (detail: string): ProblemError =>
  new ProblemError('NOT_FOUND', detail, { errors: [{ field: 'callId', message: 'must name a call of this team' }] });

/** "1 minute", "30 minutes". */
const minutes = (n: number) => `${n} minute${n === 1 ? '' : 's'}`;

/**
 * The 402 of a call its team has no capacity left for. No field breaks a rule, so it names what
 * asks for the capacity (an ingest's body, a retry's call), about how much (the call's estimate)
 * and what the team has left; a team overdrawn by its last call has none.
 */
export const capacityExhausted = (detail: string, field: string, neededMinutes: number, leftMinutes: number) => {
  const needs = `needs about ${minutes(neededMinutes)} of live call capacity (the call's estimate)`;
  const left = `the team has ${minutes(Math.max(0, leftMinutes))} left`;
  return new ProblemError('CAPACITY_EXHAUSTED', `${detail} The call ${needs}; ${left}.`, {
    errors: [{ field, message: `${needs} and ${left}, with auto-recharge off; a call is taken while any is left` }],
  });
};

/** The content type every error answer is sent with (the ingress's and a health port's alike). */
export const PROBLEM_JSON = 'application/problem+json; charset=utf-8';

export const problemType = (code: ErrorCode) => `urn:calls:problem:${code.toLowerCase().replaceAll('_', '-')}`;

export const problem = (code: ErrorCode, detail: string, errors?: FieldError[]): Problem => ({
  type: problemType(code),
  title: TITLES[code],
  status: ERROR_STATUS[code],
  detail,
  code,
  ...(errors ? { errors } : {}),
});
