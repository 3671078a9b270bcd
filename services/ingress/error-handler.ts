import type { FastifyError, FastifyInstance, FastifyRequest } from 'fastify';
import { ExpectedVersionConflictError } from '../../shared/ports/event-store.ts';
import { isBackendUnavailable, isRetriableError } from '../../shared/ports/unavailable.ts';
import { DomainError } from '../../shared/domain/decider.ts';
import {
  DOMAIN_ERROR_CODES,
  DOMAIN_ERROR_FIELDS,
  ERROR_STATUS,
  type ErrorCode,
  type FieldError,
  problem,
  PROBLEM_JSON,
  ProblemError,
} from './errors.ts';

/** Seconds a client should wait after a 503: a backend outage, and contention on one stream. */
export const RETRY_AFTER_SECONDS = { unavailable: 5, contention: 1 } as const;

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The least Retry-After, in seconds, a 503 of this request asks for: set by a route that knows
     * a retry any sooner would be refused (an Idempotency-Key still held until its lease ends).
     */
    retryAfterAtLeast: number;
  }
}

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

/** One error of Fastify's schema validation (Ajv). */
type SchemaError = NonNullable<FastifyError['validation']>[number];

/**
 * The field a schema error is about, named as the ingest names fields: `.key` into an object, `[i]`
 * into an array (`autoRecharge.hours`, `tag[1]`); the part of the request when it is the whole of it.
 */
const fieldOf = (v: SchemaError, context: string): string => {
  const { missingProperty, additionalProperty } = v.params as { missingProperty?: string; additionalProperty?: string };
  const segments = (v.instancePath || '')
    .split('/')
    .slice(1)
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'));
  const named = missingProperty ?? additionalProperty;
  if (named !== undefined) segments.push(named);
  let field = '';
  for (const segment of segments)
    field += field === '' ? segment : /^\d+$/.test(segment) ? `[${segment}]` : `.${segment}`;
  return field || context;
};

const article = (type: string): string => (/^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`);

/** The rule a schema error says was broken, in the words of this API's other 400s. */
const ruleOf = (v: SchemaError): string => {
  const params = v.params as { limit?: number; allowedValues?: unknown[]; allowedValue?: unknown; type?: unknown };
  switch (v.keyword) {
    case 'required':
      return 'is required';
    case 'additionalProperties':
      return 'is not a field of this request';
    case 'enum':
      return `must be one of ${(params.allowedValues ?? []).map(String).join(', ')}`;
    case 'const':
      return `must be ${String(params.allowedValue)}`;
    case 'maxLength':
      return `at most ${params.limit} characters`;
    case 'minLength':
      return params.limit === 1 ? 'must not be empty' : `at least ${params.limit} characters`;
    case 'maxItems':
      return `at most ${params.limit} values`;
    case 'minItems':
      return `at least ${params.limit} values`;
    case 'maximum':
      return `at most ${params.limit}`;
    case 'minimum':
      return `at least ${params.limit}`;
    case 'type':
      return `must be ${[params.type].flat().map(String).map(article).join(' or ')}`;
    default:
      return v.message ?? 'is invalid';
  }
};

const isUnion = (v: SchemaError): boolean => v.keyword === 'anyOf' || v.keyword === 'oneOf';

/**
 * A value that matched no branch of a union: one entry. Ajv reports each branch's failure and then
 * the union's ("must be equal to constant" three times, "must match a schema in anyOf"), none of
 * them the rule. A union of constants is "must be one of …"; otherwise the rule is that of a branch
 * of the value's type (a branch the value is not even of the type of says nothing about it).
 */
const unionEntry = (union: SchemaError, branches: SchemaError[], context: string): FieldError => {
  if (branches.length > 0 && branches.every((b) => b.keyword === 'const'))
    return {
      field: fieldOf(union, context),
      message: `must be one of ${branches.map((b) => String((b.params as { allowedValue?: unknown }).allowedValue)).join(', ')}`,
    };
  const telling = branches.find((b) => b.keyword !== 'type' && !isUnion(b)) ?? branches[0];
  return telling
    ? { field: fieldOf(telling, context), message: ruleOf(telling) }
    : { field: fieldOf(union, context), message: ruleOf(union) };
};

/** One entry per field and rule broken, each naming the field as the caller sent it and the rule. */
const validationErrors = (error: FastifyError): FieldError[] => {
  const errors = error.validation ?? [];
  const context = error.validationContext ?? 'body';
  const branchesOf = (union: SchemaError) => errors.filter((v) => v.schemaPath.startsWith(`${union.schemaPath}/`));
  const outermost = errors.filter((v) => !errors.some((u) => u !== v && isUnion(u) && branchesOf(u).includes(v)));
  const entries = outermost.map((v) =>
    isUnion(v) ? unionEntry(v, branchesOf(v), context) : { field: fieldOf(v, context), message: ruleOf(v) },
  );
  return entries.filter((e, i) => entries.findIndex((f) => f.field === e.field && f.message === e.message) === i);
};

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
      // A body shorter or longer than its Content-Length says.
      if (error.code === 'FST_ERR_CTP_INVALID_CONTENT_LENGTH')
        return {
          detail: error.message,
          errors: [{ field: 'Content-Length', message: 'must be the number of bytes of the body sent' }],
        };
      return { detail: error.message, errors: [{ field: 'body', message: error.message }] };
  }
};

/**
 * Whether an error is answered 503 + Retry-After (`installErrorHandler`): a backend's transient
 * unavailability, or a version conflict that outlived its retries.
 */
export const answeredUnavailable = (error: unknown): boolean =>
  isBackendUnavailable(error) || error instanceof ExpectedVersionConflictError || isRetriableError(error);

/** Installs the one place where errors become problem+json responses. */
export const installErrorHandler = (app: FastifyInstance): void => {
  app.decorateRequest('retryAfterAtLeast', 0);
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof ProblemError) {
      for (const [name, value] of Object.entries(error.extra.headers ?? {})) void reply.header(name, value);
      return reply.code(error.status).type(PROBLEM_JSON).send(error.toProblem());
    }
    if (error instanceof DomainError && error.code in DOMAIN_ERROR_CODES) {
      const code = DOMAIN_ERROR_CODES[error.code as keyof typeof DOMAIN_ERROR_CODES];
      // Every 4xx names the field and the rule: the field the domain names, else the code's; a rule of
      // the domain that no route checked first names the body.
      const named = DOMAIN_ERROR_FIELDS[error.code as keyof typeof DOMAIN_ERROR_FIELDS];
      const errors = named ? [{ field: error.field ?? named.field, message: named.rule ?? error.message }] : undefined;
      return reply
        .code(ERROR_STATUS[code])
        .type(PROBLEM_JSON)
        .send(problem(code, error.message, errors));
    }
    // Every backend's transient unavailability (event log, event store, read models, …) and a version
    // conflict that outlived its retries: the request was valid, so 503 + Retry-After, never a 500.
    if (answeredUnavailable(error)) {
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
      const retryAfter = Math.max(
        contention ? RETRY_AFTER_SECONDS.contention : RETRY_AFTER_SECONDS.unavailable,
        request.retryAfterAtLeast,
      );
      return reply
        .code(ERROR_STATUS.SERVICE_UNAVAILABLE)
        .header('retry-after', String(retryAfter))
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
      return reply
        .code(400)
        .type(PROBLEM_JSON)
        .send(
          problem('MALFORMED_JSON', 'The body is not valid JSON.', [{ field: 'body', message: 'is not valid JSON' }]),
        );
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
      .send(
        problem('NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}.`, [
          {
            field: 'url',
            message: `must name a route of this API for ${request.method} (the routes are listed at /docs)`,
          },
        ]),
      ),
  );
};
