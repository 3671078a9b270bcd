/**
 * DELETE /api/calls/:callId: the team erases one of its calls, in any state
 * (docs/decisions/0014-erasure-crypto-shredding.md). 202 once CallErased is stored and the call's
 * data key destroyed; the read API stops showing it as soon as the call history takes the event.
 * A call of another team, an unknown one or one erased already is a 404. A call accepted (201) but
 * not yet stored after the eraser's wait is a 503 with Retry-After naming that reason, not a 404:
 * it will be processed with its personal data once stored, so the caller must try again.
 */
import { Type } from '@sinclair/typebox';
import { isStorable } from '../../shared/domain/submission/storable-text.ts';
import { ProblemSchema } from '../../shared/domain/submission/submission-schema.ts';
import type { RateLimiter } from '../../shared/ports/rate-limiter.ts';
import { apiKeyAccess } from './api-key-access.ts';
import { type CallEraser, CallNotYetStoredError, type EraseOutcome, SUBMISSION_WAIT_MS } from './call-eraser.ts';
import { READ_RATE_LIMIT } from './calls-routes.ts';
import { RETRY_AFTER_SECONDS } from './error-handler.ts';
import { callNotFound, ProblemError } from './errors.ts';
import type { TeamService } from './teams/team-service.ts';
import type { TypedApp } from './typed-app.ts';

export interface EraseRouteDeps {
  teams: TeamService;
  limiter: RateLimiter;
  erase: CallEraser;
}

export const registerEraseRoute = (app: TypedApp, deps: EraseRouteDeps): void => {
  app.delete(
    '/api/calls/:callId',
    {
      onRequest: apiKeyAccess({ teams: deps.teams, limiter: deps.limiter, rule: READ_RATE_LIMIT, scope: 'read' }),
      schema: {
        tags: ['Call history'],
        summary: 'Erase a call: its personal data becomes unreadable everywhere, and it leaves the call history',
        description:
          'Legal in any state: a call still processing stops, and its capacity reservation is released. The call data key is destroyed, ' +
          'so the transcript, notes, rep name and e-mail, metadata, deal notes and audio URL can no longer be read from any stored event or topic record. ' +
          'call.erased is published on calls.events.v1 (without personal data). A second DELETE is a 404. ' +
          `A call accepted a moment ago and not yet stored is waited for (up to ${SUBMISSION_WAIT_MS / 1000} s); ` +
          'still not stored, it is a 503 with Retry-After (nothing was erased): retry, and the call is erased once stored.',
        security: [{ apiKeyHeader: [] }, { bearer: [] }],
        params: Type.Object({ callId: Type.String({ maxLength: 100 }) }),
        response: {
          202: Type.Object({ callId: Type.String(), status: Type.Literal('erased') }),
          ...Object.fromEntries([401, 404, 429, 503].map((s) => [s, ProblemSchema])),
        },
      },
    },
    async (request, reply) => {
      const { callId } = request.params;
      if (!isStorable(callId)) throw callNotFound('No such call in this team.');
      let outcome: EraseOutcome;
      try {
        outcome = await deps.erase(request.apiKey!.teamId, callId, 'deleted');
      } catch (error) {
        if (!(error instanceof CallNotYetStoredError)) throw error;
        request.log.warn(
          { callId, teamId: request.apiKey!.teamId },
          'erasure of a call accepted but not stored yet; answered 503 for a retry',
        );
        throw new ProblemError(
          'SERVICE_UNAVAILABLE',
          `Call ${callId} was accepted but is not stored yet, so it cannot be erased now; nothing was erased. Retry after the Retry-After delay: once stored, the call is erased.`,
          { headers: { 'retry-after': String(RETRY_AFTER_SECONDS.unavailable) } },
        );
      }
      if (outcome === 'absent') throw callNotFound(`No call ${callId} in this team.`);
      request.log.info({ callId, teamId: request.apiKey!.teamId }, 'call erased');
      return reply.code(202).send({ callId, status: 'erased' as const });
    },
  );
};
