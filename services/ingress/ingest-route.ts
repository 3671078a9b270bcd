/**
 * POST /api/integrations/push-api/ingest — accept one call.
 * 401/429 come from the onRequest hook, 413/415 from body parsing, then: 400 (normalisation),
 * 402 (capacity), 503 or 201 once the CallSubmitted record is durable on the event log.
 * A 503 whose publish never reached the log releases the reservation ("nothing was accepted"); one
 * whose publish may have been written keeps it (settled if the call runs, released by the orphan
 * sweep if it never appears) and says so. An optional Idempotency-Key replays a 201, and names the
 * call: its first claim records a new time-ordered call id, which every retry of that request within
 * 24 h is answered with (a claim stored by an earlier version named a call id derived from the key,
 * `callIdForKey`); a 404 once that call was erased. The 201 is stored without its warnings, which a
 * replay rebuilds from its own body; docs/decisions/0006-idempotency-key.md.
 */
import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { createHash, randomUUID } from 'node:crypto';
import { toRecord } from '../../shared/cloudevents.ts';
import type { PersonalData } from '../../shared/adapters/crypto/personal-data.ts';
import { callEvents } from '../../shared/domain/call/call-catalogue.ts';
import { callDecider } from '../../shared/domain/call/call-decider.ts';
import { CALL_SUBMITTED_TYPE, type CallSubmittedData } from '../../shared/domain/call/call-submitted.ts';
import { isDomainError } from '../../shared/domain/decider.ts';
import {
  IdempotencyKeyInUseError,
  idempotencyDecider,
  idempotencyEvents,
  leaseEndOf,
} from '../../shared/domain/idempotency/idempotency-decider.ts';
import { type NormaliseResult, normaliseSubmission } from '../../shared/domain/submission/normalise-submission.ts';
import {
  type SubmissionAccepted,
  SubmissionAcceptedSchema,
  SubmissionBodySchema,
} from '../../shared/domain/submission/submission-schema.ts';
import { estimateCallMinutes } from '../../shared/domain/team/capacity.ts';
import { matchMember } from '../../shared/domain/team/match-member.ts';
import { type EventLog, EventLogUnavailableError, type OutgoingRecord } from '../../shared/ports/event-log.ts';
import { isBackendUnavailable } from '../../shared/ports/unavailable.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import type { RateLimiter } from '../../shared/ports/rate-limiter.ts';
import { TOPICS, type Topics } from '../../shared/topics.ts';
import { AggregateRepository } from '../runtime/aggregate-repository.ts';
import { apiKeyAccess, apiKeyField } from './api-key-access.ts';
import { inSpan, SpanKind, traceContextFrom, traceHeaders } from '../../shared/observability/tracing.ts';
import { capacityRefusals } from '../../shared/observability/metrics.ts';
import { rawBodyOf } from './raw-body.ts';
import { capacityExhausted, ProblemError } from './errors.ts';
import { answeredUnavailable } from './error-handler.ts';
import type { KeyOwner } from './teams/team-directory.ts';
import type { TeamService } from './teams/team-service.ts';
import type { TypedApp } from './typed-app.ts';
import { problemResponses } from './problem-responses.ts';
import { releaseClaim } from './key-release.ts';

export const INGEST_PATH = '/api/integrations/push-api/ingest';
/** Spec Limits: 30 requests per minute per API key. */
export const INGEST_RATE_LIMIT = { limit: 30, windowMs: 60_000 };
/** Spec Limits: 10 MB request body. */
export const INGEST_BODY_LIMIT = 10 * 1024 * 1024;

export interface IngestDeps {
  teams: TeamService;
  limiter: RateLimiter;
  eventLog: EventLog;
  /** Holds Idempotency-Key records. */
  eventStore: EventStore;
  topics?: Topics;
  now?: () => Date;
  /** Seals the personal fields of the published CallSubmitted (docs/decisions/0014-erasure-crypto-shredding.md). */
  personalData?: PersonalData;
  /**
   * The event log's durable publish also makes the event store's earlier commits durable (both in
   * the embedded SQLite database, whose commits reach the disk in order): the reservation then
   * need not wait for the disk itself, and an accepted call waits for one sync, not two
   * (docs/decisions/0015-embedded-durability-off-the-event-loop.md).
   */
  publishCoversStore?: boolean;
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * The call of an Idempotency-Key claimed before claims named their call: a UUID (version 8,
 * name-based, SHA-256) of the key. Claims now carry the call id (a new one each time the key is
 * free), so a key used again after its window names a new call.
 */
export const callIdForKey = (idempotencyId: string): string => {
  const hex = sha256(`call-id:${idempotencyId}`);
  const variant = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
};

/**
 * The calls.submitted.v1 record of a call: a CloudEvent keyed by the call id, carrying `published`
 * (the CallSubmitted data as published: sealed, when personal fields are).
 */
export const callSubmittedRecord = (
  data: CallSubmittedData,
  published: unknown,
  extensions: Record<string, string> = {},
): OutgoingRecord =>
  toRecord({
    id: data.callId,
    type: CALL_SUBMITTED_TYPE,
    source: INGEST_PATH,
    subject: data.callId,
    time: data.submittedAt,
    data: published,
    extensions: { teamid: data.teamId, ...extensions },
  });

/**
 * The id of a new call: a UUID version 7 (RFC 9562), its first 48 bits the time in milliseconds and
 * the other 74 of its 122 bits random. Stored keyed by call id (its stream, data key, history
 * rows), calls submitted one after another land next to each other in every index: an insert
 * writes the index's last page instead of a random one, so a commit of many calls writes a few
 * pages, not one per call (docs/decisions/0019-time-ordered-call-ids.md).
 */
export const newCallId = (now = Date.now()): string => {
  const random = randomUUID();
  const time = now.toString(16).padStart(12, '0');
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${random.slice(15)}`;
};

/** The id of an Idempotency-Key's stream: the key is scoped to the API key that sent it, and stored hashed. */
export const idempotencyIdOf = (keyId: string, key: string): string => `${keyId}-${sha256(key).slice(0, 32)}`;

/** The Idempotency-Key header: 1–255 visible ASCII characters. */
const readIdempotencyKey = (raw: string | string[]): string => {
  const value = Array.isArray(raw) ? raw[0] : raw;
  if (!value || !/^[\x21-\x7e]{1,255}$/.test(value)) {
    throw new ProblemError('VALIDATION_FAILED', 'The Idempotency-Key header is invalid.', {
      errors: [
        { field: 'Idempotency-Key', message: 'must be 1–255 visible ASCII characters (a UUID is a good choice)' },
      ],
    });
  }
  return value;
};

export const registerIngestRoute = (app: TypedApp, deps: IngestDeps): void => {
  const now = deps.now ?? (() => new Date());
  const idempotency = new AggregateRepository(deps.eventStore, idempotencyDecider, idempotencyEvents);
  const calls = new AggregateRepository(deps.eventStore, callDecider, callEvents);
  // Releases of Idempotency-Keys still retried in the background stop when the ingress closes.
  const closing = new AbortController();
  app.addHook('onClose', async () => closing.abort());

  /** Whole seconds until `at` (ms since the epoch), at least 1: a Retry-After. */
  const secondsUntil = (at: number): number => Math.max(1, Math.ceil((at - now().getTime()) / 1000));

  /**
   * The 409 of a key another request of the same body holds: Retry-After says when its claim's
   * lease ends, when the key may be claimed again (its release, if that request fails, may free it
   * sooner).
   */
  const keyInUse = (leaseEndsAt: string) =>
    new ProblemError(
      'CONFLICT',
      'A request with this Idempotency-Key is still being handled. Retry after the Retry-After delay: its 201 is then replayed, or the key is free again.',
      {
        errors: [
          {
            field: 'Idempotency-Key',
            message: 'is held by a request with the same body still being handled; a key serves one request at a time',
          },
        ],
        headers: { 'retry-after': String(secondsUntil(Date.parse(leaseEndsAt))) },
      },
    );

  /** The normalised submission; a 400 with every broken rule otherwise. */
  const validate = (body: unknown): Extract<NormaliseResult, { ok: true }> => {
    const normalised = normaliseSubmission(body);
    if (!normalised.ok) {
      throw new ProblemError('VALIDATION_FAILED', 'The submission breaks one or more rules; see errors.', {
        errors: normalised.errors,
      });
    }
    return normalised;
  };

  /** The 201 body of an accepted call. */
  const acceptedBody = (callId: string, warnings: SubmissionAccepted['warnings']): SubmissionAccepted => ({
    callId,
    status: 'pending',
    processingTriggered: true,
    processingError: null,
    statusReason: 'queued_for_processing',
    warnings,
  });

  /**
   * Whether the processor has stored the call (it then holds no reservation any more, or soon none),
   * and whether it was erased since.
   */
  const storedCall = async (callId: string): Promise<'absent' | 'stored' | 'erased'> => {
    const { status } = (await calls.load(callId)).state;
    return status === 'absent' || status === 'erased' ? status : 'stored';
  };

  /**
   * A replay of a key's 201 once its call was erased: no 201 says of an erased call that it is
   * pending, and nothing of it is told again; the key stays bound to it, so its retries submit
   * nothing (docs/decisions/0006-idempotency-key.md). An erased call is not found, as everywhere.
   */
  const erasedCall = (callId: string) =>
    new ProblemError(
      'NOT_FOUND',
      `The call this Idempotency-Key submitted (${callId}) was erased; a request with this key submits nothing until the key's 24 hours end.`,
      {
        errors: [
          {
            field: 'Idempotency-Key',
            message: 'names a call that was erased; the key submits nothing until its 24 hours end',
          },
        ],
      },
    );

  /**
   * The 201 as stored for replay: without `warnings`, which quote the names of unknown fields (they
   * may hold personal data, sealed in CallSubmitted under the call's key and unreadable once it is
   * erased: docs/decisions/0014-erasure-crypto-shredding.md). A replay has them from its own body,
   * the same bytes as the first request's (compared by hash), normalised by the same rules.
   */
  const storedAnswer = ({ warnings: _warnings, ...answer }: SubmissionAccepted): Omit<SubmissionAccepted, 'warnings'> =>
    answer;

  /**
   * Reserves capacity and makes the call durable on the log; the 201 body. When the publish surely
   * failed, the reservation goes back if this attempt made it and `mayGiveBack` agrees (a keyed
   * request's other attempts may be publishing the same call).
   */
  const accept = async (
    owner: KeyOwner,
    { submission, warnings }: Extract<NormaliseResult, { ok: true }>,
    callId: string,
    { log, headers }: Pick<FastifyRequest, 'log' | 'headers'>,
    mayGiveBack: () => Promise<boolean> = async () => true,
  ): Promise<SubmissionAccepted> => {
    const team = deps.teams.directoryTeam(owner.teamId);
    if (!team)
      throw new ProblemError('API_KEY_INVALID', 'The team of this API key no longer exists.', {
        errors: [{ field: apiKeyField(headers), message: 'must be the key of an existing team' }],
      });

    const reservedMinutes = estimateCallMinutes(submission);
    let reservation;
    try {
      reservation = await deps.teams.reserve(owner.teamId, callId, reservedMinutes, {
        deferDurability: deps.publishCoversStore === true,
      });
    } catch (error) {
      if (isDomainError(error, 'CAPACITY_EXHAUSTED')) {
        capacityRefusals.inc();
        // No field is at fault: the body as a whole is the call that needs the capacity.
        throw capacityExhausted(
          "The team's live call hours are used up. Add capacity or enable auto-recharge, then retry this request.",
          'body',
          reservedMinutes,
          deps.teams.directoryTeam(owner.teamId)?.remainingMinutes ?? 0,
        );
      }
      throw error;
    }

    const submittedAt = now().toISOString();
    const data: CallSubmittedData = {
      callId,
      teamId: owner.teamId,
      keyId: owner.keyId,
      submittedAt,
      submission,
      attributedTo: matchMember(team, submission.repEmail),
      capacity: { reservedMinutes, autoRechargedMinutes: reservation.autoRechargedMinutes },
      warnings,
    };
    const topic = (deps.topics ?? TOPICS).callsSubmitted;
    try {
      // Sealed under the call's new data key: the record on the log holds no personal field in clear.
      const published = deps.personalData
        ? await deps.personalData.seal(callId, 'CallSubmitted', callEvents.encode({ type: 'CallSubmitted', data }).data)
        : data;
      await inSpan(
        `publish ${topic}`,
        {
          kind: SpanKind.PRODUCER,
          attributes: { 'messaging.destination.name': topic, 'call.id': callId, 'team.id': owner.teamId },
        },
        () => deps.eventLog.publish(topic, [callSubmittedRecord(data, published, traceHeaders())]),
      );
    } catch (error) {
      if (isBackendUnavailable(error) && error.outcomeUnknown) {
        // The record may be on the log: keep the reservation, and the 503 says the call may exist.
        log.warn({ err: error, callId, teamId: owner.teamId }, 'publish outcome unknown: reservation kept');
        throw error;
      }
      // Nothing of this attempt reached the log: give its capacity back before answering 503. A
      // reservation it found (an earlier attempt's, whose record may be on the log) stays.
      if (reservation.reserved && (await mayGiveBack()))
        await deps.teams
          .release(owner.teamId, callId)
          .catch((releaseError: unknown) => log.error({ err: releaseError, callId }, 'capacity release failed'));
      throw error instanceof EventLogUnavailableError
        ? error
        : new EventLogUnavailableError('the event log did not take the call', { cause: error });
    }
    log.info({ callId, teamId: owner.teamId, keyId: owner.keyId }, 'call accepted');
    return acceptedBody(callId, warnings);
  };

  app.post(
    INGEST_PATH,
    {
      bodyLimit: INGEST_BODY_LIMIT,
      onRequest: apiKeyAccess({ teams: deps.teams, limiter: deps.limiter, rule: INGEST_RATE_LIMIT, scope: 'ingest' }),
      // The schema documents the body; the normaliser validates it, so every alias conflict and
      // rule is reported with the field name the caller sent.
      validatorCompiler: () => (value: unknown) => ({ value }),
      schema: {
        summary: 'Submit one call for analysis',
        description:
          'A recording link (audioUrl), an inline transcript, or both, plus optional descriptive data. The team is inferred from the API key. ' +
          'Answers 201 once the call is durably queued; analysis runs asynchronously.',
        tags: ['Push API'],
        security: [{ apiKeyHeader: [] }, { bearer: [] }],
        body: SubmissionBodySchema,
        headers: Type.Object({
          'idempotency-key': Type.Optional(
            Type.String({
              description:
                'Optional. The same key with the same body within 24 h replays the first 201 (with Idempotent-Replayed: true) instead of creating another call, or answers 404 once that call was erased; with another body: 422.',
            }),
          ),
        }),
        response: {
          201: SubmissionAcceptedSchema,
          ...problemResponses(400, 401, 402, 404, 409, 413, 415, 422, 429, 503),
        },
      },
    },
    // The request's span: a child of the caller's traceparent when it sends one.
    (request, reply) =>
      inSpan(
        `POST ${INGEST_PATH}`,
        {
          kind: SpanKind.SERVER,
          parent: traceContextFrom(request.headers),
          attributes: { 'http.route': INGEST_PATH, 'request.id': request.id },
          // A refusal of the request (4xx) is the caller's mistake, not the server's failure.
          failed: (error) => !(error instanceof ProblemError && error.status < 500),
        },
        async () => {
          const owner = request.apiKey!;
          // Validated first: the body hash below serialises the body, which must be within the rules.
          const normalised = validate(request.body);
          const idempotencyKey = request.headers['idempotency-key'];
          if (idempotencyKey === undefined)
            return reply.code(201).send(await accept(owner, normalised, newCallId(), request));

          const key = readIdempotencyKey(idempotencyKey);
          const id = idempotencyIdOf(owner.keyId, key);
          const newCall = newCallId();
          const attempt = randomUUID();
          const claimed = await idempotency
            .handle(id, {
              type: 'Claim',
              bodyHash: sha256(rawBodyOf(request) ?? JSON.stringify(request.body)),
              now: now().toISOString(),
              callId: newCall,
              attempt,
            })
            .catch((error: unknown) => {
              throw error instanceof IdempotencyKeyInUseError ? keyInUse(error.leaseEndsAt) : error;
            });
          if (claimed.state.status === 'stored') {
            // A response stored by an earlier version also holds the warnings: the request's own replace them.
            const stored = claimed.state.response.body as SubmissionAccepted;
            if ((await storedCall(stored.callId)) === 'erased') throw erasedCall(stored.callId);
            return reply
              .code(201)
              .header('idempotent-replayed', 'true')
              .send({ ...stored, warnings: normalised.warnings });
          }
          const callId = (claimed.state.status === 'claimed' && claimed.state.callId) || callIdForKey(id);
          const tookOver = callId !== newCall;
          const leaseEndsAt = Date.parse(
            leaseEndOf(claimed.state.status === 'claimed' ? claimed.state.at : now().toISOString()),
          );
          /**
           * Releases the key of a request that ends without a 201, once: whether the key was still
           * this attempt's (false when a later attempt took it over, or the release is not stored
           * yet: it is retried in the background until the claim's lease ends, see key-release.ts).
           */
          let released: Promise<boolean> | undefined;
          let keyLost = false;
          let releasePending = false;
          const releaseKey = (callMayExist: boolean): Promise<boolean> =>
            (released ??= releaseClaim({
              release: async () =>
                (
                  await idempotency.handle(id, {
                    type: 'Release',
                    now: now().toISOString(),
                    outcomeUnknown: callMayExist,
                    attempt,
                  })
                ).events.length > 0,
              leaseEndsAt,
              now,
              log: request.log,
              signal: closing.signal,
            }).then((outcome) => {
              // Not released: another attempt holds the key, or has answered for it.
              keyLost = outcome === 'taken-over';
              releasePending = outcome === 'pending';
              return outcome === 'released';
            }));
          let accepted: SubmissionAccepted;
          let replayed: boolean;
          try {
            // A claim that took over from an earlier attempt of this request names that attempt's
            // call. Once the processor stored it, it was accepted (its 201 was not stored for
            // replay): answer that 201 again; accepting it again would reserve capacity a second
            // time, for a call that has settled its own. Unless it was erased since.
            const earlier = tookOver ? await storedCall(callId) : 'absent';
            if (earlier === 'erased') throw erasedCall(callId);
            replayed = earlier === 'stored';
            accepted = replayed
              ? acceptedBody(callId, normalised.warnings)
              : await accept(
                  owner,
                  normalised,
                  callId,
                  request,
                  // The key first: while this attempt still holds it, no other attempt publishes the call.
                  async () => !tookOver && (await releaseKey(false)),
                );
          } catch (error) {
            // No 201: free the key so that a retry of this request runs for real (the same call id).
            // The call may exist when this publish's outcome is unknown, or when this claim took
            // over from an attempt that may have published it: the key then stays bound to it.
            const outcomeUnknown = isBackendUnavailable(error) && error.outcomeUnknown;
            await releaseKey(tookOver || outcomeUnknown);
            // Until its release is stored the key answers 409: a 503 asks for no retry before then.
            if (releasePending) request.retryAfterAtLeast = secondsUntil(leaseEndsAt);
            // Another attempt of this request, earlier or later, may have put the call on the log:
            // no 503 may say that nothing was accepted (a conflict on the team's stream included).
            if (answeredUnavailable(error) && !outcomeUnknown && (tookOver || keyLost))
              throw new EventLogUnavailableError('another attempt of this request may have published the call', {
                cause: error,
                outcomeUnknown: true,
              });
            throw error;
          }
          try {
            await idempotency.handle(id, {
              type: 'StoreResponse',
              status: 201,
              body: storedAnswer(accepted),
              now: now().toISOString(),
              attempt,
            });
          } catch (error) {
            // The call is on the log: it is accepted. A retry after the claim's lease submits the same call id again.
            request.log.error(
              { err: error, callId: accepted.callId },
              'the 201 could not be stored for replay; answering it anyway',
            );
          }
          if (replayed) reply.header('idempotent-replayed', 'true');
          return reply.code(201).send(accepted);
        },
      ),
  );
};
