import swagger from '@fastify/swagger';
import { Type } from '@sinclair/typebox';
import { EVENT_SCHEMAS } from '../../shared/domain/call/event-schemas.ts';
import { ProblemError } from './errors.ts';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyBaseLogger } from 'fastify';
import type { TypedApp } from './typed-app.ts';
import type { Logger } from 'pino';
import type { EventLog } from '../../shared/ports/event-log.ts';
import type { Topics } from '../../shared/topics.ts';
import type { RateLimiter } from '../../shared/ports/rate-limiter.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import type { ReadModels } from '../../shared/ports/read-models.ts';
import { registerAdminOpsRoutes } from './admin-ops-routes.ts';
import { adminGuard, registerAdminRoutes } from './admin-routes.ts';
import { registerCallsRoutes } from './calls-routes.ts';
import { installErrorHandler } from './error-handler.ts';
import { registerIngestRoute } from './ingest-route.ts';
import type { TeamService } from './teams/team-service.ts';

export interface IngressDeps {
  logger: Logger;
  /** Probes the backends for GET /readyz. */
  check: () => Promise<Record<string, boolean>>;
  teams: TeamService;
  limiter: RateLimiter;
  eventLog: EventLog;
  adminToken: string;
  eventStore: EventStore;
  /** Call history and deals; without them the read API is not served. */
  readModels?: ReadModels;
  topics?: Topics;
  now?: () => Date;
}

export type IngressApp = TypedApp;

/** Builds the HTTP app; starts nothing (tests call `app.inject()`, main.ts calls `listen`). */
export const buildIngressApp = async (deps: IngressDeps): Promise<TypedApp> => {
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    // Behind a proxy set trustProxy through a future option; the address throttles failed auth.
    trustProxy: false,
    // Query strings are text: coerce them (a single ?tag= becomes an array); unknown body fields stay errors.
    ajv: { customOptions: { coerceTypes: 'array', removeAdditional: false } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // JSON only: anything else is a 415, not a string body the rules would then reject as a 400.
  app.removeContentTypeParser('text/plain');
  installErrorHandler(app);

  await app.register(swagger, {
    openapi: {
      info: {
        title: 'Call ingestion service',
        version: '1.0.0',
        description: 'Push API: submit sales calls for asynchronous analysis. Errors are RFC 9457 application/problem+json with a stable code.',
      },
      components: {
        securitySchemes: {
          apiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-API-Key', description: 'Push API key (pk_…), the preferred header.' },
          bearer: { type: 'http', scheme: 'bearer', description: 'Push API key as Authorization: Bearer pk_…' },
          adminToken: { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN, admin API only.' },
        },
      },
    },
  });
  await app.register(swaggerUi, { routePrefix: '/docs' });

  app.get(
    '/docs/events/:name.json',
    { schema: { tags: ['Operations'], summary: 'JSON Schema of a message downstream systems consume', params: Type.Object({ name: Type.String() }) } },
    async (request, reply) => {
      const schema = (EVENT_SCHEMAS as Record<string, unknown>)[request.params.name];
      if (!schema) throw new ProblemError('NOT_FOUND', `No schema ${request.params.name}; known: ${Object.keys(EVENT_SCHEMAS).join(', ')}.`);
      return reply.type('application/schema+json').send(schema);
    },
  );
  app.get('/healthz', { schema: { tags: ['Operations'], summary: 'The process is alive' } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { tags: ['Operations'], summary: 'The backends answer' } }, async (_request, reply) => {
    const backends = await deps.check();
    const ready = Object.values(backends).every(Boolean);
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'unavailable', backends });
  });

  registerIngestRoute(app, { teams: deps.teams, limiter: deps.limiter, eventLog: deps.eventLog, eventStore: deps.eventStore, topics: deps.topics, now: deps.now });
  registerAdminRoutes(app, { teams: deps.teams, adminToken: deps.adminToken });
  registerAdminOpsRoutes(app, { eventLog: deps.eventLog, eventStore: deps.eventStore, readModels: deps.readModels, requireAdmin: adminGuard(deps.adminToken) });
  if (deps.readModels) registerCallsRoutes(app, { teams: deps.teams, limiter: deps.limiter, callHistory: deps.readModels.callHistory });
  return app;
};
