/**
 * Read API: the team's call history. Same API-key authentication as the ingest endpoint (the team
 * comes from the key; another team's call is a 404), with its own rate limit per key.
 */
import { Type } from '@sinclair/typebox';
import { callDetailView, callListItemView } from '../../shared/domain/call/call-view.ts';
import {
  CallDetailSchema as CallDetail,
  CallListItemSchema as CallListItem,
} from '../../shared/domain/call/call-view-schema.ts';
import { SUBMISSION_LIMITS } from '../../shared/domain/submission/submission-schema.ts';
import { isStorable } from '../../shared/domain/submission/storable-text.ts';
import type { RateLimiter } from '../../shared/ports/rate-limiter.ts';
import { CALL_HISTORY_LIMITS, type CallHistoryStore, InvalidQueryError } from '../../shared/ports/read-models.ts';
import { apiKeyAccess } from './api-key-access.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import { callStreamId } from '../../shared/domain/call/call-catalogue.ts';
import { callNotFound, ProblemError } from './errors.ts';
import type { TeamService } from './teams/team-service.ts';
import type { TypedApp } from './typed-app.ts';
import { problemResponses } from './problem-responses.ts';

/** The read API has its own limit per key, 600 per minute (docs/decisions/0001-answer-order-and-limits.md). */
export const READ_RATE_LIMIT = { limit: 600, windowMs: 60_000 };

export interface CallsDeps {
  teams: TeamService;
  limiter: RateLimiter;
  callHistory: CallHistoryStore;
  /** The call's own events, for its processing timeline. */
  eventStore?: EventStore;
}

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

const listItem = callListItemView;
const detail = callDetailView;

export const registerCallsRoutes = (app: TypedApp, deps: CallsDeps): void => {
  const onRequest = apiKeyAccess({ teams: deps.teams, limiter: deps.limiter, rule: READ_RATE_LIMIT, scope: 'read' });
  const security: { [label: string]: string[] }[] = [{ apiKeyHeader: [] }, { bearer: [] }];
  const problems = problemResponses(400, 401, 404, 429, 503);

  app.get(
    '/api/calls',
    {
      onRequest,
      schema: {
        tags: ['Call history'],
        summary: "The team's calls, newest first (or by last change, for sync)",
        description:
          'search: an exact, case-insensitive substring of the displayed title or the rep name — nothing else (not the transcript, prospect, tags or notes). ' +
          'tag (repeatable): calls carrying every given tag, compared like search; a blank tag is a 400. status: pending, completed or failed. ' +
          'from / to: the call date, inclusive (ISO 8601 date or date-time; a bare date as to runs through the end of that day, UTC). ' +
          'repEmail: calls whose rep e-mail is this address (ASCII letters case-insensitive). ' +
          'updatedSince with order=updated_asc: incremental sync, least recently changed first by (updatedAt, callId), every call whose row changed at or after that instant. ' +
          'Cursor pagination: pass nextCursor back as cursor, with the same order.',
        security,
        querystring: Type.Object(
          {
            // As long as the longest title a call can carry: any displayed title can be searched for.
            search: Type.Optional(Type.String({ maxLength: SUBMISSION_LIMITS.maxCallTitleChars })),
            // Repeatable: one tag=… arrives as an array of one (the app coerces query values to arrays).
            tag: Type.Optional(Type.Array(Type.String({ maxLength: 50 }), { maxItems: 20 })),
            status: Type.Optional(
              Type.Union([Type.Literal('pending'), Type.Literal('completed'), Type.Literal('failed')]),
            ),
            from: Type.Optional(Type.String({ maxLength: 40, description: 'Call date at or after (ISO 8601).' })),
            to: Type.Optional(
              Type.String({
                maxLength: 40,
                description: 'Call date at or before (ISO 8601; a bare date includes that whole day, UTC).',
              }),
            ),
            repEmail: Type.Optional(Type.String({ maxLength: 320 })),
            updatedSince: Type.Optional(
              Type.String({
                maxLength: 40,
                description: 'Only calls whose row changed at or after this instant (ISO 8601).',
              }),
            ),
            order: Type.Optional(
              Type.Union([Type.Literal('created_desc'), Type.Literal('updated_asc')], { default: 'created_desc' }),
            ),
            limit: Type.Optional(
              Type.Integer({
                minimum: 1,
                maximum: CALL_HISTORY_LIMITS.maxLimit,
                default: CALL_HISTORY_LIMITS.defaultLimit,
              }),
            ),
            cursor: Type.Optional(Type.String({ maxLength: 500 })),
          },
          // A parameter it does not know is a 400 naming it: a mistyped filter (tags=, rep_email=)
          // would otherwise list every call, unfiltered.
          { additionalProperties: false },
        ),
        response: {
          200: Type.Object({ calls: Type.Array(CallListItem), nextCursor: Nullable(Type.String()) }),
          ...problems,
        },
      },
    },
    async (request) => {
      const { search, tag, status, from, to, repEmail, updatedSince, order, limit, cursor } = request.query;
      // The same text rule as the ingest: no stored text has U+0000 or an unpaired surrogate, and
      // PostgreSQL refuses them even in a query parameter.
      const unstorable = [
        ...(search !== undefined && !isStorable(search)
          ? [{ field: 'search', message: 'may not contain U+0000 or unpaired surrogates' }]
          : []),
        ...(repEmail !== undefined && !isStorable(repEmail)
          ? [{ field: 'repEmail', message: 'may not contain U+0000 or unpaired surrogates' }]
          : []),
        ...(tag ?? []).flatMap((t, i) =>
          isStorable(t) ? [] : [{ field: `tag[${i}]`, message: 'may not contain U+0000 or unpaired surrogates' }],
        ),
      ];
      if (unstorable.length > 0)
        throw new ProblemError('VALIDATION_FAILED', 'The query breaks one or more rules; see errors.', {
          errors: unstorable,
        });
      try {
        const page = await deps.callHistory.list(request.apiKey!.teamId, {
          search,
          tags: tag,
          status,
          from,
          to,
          repEmail,
          updatedSince,
          order,
          limit,
          cursor,
        });
        return { calls: page.calls.map(listItem), nextCursor: page.nextCursor };
      } catch (error) {
        if (error instanceof InvalidQueryError) {
          // The store names the query's fields; the caller knows the parameters (`tags` is sent as `tag`).
          const field = error.field === 'tags' ? 'tag' : error.field;
          throw new ProblemError('VALIDATION_FAILED', error.message, { errors: [{ field, message: error.message }] });
        }
        throw error;
      }
    },
  );

  app.get(
    '/api/calls/:callId',
    {
      onRequest,
      schema: {
        tags: ['Call history'],
        summary: 'Everything about one call',
        security,
        params: Type.Object({ callId: Type.String({ maxLength: 100 }) }),
        response: { 200: CallDetail, ...problems },
      },
    },
    async (request) => {
      // No call id holds U+0000 or an unpaired surrogate (and PostgreSQL refuses them in a parameter).
      if (!isStorable(request.params.callId)) throw callNotFound('No such call in this team.');
      const row = await deps.callHistory.get(request.apiKey!.teamId, request.params.callId);
      if (!row) throw callNotFound(`No call ${request.params.callId} in this team.`);
      return detail(row);
    },
  );

  const { eventStore } = deps;
  if (!eventStore) return;
  app.get(
    '/api/calls/:callId/events',
    {
      onRequest,
      schema: {
        tags: ['Call history'],
        summary: "The call's processing timeline: each event of its stream with the time it was recorded",
        security,
        params: Type.Object({ callId: Type.String({ maxLength: 100 }) }),
        response: {
          200: Type.Object({
            callId: Type.String(),
            events: Type.Array(Type.Object({ revision: Type.Integer(), type: Type.String(), at: Type.String() })),
          }),
          ...problems,
        },
      },
    },
    async (request) => {
      const { callId } = request.params;
      // The history row says whose call it is: another team's call is a 404, as for the call itself.
      if (!isStorable(callId) || !(await deps.callHistory.get(request.apiKey!.teamId, callId)))
        throw callNotFound(`No call ${callId} in this team.`);
      const events = await eventStore.readStream(callStreamId(callId));
      return {
        callId,
        events: events.map((event) => ({
          revision: event.revision,
          type: event.type,
          at: event.recordedAt.toISOString(),
        })),
      };
    },
  );
};
