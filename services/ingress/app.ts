import swagger from '@fastify/swagger';
import { Type } from '@sinclair/typebox';
import { type FieldError, problem, PROBLEM_JSON, ProblemError } from './errors.ts';
import { unstorableTextErrors } from '../../shared/domain/submission/storable-text.ts';
import { http } from '../../shared/node-http.ts';
import { randomUUID } from 'node:crypto';
import type { Socket } from 'node:net';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger, type FastifyReply } from 'fastify';
import type { TypedApp } from './typed-app.ts';
import { registerJsonBodyParser } from './json-body.ts';
import { type BodyBudget, bodyBudgetFor, registerBodyBudget } from './body-budget.ts';
import { lingeringClose } from './lingering-close.ts';
import type { Logger } from 'pino';
import type { EventLog } from '../../shared/ports/event-log.ts';
import { TOPICS, type Topics } from '../../shared/topics.ts';
import type { RateLimiter } from '../../shared/ports/rate-limiter.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import type { ReadModels } from '../../shared/ports/read-models.ts';
import { registerAdminOpsRoutes } from './admin-ops-routes.ts';
import { adminGuard, registerAdminRoutes } from './admin-routes.ts';
import { registerCallsRoutes } from './calls-routes.ts';
import type { CallEraser } from './call-eraser.ts';
import type { ErasureRequests } from './erasure-requests.ts';
import { registerErasureAdminRoutes } from './erasure-admin-routes.ts';
import { registerEraseRoute } from './erase-route.ts';
import type { PersonalData } from '../../shared/adapters/crypto/personal-data.ts';
import { installErrorHandler } from './error-handler.ts';
import { INGEST_BODY_LIMIT, INGEST_PATH, registerIngestRoute } from './ingest-route.ts';
import { registerMetrics } from './metrics-routes.ts';
import { type OpenApiDocument, problemJsonResponses } from './problem-responses.ts';
import { registerConsoleRoutes } from './console-routes.ts';
import { registerUsageRoute } from './usage-route.ts';
import { registerTranscriptRoute } from './transcript-route.ts';
import { registerOperatorRoutes } from './operator-routes.ts';
import { registerWebhookRoutes } from './webhook-routes.ts';
import { registerSchemaRoutes } from './schema-routes.ts';
import type { TeamService } from './teams/team-service.ts';
import type { Health } from '../runtime/health.ts';
import type { BackendProbes } from '../runtime/backend-probes.ts';
import { readiness, ReadinessReportSchema } from '../runtime/readiness.ts';
import { holdsCredential } from '../runtime/logger.ts';

export interface IngressDeps {
  logger: Logger;
  /** Probes the backends for GET /readyz, each within its deadline (backend-probes.ts). */
  check: () => Promise<BackendProbes>;
  teams: TeamService;
  limiter: RateLimiter;
  eventLog: EventLog;
  adminToken: string;
  /** A second bearer token accepted by GET /metrics. */
  metricsToken?: string;
  eventStore: EventStore;
  /** The events as stored (personal fields sealed); default `eventStore`. */
  storedEvents?: EventStore;
  /** Call history and deals; without them the read API is not served. */
  readModels?: ReadModels;
  topics?: Topics;
  now?: () => Date;
  /** Readiness of this process's own parts (consumer, projections, subscriptions). */
  health?: Health;
  /** WEBHOOK_ALLOW_PRIVATE: webhook URLs may name loopback and private addresses. */
  webhookAllowPrivate?: boolean;
  /** Seals personal fields of published calls (docs/decisions/0014-erasure-crypto-shredding.md). */
  personalData?: PersonalData;
  /** Erasing calls, and erasure requests; without them DELETE /api/calls/:callId and the erasure admin API are not served. */
  erasure?: { erase: CallEraser; requests: ErasureRequests };
  /** The event log and the event store share one embedded database (see the ingest route). */
  publishCoversStore?: boolean;
  /** Admission of request bodies by size (body-budget.ts); by default an eighth of the heap. */
  bodyBudget?: BodyBudget;
}

export type IngressApp = TypedApp;

/** Socket bounds of the HTTP server (README, Limits and fairness). */
export const HTTP_LIMITS = {
  requestTimeoutMs: 60_000,
  idleSocketTimeoutMs: 60_000,
  keepAliveTimeoutMs: 72_000,
  /** Open connections per process; more are refused at accept. */
  maxConnections: 10_000,
} as const;

/** An X-Request-Id taken from the caller: 1–128 visible ASCII characters of a token. */
const REQUEST_ID = /^[A-Za-z0-9._:@-]{1,128}$/;

/**
 * What each of Node's HTTP parser errors is about, as a 400 names it: a header, the URL, the method,
 * or the request line, headers or body as a whole (llhttp's codes).
 */
const PARSE_ERRORS: Record<string, FieldError> = {
  HPE_INVALID_CONTENT_LENGTH: { field: 'Content-Length', message: 'must be one whole number of bytes' },
  HPE_UNEXPECTED_CONTENT_LENGTH: {
    field: 'Content-Length',
    message: 'must not be sent with Transfer-Encoding: chunked',
  },
  HPE_INVALID_TRANSFER_ENCODING: { field: 'Transfer-Encoding', message: 'must end with chunked' },
  HPE_INVALID_CHUNK_SIZE: { field: 'body', message: 'must be valid chunked encoding' },
  HPE_CHUNK_EXTENSIONS_OVERFLOW: { field: 'body', message: 'must be valid chunked encoding' },
  HPE_INVALID_METHOD: { field: 'method', message: 'must be an HTTP method' },
  HPE_INVALID_URL: { field: 'url', message: 'must be a valid request target' },
  HPE_INVALID_VERSION: { field: 'request line', message: 'must be METHOD URL HTTP/1.1' },
  HPE_INVALID_HEADER_TOKEN: {
    field: 'headers',
    message: 'each must be a name, a colon and a value of legal characters',
  },
};

/**
 * What Node's HTTP parser refuses before there is a request (a malformed Content-Length, headers
 * over 16 KB, a request that took too long to arrive) still gets a problem+json answer naming what
 * was at fault, with a new request id like every answer, then the socket closes.
 */
export const answerClientError = (error: Error & { code?: string; reason?: string }, socket: Socket): void => {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  let answer;
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    // Node's parser holds the request once its headers are in: then the body was too slow.
    const headersIn = (socket as Socket & { parser?: { incoming?: unknown } }).parser?.incoming != null;
    const seconds = HTTP_LIMITS.requestTimeoutMs / 1000;
    answer = problem('REQUEST_TIMEOUT', `The request did not arrive completely within ${seconds} s.`, [
      headersIn
        ? { field: 'body', message: `must arrive whole within ${seconds} s of the request's start` }
        : { field: 'headers', message: `the request line and headers must arrive within ${seconds} s` },
    ]);
  } else if (error.code === 'HPE_HEADER_OVERFLOW') {
    answer = problem('REQUEST_HEADERS_TOO_LARGE', 'The request line and headers exceed 16 KB.', [
      { field: 'headers', message: 'the request line (the URL included) and headers together at most 16 KB' },
    ]);
  } else {
    const code = error.code ?? 'parse error';
    answer = problem('BAD_REQUEST', `The request is not valid HTTP (${code}).`, [
      PARSE_ERRORS[code] ?? {
        field: 'request',
        message: `must be valid HTTP/1.1${error.reason ? `: ${error.reason.toLowerCase()}` : ''}`,
      },
    ]);
  }
  if (socket.writable) {
    const body = JSON.stringify(answer);
    socket.write(
      `HTTP/1.1 ${answer.status} ${http.STATUS_CODES[answer.status]}\r\nContent-Type: ${PROBLEM_JSON}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${randomUUID()}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
};

/** The longest path parameter the router takes (an id); a longer one is a 400 naming the rule. */
const MAX_PARAM_LENGTH = 100;

/** Builds the HTTP app; starts nothing (tests call `app.inject()`, main.ts calls `listen`). */
export const buildIngressApp = async (deps: IngressDeps): Promise<TypedApp> => {
  // The logger's test, and this app's tokens even where no one registered them with the logger.
  const tokens = [deps.adminToken, deps.metricsToken].filter((token): token is string => !!token);
  const holdsSecret = (text: string) => holdsCredential(text) || tokens.some((token) => text.includes(token));
  const app = Fastify({
    // Fastify infers its logger type from this option; typed as its base logger, the app stays a TypedApp.
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
    loggerInstance: deps.logger as FastifyBaseLogger,
    // Behind a proxy set trustProxy through a future option; the address throttles failed auth.
    trustProxy: false,
    // Query strings are text: coerce them (a single ?tag= becomes an array); unknown body fields stay errors.
    ajv: { customOptions: { coerceTypes: 'array', removeAdditional: false } },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // While closing, answer 503 ourselves: problem+json with Retry-After, like every other 503.
    return503OnClosing: false,
    // A request must arrive whole within a minute, an idle socket closes after one: a slow body
    // never holds a socket for ever (HTTP_LIMITS).
    requestTimeout: HTTP_LIMITS.requestTimeoutMs,
    connectionTimeout: HTTP_LIMITS.idleSocketTimeoutMs,
    keepAliveTimeout: HTTP_LIMITS.keepAliveTimeoutMs,
    // Errors below the router answer problem+json too, with the request's id: the onRequest hook
    // that sets it on every other answer does not run for them.
    frameworkErrors: (error, request, reply: FastifyReply) => {
      // The router refuses a path parameter past its length (an id of more than 100 characters):
      // that is the rule broken, not the URL's encoding.
      const tooLong = (error as { code?: string }).code === 'FST_ERR_MAX_PARAM_LENGTH';
      void reply
        .code(400)
        .header('x-request-id', request.id)
        .type(PROBLEM_JSON)
        .send(
          problem('BAD_REQUEST', `The request URL is not valid: ${error.message}`, [
            tooLong
              ? { field: 'url', message: `each path parameter is at most ${MAX_PARAM_LENGTH} characters` }
              : { field: 'url', message: 'must decode as UTF-8: its %-escapes must spell whole UTF-8 characters' },
          ]),
        );
    },
    clientErrorHandler: answerClientError,
    // Every answer and every log line of a request carry its id: the caller's X-Request-Id when it
    // is a sane token that holds no credential (a key sent there would be logged on every line), a
    // new UUID otherwise.
    requestIdHeader: false,
    genReqId: (request) => {
      const given = request.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) && !holdsSecret(given) ? given : randomUUID();
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
  app.addHook('onRequest', async (request, reply) => {
    void reply.header('x-request-id', request.id);
  });
  app.server.maxConnections = HTTP_LIMITS.maxConnections;

  // A refusal answered before the body was read reads the rest of it before closing, and a
  // shutdown cuts that short (lingering-close.ts).
  const lingering = lingeringClose();
  let closing = false;
  app.addHook('onSend', async (request, reply, payload) => {
    if (!closing && reply.getHeader('connection') === 'close' && !request.raw.complete) lingering.linger(request.raw);
    return payload;
  });
  app.addHook('preClose', async () => {
    closing = true;
    lingering.closeAll();
  });
  app.addHook('onRequest', async (_request, reply) => {
    if (!closing) return;
    void reply.header('connection', 'close');
    throw new ProblemError(
      'SERVICE_UNAVAILABLE',
      'This process is shutting down; nothing was accepted. Retry after the Retry-After delay (another instance may answer at once).',
      {
        headers: { 'retry-after': '1' },
      },
    );
  });

  registerJsonBodyParser(app);
  registerBodyBudget(app, deps.bodyBudget ?? bodyBudgetFor(INGEST_BODY_LIMIT));
  installErrorHandler(app);

  await app.register(swagger, {
    // Every 4xx and 5xx of this API is RFC 9457 problem+json (error-handler.ts): the document declares
    // each one a route can give, its own and those of its kind (problem-responses.ts).
    transformObject: (document) =>
      'openapiObject' in document
        ? problemJsonResponses(document.openapiObject as OpenApiDocument)
        : document.swaggerObject,
    openapi: {
      // 3.1: its schemas are JSON Schema 2020-12, which is what TypeBox writes (numeric exclusiveMinimum, type null).
      openapi: '3.1.0',
      info: {
        title: 'Call ingestion service',
        version: '1.0.0',
        description:
          'Push API: submit sales calls for asynchronous analysis. Errors are RFC 9457 application/problem+json with a stable code.',
      },
      components: {
        securitySchemes: {
          apiKeyHeader: {
            type: 'apiKey',
            in: 'header',
            name: 'X-API-Key',
            description: 'Push API key (pk_…), the preferred header.',
          },
          bearer: { type: 'http', scheme: 'bearer', description: 'Push API key as Authorization: Bearer pk_…' },
          adminToken: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN, admin API only.' },
        },
      },
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });
  // After the document's plugin (so /metrics is in it), before every API route (so each is counted).
  registerMetrics(app, {
    requireToken: adminGuard(deps.adminToken, deps.limiter, deps.metricsToken ? [deps.metricsToken] : []),
  });

  registerSchemaRoutes(app, deps.topics ?? TOPICS);
  app.get(
    '/healthz',
    {
      schema: {
        tags: ['Operations'],
        summary: 'The process is alive',
        response: { 200: Type.Object({ status: Type.Literal('ok') }) },
      },
    },
    async () => ({ status: 'ok' as const }),
  );
  const ready = readiness(deps.check, deps.health, deps.logger);
  app.get(
    '/readyz',
    {
      schema: {
        tags: ['Operations'],
        summary: 'The backends answer and every part of this process does its job; 503 names what does not',
        response: {
          200: { description: 'Ready', content: { 'application/json': { schema: ReadinessReportSchema } } },
          // The report, as JSON; the problem a shutdown answers is added with every route's 503 (problem-responses.ts).
          503: {
            description: 'Not ready: the report names what fails in `reasons`.',
            content: { 'application/json': { schema: ReadinessReportSchema } },
          },
        },
      },
    },
    async (_request, reply) => {
      const report = await ready();
      return reply.code(report.status === 'ready' ? 200 : 503).send(report);
    },
  );

  // Text no backend can store (U+0000, an unpaired surrogate) is refused wherever a request carries
  // it, naming the field: on PostgreSQL it would fail the write or the query it rides in. The
  // ingest route checks its own body, in the contract's order.
  app.addHook('preValidation', async (request) => {
    if (request.routeOptions.url === INGEST_PATH) return;
    const errors = [request.params, request.query, request.body].flatMap((part) =>
      isPlainObject(part) ? unstorableTextErrors(part) : [],
    );
    if (errors.length > 0)
      throw new ProblemError('VALIDATION_FAILED', 'The request breaks one or more rules; see errors.', { errors });
  });

  // A query parameter that takes one value, sent more than once (`?status=pending&status=failed`):
  // named for what it is, rather than for the first value a union of values would have allowed.
  app.addHook('preValidation', async (request) => {
    const properties = (request.routeOptions.schema?.querystring as { properties?: Record<string, { type?: unknown }> })
      ?.properties;
    if (!properties || !isPlainObject(request.query)) return;
    const errors = Object.entries(request.query)
      .filter(
        ([name, value]) => Array.isArray(value) && properties[name] !== undefined && properties[name].type !== 'array',
      )
      .map(([name]) => ({ field: name, message: 'must be given once' }));
    if (errors.length > 0)
      throw new ProblemError('VALIDATION_FAILED', 'The request breaks one or more rules; see errors.', { errors });
  });

  registerIngestRoute(app, {
    teams: deps.teams,
    limiter: deps.limiter,
    eventLog: deps.eventLog,
    eventStore: deps.eventStore,
    topics: deps.topics,
    now: deps.now,
    personalData: deps.personalData,
    publishCoversStore: deps.publishCoversStore,
  });
  registerAdminRoutes(app, { teams: deps.teams, adminToken: deps.adminToken, limiter: deps.limiter });
  registerAdminOpsRoutes(app, {
    eventLog: deps.eventLog,
    eventStore: deps.eventStore,
    storedEvents: deps.storedEvents,
    readModels: deps.readModels,
    health: deps.health,
    requireAdmin: adminGuard(deps.adminToken, deps.limiter),
    ...(deps.topics ? { topics: deps.topics } : {}),
  });
  registerOperatorRoutes(app, { ...deps, requireAdmin: adminGuard(deps.adminToken, deps.limiter) });
  if (deps.readModels) {
    registerWebhookRoutes(app, {
      teams: deps.teams,
      eventStore: deps.eventStore,
      webhooks: deps.readModels.webhooks,
      requireAdmin: adminGuard(deps.adminToken, deps.limiter),
      now: deps.now,
      allowPrivate: deps.webhookAllowPrivate ?? false,
    });
  }
  if (deps.readModels)
    registerCallsRoutes(app, {
      teams: deps.teams,
      limiter: deps.limiter,
      callHistory: deps.readModels.callHistory,
      eventStore: deps.eventStore,
    });
  if (deps.erasure) {
    registerEraseRoute(app, { teams: deps.teams, limiter: deps.limiter, erase: deps.erasure.erase });
    registerErasureAdminRoutes(app, {
      teams: deps.teams,
      requests: deps.erasure.requests,
      requireAdmin: adminGuard(deps.adminToken, deps.limiter),
    });
  }
  registerUsageRoute(app, { teams: deps.teams, limiter: deps.limiter });
  registerTranscriptRoute(app, { teams: deps.teams, limiter: deps.limiter, eventStore: deps.eventStore });
  registerConsoleRoutes(app);
  return app;
};

/**
 * A JSON object as parsed from a body, or Fastify's params and query (objects whose prototype has
 * none): not a Buffer, a stream or an array.
 */
const isPlainObject = (value: unknown): value is Record<string, unknown> => {
  if (typeof value !== 'object' || value === null) return false;
  const proto = Object.getPrototypeOf(value) as object | null;
  return proto === null || proto === Object.prototype || Object.getPrototypeOf(proto) === null;
};
