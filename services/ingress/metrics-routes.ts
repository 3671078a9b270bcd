/**
 * GET /metrics (Prometheus text format) and the HTTP instruments: every answer is counted by
 * method, route pattern and status with its latency; the ingest endpoint's answers also by code.
 * The scrape is protected: the admin token or METRICS_TOKEN as a bearer token (README, Metrics).
 */
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  httpRequestDuration,
  httpRequests,
  ingestAnswers,
  METRICS_CONTENT_TYPE,
  renderMetrics,
} from '../../shared/observability/metrics.ts';
import { INGEST_PATH } from './ingest-route.ts';
import type { TypedApp } from './typed-app.ts';

/** The code a problem+json answer carried, by request (set before serialisation). */
const problemCodes = new WeakMap<FastifyRequest, string>();

/** Route pattern of a request: `/api/calls/:callId`, never the raw URL (bounded label values). */
const routeOf = (request: FastifyRequest): string => request.routeOptions.url ?? 'unmatched';

export interface MetricsRouteDeps {
  /** Guards the scrape (admin token or METRICS_TOKEN). */
  requireToken: (request: FastifyRequest, reply: FastifyReply) => Promise<void>;
}

export const registerMetrics = (app: TypedApp, deps: MetricsRouteDeps): void => {
  app.addHook('preSerialization', async (request, reply, payload) => {
    if (
      reply.statusCode >= 400 &&
      payload !== null &&
      typeof payload === 'object' &&
      typeof (payload as { code?: unknown }).code === 'string'
    ) {
      problemCodes.set(request, (payload as { code: string }).code);
    }
    return payload;
  });

  app.addHook('onResponse', async (request, reply) => {
    const route = routeOf(request);
    const labels = { method: request.method, route, status: String(reply.statusCode) };
    httpRequests.inc(labels);
    httpRequestDuration.observe(labels, reply.elapsedTime / 1000);
    if (route === INGEST_PATH) {
      const code =
        reply.statusCode === 201
          ? reply.getHeader('idempotent-replayed') === 'true'
            ? 'REPLAYED'
            : 'ACCEPTED'
          : (problemCodes.get(request) ?? 'UNKNOWN');
      ingestAnswers.inc({ status: String(reply.statusCode), code });
    }
  });

  app.get(
    '/metrics',
    {
      onRequest: deps.requireToken,
      schema: {
        tags: ['Operations'],
        summary: 'Prometheus metrics of this process (bearer admin token or METRICS_TOKEN)',
        security: [{ adminToken: [] }],
        // Its 401 and 429 are the admin guard's, declared for every route with its security (problem-responses.ts).
        response: {
          200: {
            description: 'The Prometheus text exposition format',
            content: { [METRICS_CONTENT_TYPE]: { schema: Type.String() } },
          },
        },
      },
    },
    async (_request, reply) => reply.type(METRICS_CONTENT_TYPE).send(await renderMetrics()),
  );
};
