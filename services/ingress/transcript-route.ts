/**
 * GET /api/calls/:callId/transcript?format=json|txt|srt|vtt — the call's transcript with its
 * timed, speaker-labelled segments, or written as plain text, SubRip or WebVTT. Same API-key
 * authentication and read limit as the read API; another team's call is a 404.
 *
 * Read from the call's own stream in the event store (its TranscriptRecorded, folded by the call
 * decider), not from call history: the transcript is there as soon as it is recorded, and an event
 * recorded before segments existed gets them from its text (`transcript-recorded.ts`).
 */
import { Type } from '@sinclair/typebox';
import { callDecider } from '../../shared/domain/call/call-decider.ts';
import type { CallState } from '../../shared/domain/call/call-state.ts';
import { callEvents } from '../../shared/domain/call/call-catalogue.ts';
import { isStorable } from '../../shared/domain/submission/storable-text.ts';
import { ProblemSchema } from '../../shared/domain/submission/submission-schema.ts';
import {
  renderSrt,
  renderText,
  renderVtt,
  TRANSCRIPT_FORMATS,
  type TranscriptFormat,
} from '../../shared/domain/transcript/transcript-export.ts';
import { SEGMENT_LIMITS, segmentsAreTimed } from '../../shared/domain/transcript/transcript-segments.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import type { RateLimiter } from '../../shared/ports/rate-limiter.ts';
import { AggregateRepository } from '../runtime/aggregate-repository.ts';
import { apiKeyAccess } from './api-key-access.ts';
import { READ_RATE_LIMIT } from './calls-routes.ts';
import { callNotFound, ProblemError } from './errors.ts';
import type { TeamService } from './teams/team-service.ts';
import type { TypedApp } from './typed-app.ts';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

const TranscriptSchema = Type.Object({
  callId: Type.String(),
  segments: Type.Array(
    Type.Object({
      start: Nullable(
        Type.Number({ description: 'Seconds from the start of the call; null when the transcript carries no times.' }),
      ),
      end: Nullable(
        Type.Number({ description: 'Seconds from the start of the call; null when the transcript carries no times.' }),
      ),
      speaker: Nullable(Type.String({ description: 'The speaker as labelled; null when not known.' })),
      text: Type.String(),
    }),
  ),
  text: Type.String({ description: 'The transcript as recorded (an inline one as sent, cues included).' }),
});

const TEXT_TYPES: Record<Exclude<TranscriptFormat, 'json'>, string> = {
  txt: 'text/plain; charset=utf-8',
  srt: 'application/x-subrip; charset=utf-8',
  vtt: 'text/vtt; charset=utf-8',
};

/** Why a call of this team has no transcript to show. */
const notReady = (state: Exclude<CallState, { status: 'absent' }>): string => {
  if (state.status === 'pending')
    return `The call is pending (stage ${state.stage}); its transcript is recorded when transcription is done. Try again later.`;
  if (state.status === 'failed') return `The call failed (${state.code}) before a transcript was recorded.`;
  return 'The call has no transcript.';
};

export const registerTranscriptRoute = (
  app: TypedApp,
  deps: { teams: TeamService; limiter: RateLimiter; eventStore: EventStore },
): void => {
  const calls = new AggregateRepository(deps.eventStore, callDecider, callEvents);
  app.get(
    '/api/calls/:callId/transcript',
    {
      onRequest: apiKeyAccess({ teams: deps.teams, limiter: deps.limiter, rule: READ_RATE_LIMIT, scope: 'read' }),
      schema: {
        tags: ['Call history'],
        summary: "The call's transcript: timed, speaker-labelled segments (json), or as plain text, SubRip or WebVTT",
        description:
          'format=json (default): {callId, segments: [{start, end, speaker, text}], text}; txt: one segment a line, "Speaker: " before it when known; ' +
          `at most ${SEGMENT_LIMITS.maxSegments} segments, the last holding the rest of a longer transcript, a line each, "Speaker: " where the speaker changes; ` +
          'srt: SubRip, the speaker as "Speaker: "; vtt: WebVTT, the speaker as <v Speaker>. ' +
          'srt and vtt need timings: 409 TRANSCRIPT_NOT_TIMED for a transcript without them (plain or Speaker: text). ' +
          "409 TRANSCRIPT_NOT_READY while the call has no transcript (pending, or failed before transcription); 404 for an unknown call or another team's.",
        security: [{ apiKeyHeader: [] }, { bearer: [] }],
        params: Type.Object({ callId: Type.String({ maxLength: 100 }) }),
        querystring: Type.Object(
          {
            format: Type.Optional(
              Type.Union(
                TRANSCRIPT_FORMATS.map((f) => Type.Literal(f)),
                { default: 'json' },
              ),
            ),
          },
          { additionalProperties: false },
        ),
        response: {
          200: {
            description: 'The transcript in the format asked for.',
            content: {
              'application/json': { schema: TranscriptSchema },
              'text/plain': { schema: Type.String() },
              'application/x-subrip': { schema: Type.String() },
              'text/vtt': { schema: Type.String() },
            },
          },
          ...Object.fromEntries([400, 401, 404, 409, 429, 503].map((s) => [s, ProblemSchema])),
        },
      },
    },
    async (request, reply) => {
      const { callId } = request.params;
      // No call id holds U+0000 or an unpaired surrogate (and PostgreSQL refuses them in a parameter).
      if (!isStorable(callId)) throw callNotFound('No such call in this team.');
      const { state } = await calls.load(callId);
      if (state.status === 'absent' || state.status === 'erased' || state.submitted.teamId !== request.apiKey!.teamId)
        throw callNotFound(`No call ${callId} in this team.`);
      if (!state.transcript)
        throw new ProblemError('TRANSCRIPT_NOT_READY', notReady(state), {
          errors: [{ field: 'callId', message: 'must name a call whose transcript is recorded' }],
        });
      const { segments, text } = state.transcript;
      const format: TranscriptFormat = request.query.format ?? 'json';
      if (format === 'json') return reply.type('application/json; charset=utf-8').send({ callId, segments, text });
      if (format === 'txt') return reply.type(TEXT_TYPES.txt).send(renderText(segments));
      if (!segmentsAreTimed(segments)) {
        throw new ProblemError(
          'TRANSCRIPT_NOT_TIMED',
          `The transcript has no timings (it was ${state.transcript.source === 'inline' ? 'sent as plain or Speaker: text, not WebVTT or SRT' : 'transcribed without them'}), so it cannot be written as ${format === 'srt' ? 'SubRip' : 'WebVTT'}; ask for format=json or format=txt.`,
          {
            errors: [
              {
                field: 'format',
                message: `may be ${format} only for a transcript with timings; this one has none: ask for json or txt`,
              },
            ],
          },
        );
      }
      return reply.type(TEXT_TYPES[format]).send(format === 'srt' ? renderSrt(segments) : renderVtt(segments));
    },
  );
};
