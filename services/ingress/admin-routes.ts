/**
 * Admin API (bearer ADMIN_TOKEN): teams, members, API keys and capacity.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RateLimiter, RateLimitRule } from '../../shared/ports/rate-limiter.ts';
import type { TypedApp } from './typed-app.ts';
import { createHash, timingSafeEqual } from 'node:crypto';
import { ProblemError } from './errors.ts';
import { rateLimitRefusals } from '../../shared/observability/metrics.ts';
import type { TeamService } from './teams/team-service.ts';
import { problemResponses } from './problem-responses.ts';
import { bearerToken } from '../../shared/security/bearer-token.ts';

export interface AdminDeps {
  teams: TeamService;
  adminToken: string;
  /** Counts failed admin authentications per address. */
  limiter: RateLimiter;
}

const digest = (value: string) => createHash('sha256').update(value).digest();

const Email = Type.String({ format: 'email', minLength: 3, maxLength: 320 });
const Name = Type.String({ minLength: 1, maxLength: 200 });
const Hours = Type.Number({ minimum: 0, maximum: 1_000_000 });
const TeamParams = Type.Object({ teamId: Type.String({ minLength: 1, maxLength: 100 }) });
const CapacityView = Type.Object({
  remainingMinutes: Type.Number({ description: 'Live call minutes left; below zero by at most one call.' }),
  autoRecharge: Type.Object({ enabled: Type.Boolean(), blockMinutes: Type.Number() }),
});
const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);
const TeamView = Type.Object({
  teamId: Type.String(),
  name: Type.String(),
  owner: Type.Object({ name: Type.String(), email: Type.String() }),
  createdAt: Type.String(),
  members: Type.Array(Type.Object({ memberId: Type.String(), email: Type.String(), name: Type.String() })),
  keys: Type.Array(
    Type.Object({
      keyId: Type.String(),
      label: Type.String(),
      createdAt: Type.String(),
      lastUsedAt: Nullable(
        Type.String({
          description: 'Last request this key authenticated, as seen by the answering process since it started.',
        }),
      ),
      revokedAt: Nullable(Type.String()),
    }),
  ),
  capacity: Type.Composite([
    CapacityView,
    Type.Object({
      reservedCalls: Type.Integer({ description: 'Calls whose capacity is reserved but not yet settled.' }),
    }),
  ]),
});

/** An onRequest hook that lets only `Authorization: Bearer <adminToken>` through (constant-time compare). */
/** Failed admin authentications allowed per address and minute; more answer 429. */
export const ADMIN_AUTH_FAILURE_RULE: RateLimitRule = { limit: 20, windowMs: 60_000 };

/**
 * The admin API's bearer check. Wrong tokens are throttled per address (guessing is slow), every
 * refusal says how to authenticate (`WWW-Authenticate`) and closes the connection, so a refused
 * client cannot keep streaming a body into it.
 */
export const adminGuard = (adminToken: string, limiter: RateLimiter, alsoAccepted: readonly string[] = []) => {
  // Another accepted token (METRICS_TOKEN for the scrape) is compared the same way.
  const expected = [adminToken, ...alsoAccepted].map(digest);
  return async (request: Pick<FastifyRequest, 'headers' | 'ip'>, reply: FastifyReply) => {
    const bearer = bearerToken(request.headers.authorization);
    if (bearer && expected.map((token) => timingSafeEqual(digest(bearer), token)).includes(true)) return;
    void reply.header('connection', 'close');
    const failures = await limiter.hit(`admin-auth-failure:${request.ip}`, ADMIN_AUTH_FAILURE_RULE);
    if (!failures.allowed) {
      rateLimitRefusals.inc({ limit: 'admin-auth' });
      const { limit, windowMs } = ADMIN_AUTH_FAILURE_RULE;
      throw new ProblemError(
        'RATE_LIMITED',
        'Too many failed admin authentications from this address; retry after the Retry-After delay.',
        {
          errors: [
            {
              field: 'Authorization',
              message: `at most ${limit} failed admin authentications in ${windowMs / 1000} s from one address`,
            },
          ],
          headers: { 'retry-after': String(Math.max(1, Math.ceil(failures.retryAfterMs / 1000))) },
        },
      );
    }
    throw new ProblemError('ADMIN_TOKEN_INVALID', 'Send the admin token as Authorization: Bearer <ADMIN_TOKEN>.', {
      errors: [
        {
          field: 'Authorization',
          message:
            request.headers.authorization === undefined
              ? 'is required: Bearer <ADMIN_TOKEN>'
              : 'must be Bearer <ADMIN_TOKEN>; the token sent is not one this route accepts',
        },
      ],
      headers: { 'www-authenticate': 'Bearer realm="admin"' },
    });
  };
};

export const registerAdminRoutes = (app: TypedApp, { teams, adminToken, limiter }: AdminDeps): void => {
  const requireAdmin = adminGuard(adminToken, limiter);
  const notFound = (teamId: string) =>
    new ProblemError('NOT_FOUND', `No team ${teamId}.`, {
      errors: [{ field: 'teamId', message: 'must name an existing team' }],
    });
  const common = { onRequest: requireAdmin };
  const tags = ['Admin'];
  const security = [{ adminToken: [] }];

  app.post(
    '/api/admin/teams',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: 'Create a team',
        body: Type.Object(
          { name: Name, ownerEmail: Email, ownerName: Type.Optional(Name), capacityHours: Type.Optional(Hours) },
          { additionalProperties: false },
        ),
        response: { 201: Type.Object({ teamId: Type.String() }), ...problemResponses(400, 401) },
      },
    },
    async (request, reply) => reply.code(201).send({ teamId: await teams.createTeam(request.body) }),
  );

  app.get(
    '/api/admin/teams/:teamId',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: 'Read a team: members, keys (never the secret), capacity',
        params: TeamParams,
        response: { 200: TeamView, ...problemResponses(401, 404) },
      },
    },
    async (request) => {
      const team = await teams.load(request.params.teamId);
      if (!team) throw notFound(request.params.teamId);
      return {
        teamId: team.teamId,
        name: team.name,
        owner: team.owner,
        createdAt: team.createdAt,
        members: team.members.map(({ memberId, email, name }) => ({ memberId, email, name })),
        keys: [...team.apiKeys.values()].map((k) => ({
          keyId: k.keyId,
          label: k.label,
          createdAt: k.issuedAt,
          lastUsedAt: teams.lastUsedAt(k.keyId) ?? null,
          revokedAt: k.revokedAt ?? null,
        })),
        capacity: { ...teams.capacity(team), reservedCalls: team.reservations.size },
      };
    },
  );

  app.post(
    '/api/admin/teams/:teamId/members',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: 'Add a member (matched by repEmail, case-insensitively)',
        params: TeamParams,
        body: Type.Object({ email: Email, name: Name }, { additionalProperties: false }),
        response: { 201: Type.Object({ memberId: Type.String() }), ...problemResponses(400, 401, 404, 409) },
      },
    },
    async (request, reply) =>
      reply.code(201).send({ memberId: await teams.addMember(request.params.teamId, request.body) }),
  );

  app.post(
    '/api/admin/teams/:teamId/keys',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: 'Issue an API key; the key is shown once, only its keyed hash is stored',
        params: TeamParams,
        body: Type.Optional(
          Type.Object({ label: Type.Optional(Type.String({ maxLength: 100 })) }, { additionalProperties: false }),
        ),
        response: {
          201: Type.Object({ keyId: Type.String(), key: Type.String() }),
          ...problemResponses(400, 401, 404),
        },
      },
    },
    async (request, reply) => reply.code(201).send(await teams.issueKey(request.params.teamId, request.body?.label)),
  );

  app.delete(
    '/api/admin/teams/:teamId/keys/:keyId',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: 'Revoke an API key',
        params: Type.Object({ teamId: Type.String(), keyId: Type.String() }),
        response: { 204: Type.Null(), ...problemResponses(401, 404, 409) },
      },
    },
    async (request, reply) => {
      await teams.revokeKey(request.params.teamId, request.params.keyId);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/api/admin/teams/:teamId/capacity',
    {
      ...common,
      schema: {
        tags,
        security,
        summary: 'Add live call hours and/or set auto-recharge',
        params: TeamParams,
        body: Type.Object(
          {
            addHours: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000 })),
            autoRecharge: Type.Optional(
              Type.Object(
                {
                  enabled: Type.Boolean(),
                  hours: Type.Optional(Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000 })),
                },
                { additionalProperties: false },
              ),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: CapacityView, ...problemResponses(400, 401, 404) },
      },
    },
    async (request) => {
      if (!(await teams.load(request.params.teamId))) throw notFound(request.params.teamId);
      return teams.changeCapacity(request.params.teamId, request.body);
    },
  );
};
