/**
 * Authentication and rate limiting for API-key routes, run as an `onRequest` hook: before the body
 * is read, so the order of answers is 401 → 429 → 415 → 413 → 400 → 402 (docs/decisions/0001-answer-order-and-limits.md).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RateLimitDecision, RateLimiter, RateLimitRule } from '../../shared/ports/rate-limiter.ts';
import { ProblemError } from './errors.ts';
import { rateLimitRefusals } from '../../shared/observability/metrics.ts';
import type { KeyOwner } from './teams/team-directory.ts';
import type { TeamService } from './teams/team-service.ts';
import { bearerToken } from '../../shared/security/bearer-token.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The team and key that authenticated the request (API-key routes only). */
    apiKey?: KeyOwner;
  }
}

/**
 * Failed authentications allowed per client address per minute; past them a missing or invalid key
 * is still a 401 (the spec's answer), which then carries Retry-After.
 */
export const AUTH_FAILURE_RULE: RateLimitRule = { limit: 100, windowMs: 60_000 };

/**
 * What `X-API-Key` carries, without the spaces and tabs HTTP allows around a header's value;
 * undefined when it is missing or empty. Nothing else is trimmed: a key followed by U+00A0 is not
 * the key (JavaScript's trim() took it off, and such a key was accepted).
 */
const xApiKey = (headers: FastifyRequest['headers']): string | undefined => {
  const header = headers['x-api-key'];
  return (Array.isArray(header) ? header[0] : header)?.replace(/^[ \t]+|[ \t]+$/g, '') || undefined;
};

/** The key from `X-API-Key` (preferred) or `Authorization: Bearer`; never from the query or body. */
export const apiKeyFromHeaders = (headers: FastifyRequest['headers']): string | undefined =>
  xApiKey(headers) ?? bearerToken(headers.authorization);

/**
 * The header the key was sent in, as a 401 or 429 names it: X-API-Key (the preferred one, also when
 * no key came at all) or Authorization.
 */
export const apiKeyField = (headers: FastifyRequest['headers']): 'X-API-Key' | 'Authorization' =>
  xApiKey(headers) === undefined && headers.authorization !== undefined ? 'Authorization' : 'X-API-Key';

const seconds = (ms: number) => String(Math.max(1, Math.ceil(ms / 1000)));

/** IETF RateLimit headers, on every authenticated response. */
export const rateLimitHeaders = (decision: RateLimitDecision, rule: RateLimitRule): Record<string, string> => ({
  'ratelimit-limit': String(decision.limit),
  'ratelimit-remaining': String(decision.remaining),
  'ratelimit-reset': seconds(decision.resetMs),
  'ratelimit-policy': `${rule.limit};w=${Math.round(rule.windowMs / 1000)}`,
});

export interface ApiKeyAccessOptions {
  teams: TeamService;
  limiter: RateLimiter;
  /** The per-key limit of the routes this hook guards. */
  rule: RateLimitRule;
  /** Names the limit in counters, so each route family has its own budget per key. */
  scope: string;
}

export const apiKeyAccess = ({ teams, limiter, rule, scope }: ApiKeyAccessOptions) =>
  async function authenticate(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const raw = apiKeyFromHeaders(request.headers);
    const owner = raw ? await teams.authenticate(raw) : undefined;
    if (!owner) {
      // Closed after the answer: what the client still sends of its body is dropped (lingering-close.ts).
      void reply.header('connection', 'close');
      const field = apiKeyField(request.headers);
      const refusal = raw
        ? {
            detail: 'The API key is not valid: it is mistyped, unknown or revoked.',
            message: 'is not a valid API key: it is mistyped, unknown or revoked',
          }
        : field === 'Authorization'
          ? {
              detail: 'No API key: Authorization must be Bearer <key>, or send the key in the X-API-Key header.',
              message: 'must be Bearer <key> with a Push API key (pk_…)',
            }
          : {
              detail:
                'No API key: send it in the X-API-Key header or as Authorization: Bearer <key>. A key in the query string or the body does not authenticate.',
              message:
                'is required: send the Push API key (pk_…) here or as Authorization: Bearer <key>; a key in the query string or the body does not authenticate',
            };
      // Past the per-address limit the answer is still the spec's 401, with how long to wait.
      const failures = await limiter.hit(`auth-failure:${request.ip}`, AUTH_FAILURE_RULE);
      const throttled = !failures.allowed;
      if (throttled) rateLimitRefusals.inc({ limit: 'auth-failure' });
      throw new ProblemError(
        'API_KEY_INVALID',
        throttled
          ? `${refusal.detail} This address has failed to authenticate more than ${AUTH_FAILURE_RULE.limit} times in ${AUTH_FAILURE_RULE.windowMs / 1000} s; retry after the Retry-After delay.`
          : refusal.detail,
        {
          errors: [{ field, message: refusal.message }],
          headers: {
            'www-authenticate': 'Bearer realm="push-api"',
            ...(throttled ? { 'retry-after': seconds(failures.retryAfterMs) } : {}),
          },
        },
      );
    }
    request.apiKey = owner;
    const decision = await limiter.hit(`${scope}:${owner.keyId}`, rule);
    void reply.headers(rateLimitHeaders(decision, rule));
    if (!decision.allowed) {
      rateLimitRefusals.inc({ limit: scope });
      const window = `${Math.round(rule.windowMs / 1000)} s`;
      throw new ProblemError(
        'RATE_LIMITED',
        `More than ${rule.limit} requests in ${window} for this key; retry after the Retry-After delay.`,
        {
          errors: [
            {
              field: apiKeyField(request.headers),
              message: `at most ${rule.limit} requests in ${window} for this key`,
            },
          ],
          headers: { 'retry-after': seconds(decision.retryAfterMs) },
        },
      );
    }
  };
