/**
 * Admin API for retention and erasure by e-mail (docs/decisions/0014-erasure-crypto-shredding.md):
 *   POST /api/admin/teams/:teamId/retention {days}          days, or null to keep calls forever
 *   POST /api/admin/teams/:teamId/erasures {email}          202 {erasureId}
 *   GET  /api/admin/teams/:teamId/erasures/:erasureId       {erasureId, status, calls, failed, …}
 *
 * A completed request names in `failed` each of its calls it could not erase (with the error's
 * code; the log has the details under the erasureId): those calls are not erased, and the request
 * is not worked on again. Once the cause is dealt with, a new request for the address covers them.
 */
import { Type } from '@sinclair/typebox';
import { MAX_RETENTION_DAYS } from '../../shared/domain/team/team-decider.ts';
import { readEmail } from '../../shared/domain/submission/field-readers.ts';
import { ProblemSchema } from '../../shared/domain/submission/submission-schema.ts';
import type { adminGuard } from './admin-routes.ts';
import { CallsNotInHistoryError, type ErasureRequests } from './erasure-requests.ts';
import { RETRY_AFTER_SECONDS } from './error-handler.ts';
import { ProblemError } from './errors.ts';
import type { TeamService } from './teams/team-service.ts';
import type { TypedApp } from './typed-app.ts';

export interface ErasureAdminDeps {
  teams: TeamService;
  requests: ErasureRequests;
  requireAdmin: ReturnType<typeof adminGuard>;
}

const problems = (...statuses: number[]) => Object.fromEntries(statuses.map((s) => [s, ProblemSchema]));
const TeamParams = Type.Object({ teamId: Type.String({ minLength: 1, maxLength: 100 }) });

export const registerErasureAdminRoutes = (app: TypedApp, deps: ErasureAdminDeps): void => {
  const tags = ['Admin'];
  const security = [{ adminToken: [] }];
  const existing = async (teamId: string) => {
    if (!(await deps.teams.load(teamId)))
      throw new ProblemError('NOT_FOUND', `No team ${teamId}.`, {
        errors: [{ field: 'teamId', message: 'must name an existing team' }],
      });
  };

  app.post(
    '/api/admin/teams/:teamId/retention',
    {
      onRequest: deps.requireAdmin,
      // Checked as sent, before the schema's type coercion (which would read 0 as null, "forever", and null as 0).
      preValidation: async (request) => {
        const days = (request.body as { days?: unknown } | null)?.days;
        if (
          days !== null &&
          days !== undefined &&
          !(Number.isInteger(days) && (days as number) >= 1 && (days as number) <= MAX_RETENTION_DAYS)
        ) {
          throw new ProblemError('VALIDATION_FAILED', 'The body breaks one or more rules; see errors.', {
            errors: [
              {
                field: 'days',
                message: `must be a whole number from 1 to ${MAX_RETENTION_DAYS}, or null to keep calls forever`,
              },
            ],
          });
        }
      },
      schema: {
        tags,
        security,
        summary: "Set the team's retention period: calls submitted longer ago are erased automatically",
        params: TeamParams,
        body: Type.Object(
          {
            days: Type.Union([Type.Integer({ minimum: 1, maximum: MAX_RETENTION_DAYS }), Type.Null()], {
              description: 'Days after submission; null keeps calls forever.',
            }),
          },
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ teamId: Type.String(), retentionDays: Type.Union([Type.Integer(), Type.Null()]) }),
          ...problems(400, 401, 404),
        },
      },
    },
    async (request) => {
      await existing(request.params.teamId);
      return {
        teamId: request.params.teamId,
        retentionDays: await deps.teams.setRetention(request.params.teamId, request.body.days),
      };
    },
  );

  app.post(
    '/api/admin/teams/:teamId/erasures',
    {
      onRequest: deps.requireAdmin,
      // Checked as sent (before the schema's coercion would read 42 as "42"), by the rule the ingest
      // checks a rep e-mail with: every address a call may carry can be named here, trimmed the same way.
      preValidation: async (request) => {
        const body = request.body as { email?: unknown } | null;
        const read = readEmail(body?.email, 'email');
        if (read.kind !== 'ok')
          throw new ProblemError('VALIDATION_FAILED', 'The body breaks one or more rules; see errors.', {
            errors: [
              {
                field: 'email',
                message:
                  read.kind === 'absent'
                    ? 'is required: the e-mail address whose calls are to be erased'
                    : "must be an e-mail address (as a call's repEmail is checked), as a string",
              },
            ],
          });
        (body as { email: string }).email = read.value;
      },
      schema: {
        tags,
        security,
        summary: 'Erase every call of the team whose rep e-mail or attributed member is this address',
        description:
          'The calls are fixed when the request is made; the address is not stored. Follow the request with GET …/erasures/:erasureId. ' +
          'The request first waits (5 s at most) until the call history holds every call the team has accepted and not finished; ' +
          'calls still not stored then (the processors down or behind) make it a 503 with Retry-After, nothing requested.',
        params: TeamParams,
        body: Type.Object(
          {
            email: Type.String({
              minLength: 3,
              maxLength: 320,
              description:
                "An e-mail address as a call's repEmail takes it (trimmed; ASCII letters matched case-insensitively).",
            }),
          },
          { additionalProperties: false },
        ),
        response: { 202: Type.Object({ erasureId: Type.String() }), ...problems(400, 401, 404, 503) },
      },
    },
    async (request, reply) => {
      await existing(request.params.teamId);
      let erasureId: string;
      try {
        erasureId = await deps.requests.request(request.params.teamId, request.body.email);
      } catch (error) {
        if (!(error instanceof CallsNotInHistoryError)) throw error;
        request.log.warn(
          { teamId: request.params.teamId, missing: error.missing },
          'erasure request refused for a retry: calls the team accepted are not in the call history yet',
        );
        throw new ProblemError(
          'SERVICE_UNAVAILABLE',
          `${error.missing} call(s) this team sent were accepted but are not in the call history yet (not stored, or the history behind), so a request now could miss some of this address's calls; nothing was requested. Retry after the Retry-After delay. (A call whose publish never reached the log holds this until the orphan sweep releases its reservation.)`,
          { headers: { 'retry-after': String(RETRY_AFTER_SECONDS.unavailable) } },
        );
      }
      return reply.code(202).send({ erasureId });
    },
  );

  app.get(
    '/api/admin/teams/:teamId/erasures/:erasureId',
    {
      onRequest: deps.requireAdmin,
      schema: {
        tags,
        security,
        summary: 'An erasure request: pending while its calls are erased, then completed',
        description:
          'A completed request erased every call in `calls` except those named in `failed`, which could not be erased ' +
          '(the code says why; the service log has the details under the erasureId): they stay, with their personal data. ' +
          'Once the cause is dealt with, a new request for the address covers them.',
        params: Type.Object({
          teamId: Type.String({ minLength: 1, maxLength: 100 }),
          erasureId: Type.String({ minLength: 1, maxLength: 100 }),
        }),
        response: {
          200: Type.Object({
            erasureId: Type.String(),
            status: Type.Union([Type.Literal('pending'), Type.Literal('completed')]),
            calls: Type.Array(Type.String(), {
              description: 'The ids of the calls the request covers (erased, once completed, unless named in failed).',
            }),
            requestedAt: Type.String(),
            completedAt: Type.Union([Type.String(), Type.Null()]),
            failed: Type.Array(Type.Object({ callId: Type.String(), code: Type.String() }), {
              description:
                'The calls of a completed request that could not be erased, each with the code of the error that kept it (e.g. EVENT_DECODE_FAILED: a stored event of the call does not decode). Empty while pending.',
            }),
          }),
          ...problems(401, 404),
        },
      },
    },
    async (request) => {
      const erasure = await deps.requests.get(request.params.teamId, request.params.erasureId);
      if (!erasure)
        throw new ProblemError(
          'NOT_FOUND',
          `No erasure ${request.params.erasureId} for team ${request.params.teamId}.`,
          { errors: [{ field: 'erasureId', message: 'must name an erasure request of this team' }] },
        );
      return {
        erasureId: erasure.erasureId,
        status: erasure.status,
        calls: erasure.calls,
        requestedAt: erasure.requestedAt,
        completedAt: erasure.completedAt ?? null,
        failed: erasure.failed ?? [],
      };
    },
  );
};
