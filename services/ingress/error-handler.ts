import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { ExpectedVersionConflictError } from '../../shared/ports/event-store.ts';
import { isBackendUnavailable, isRetriableError } from '../../shared/ports/unavailable.ts';
import { DomainError } from '../../shared/domain/decider.ts';
import {
  DOMAIN_ERROR_CODES,
  ERROR_STATUS,
  type ErrorCode,
  type FieldError,
  problem,
  PROBLEM_JSON,
  ProblemError,
} from './errors.ts';

/** Seconds a client should wait after a 503: a backend outage, and contention on one stream. */
export const RETRY_AFTER_SECONDS = { unavailable: 5, contention: 1 } as const;

/** What a 503 tells the caller about the fate of its request. */
export const UNAVAILABLE_DETAIL = {
  nothingAccepted:
    'The service cannot store the request right now; nothing was accepted. Retry after the Retry-After delay.',
  outcomeUnknown:
    'The service could not confirm the request: the call may have been accepted. Retry after the Retry-After delay with the same Idempotency-Key to be safe (a retry without one may create a second call).',
  contention:
    'The request met concurrent changes to the same data and was not applied; nothing was accepted. Retry after the Retry-After delay.',
  read: 'The service cannot answer right now. Retry after the Retry-After delay.',
} as const;

const READS = new Set(['GET', 'HEAD']);

/** Fastify's own errors that mean "the request is wrong", mapped to our codes. */
const FASTIFY_CODES: Record<string, ErrorCode> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'MALFORMED_JSON',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'MALFORMED_JSON',
  FST_ERR_CTP_INVALID_JSON_BODY: 'MALFORMED_JSON',
  FST_ERR_VALIDATION: 'VALIDATION_FAILED',
};

const validationErrors = (error: FastifyError): FieldError[] =>
  (error.validation ?? []).map((v) => {
    const path = (v.instancePath || '').replace(/^\//, '').replaceAll('/', '.');
    const { missingProperty: missing, additionalProperty: unknown } = v.params as {
      missingProperty?: string;
      additionalProperty?: string;
    };
    const field = [path, missing ?? unknown].filter(Boolean).join('.') || (error.validationContext ?? 'body');
    const message = missing
      ? 'is required'
      : unknown !== undefined
        ? 'is not a field of this request'
        : (v.message ?? 'is invalid');
    return { field, message };
  });

/**
 * Fastify's refusals of the body itself, each naming what it refused and the rule: the body's
 * limit in bytes, the Content-Type this API takes.
 */
const refusalOf = (
  code: ErrorCode,
  error: FastifyError,
  request: FastifyRequest,
): { detail: string; errors?: FieldError[] } => {
  switch (code) {
    case 'PAYLOAD_TOO_LARGE': {
      const limit = request.routeOptions.bodyLimit;
      return {
        detail: `The body is larger than ${limit.toLocaleString('en-US')} bytes, the limit of this endpoint.`,
        errors: [{ field: 'body', message: `is larger than ${limit} bytes` }],
      };
    }
    case 'UNSUPPORTED_MEDIA_TYPE': {
      const sent = request.headers['content-type'];
      return {
        detail: `${sent ? `Content-Type "${sent}" is` : 'A body without a Content-Type is'} not accepted; send application/json.`,
        errors: [{ field: 'Content-Type', message: 'must be application/json' }],
      };
    }
    default:
      return { detail: error.message, errors: [{ field: 'body', message: error.message }] };
  }
};

/** Installs the one place where errors become problem+json responses. */
export const installErrorHandler = (app: FastifyInstance): void => {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ProblemError) {
      for (const [name, value] of Object.entries(error.extra.headers ?? {})) void reply.header(name, value);
      return reply.code(error.status).type(PROBLEM_JSON).send(error.toProblem());
    }
    if (error instanceof DomainError && error.code in DOMAIN_ERROR_CODES) {
      const code = DOMAIN_ERROR_CODES[error.code as keyof typeof DOMAIN_ERROR_CODES];
      // Every 400 carries errors[]: a rule of the domain that no route checked first names the body.
      const errors = code === 'VALIDATION_FAILED' ? [{ field: 'body', message: error.message }] : undefined;
      return reply
        .code(ERROR_STATUS[code])
        .type(PROBLEM_JSON)
        .send(problem(code, error.message, errors));
    }
    // Every backend's transient unavailability (event log, event store, read models, …) and a version
    // conflict that outlived its retries: the request was valid, so 503 + Retry-After, never a 500.
    if (isBackendUnavailable(error) || error instanceof ExpectedVersionConflictError || isRetriableError(error)) {
      const contention = error instanceof ExpectedVersionConflictError;
      const outcomeUnknown = isBackendUnavailable(error) && error.outcomeUnknown;
      request.log.warn(
        { err: error, outcomeUnknown },
        contention ? 'version conflict persisted after retries' : 'backend unavailable',
      );
      const detail = READS.has(request.method)
        ? UNAVAILABLE_DETAIL.read
        : contention
          ? UNAVAILABLE_DETAIL.contention
          : outcomeUnknown
            ? UNAVAILABLE_DETAIL.outcomeUnknown
            : UNAVAILABLE_DETAIL.nothingAccepted;
      return reply
        .code(ERROR_STATUS.SERVICE_UNAVAILABLE)
        .header('retry-after', String(contention ? RETRY_AFTER_SECONDS.contention : RETRY_AFTER_SECONDS.unavailable))
        .type(PROBLEM_JSON)
        .send(problem('SERVICE_UNAVAILABLE', detail));
    }
    const mapped = error.code ? FASTIFY_CODES[error.code] : undefined;
    if (mapped === 'VALIDATION_FAILED') {
      return reply
        .code(400)
        .type(PROBLEM_JSON)
        .send(problem(mapped, 'The request breaks one or more rules; see errors.', validationErrors(error)));
    }
    if (mapped) {
      const { detail, errors } = refusalOf(mapped, error, request);
      return reply
        .code(ERROR_STATUS[mapped])
        .type(PROBLEM_JSON)
        .send(problem(mapped, detail, errors));
    }
    if (error instanceof SyntaxError || (error.statusCode === 400 && /JSON/i.test(error.message))) {
      return reply.code(400).type(PROBLEM_JSON).send(problem('MALFORMED_JSON', 'The body is not valid JSON.'));
    }
    request.log.error({ err: error }, 'unhandled error');
    return reply
      .code(500)
      .type(PROBLEM_JSON)
      .send(problem('INTERNAL', 'An unexpected error occurred; it has been logged.'));
  });

  app.setNotFoundHandler((request, reply) =>
    reply
      .code(404)
      .type(PROBLEM_JSON)
      .send(problem('NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}.`)),
  );
};
