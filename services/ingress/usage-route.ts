/**
 * GET /api/usage — what the key's team has left and used, and where the key stands against the
 * ingest limit, without spending a request of it. Same API-key authentication and read limit as
 * the read API.
 */
import { Type } from '@sinclair/typebox';
import { ProblemSchema } from '../../shared/domain/submission/submission-schema.ts';
import type { RateLimiter } from '../../shared/ports/rate-limiter.ts';
import { apiKeyAccess, apiKeyField } from './api-key-access.ts';
import { READ_RATE_LIMIT } from './calls-routes.ts';
import { ProblemError } from './errors.ts';
import { INGEST_RATE_LIMIT } from './ingest-route.ts';
import type { TeamService } from './teams/team-service.ts';
import type { TypedApp } from './typed-app.ts';

export const UsageSchema = Type.Object({
  teamId: Type.String(),
  remainingMinutes: Type.Number({
    description: 'Live call minutes left (may be below 0 by at most one call, settled later).',
  }),
  reservedMinutes: Type.Number({ description: 'Minutes held for calls accepted and not yet finished.' }),
  usedMinutes: Type.Number({ description: 'Minutes charged for processed calls since the team was created.' }),
  autoRecharge: Type.Object({
    enabled: Type.Boolean(),
    hours: Type.Number({ description: 'Hours bought each time the team runs out.' }),
  }),
  rateLimit: Type.Object(
    {
      limit: Type.Integer(),
      remaining: Type.Integer({ description: 'Submissions this key may still make in the current window.' }),
      resetSeconds: Type.Integer({ description: 'Seconds until the window is whole again; 0 when the key made none.' }),
    },
    { description: 'The ingest limit of this key (30 a minute), as it stands: reading it spends nothing.' },
  ),
});

export const registerUsageRoute = (app: TypedApp, deps: { teams: TeamService; limiter: RateLimiter }): void => {
  app.get(
    '/api/usage',
    {
      onRequest: apiKeyAccess({ teams: deps.teams, limiter: deps.limiter, rule: READ_RATE_LIMIT, scope: 'read' }),
      schema: {
        tags: ['Call history'],
        summary: "The team's capacity and this key's ingest limit",
        security: [{ apiKeyHeader: [] }, { bearer: [] }],
        response: { 200: UsageSchema, ...Object.fromEntries([401, 429, 503].map((s) => [s, ProblemSchema])) },
      },
    },
    async (request) => {
      const owner = request.apiKey!;
      const team = deps.teams.directoryTeam(owner.teamId);
      if (!team)
        throw new ProblemError('API_KEY_INVALID', 'The team of this API key no longer exists.', {
          errors: [{ field: apiKeyField(request.headers), message: 'must be the key of an existing team' }],
        });
      let reservedMinutes = 0;
      for (const [, reservation] of team.reservations.entries()) reservedMinutes += reservation.minutes;
      const ingest = await deps.limiter.peek(`ingest:${owner.keyId}`, INGEST_RATE_LIMIT);
      return {
        teamId: team.teamId,
        remainingMinutes: team.remainingMinutes,
        reservedMinutes,
        usedMinutes: team.usedMinutes,
        autoRecharge: { enabled: team.autoRecharge.enabled, hours: team.autoRecharge.blockMinutes / 60 },
        rateLimit: { limit: ingest.limit, remaining: ingest.remaining, resetSeconds: Math.ceil(ingest.resetMs / 1000) },
      };
    },
  );
};
