/**
 * /healthz, /readyz and /metrics for a process without the HTTP API (a standalone processor or
 * projections process), on HEALTH_PORT: the same readiness answer as the ingress gives, and the
 * process's Prometheus metrics for a bearer METRICS_TOKEN or ADMIN_TOKEN. Its errors are the HTTP
 * API's: problem+json with the same codes (services/ingress/errors.ts, which loads nothing of the
 * ingress), and an internal failure is logged, never told.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { http } from '../../shared/node-http.ts';
import { METRICS_CONTENT_TYPE, renderMetrics } from '../../shared/observability/metrics.ts';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Config } from '../../shared/config.ts';
import type { Backends } from './backends.ts';
import type { Health } from './health.ts';
import { readiness } from './readiness.ts';
import { listenRefusal } from './listen-refusal.ts';
import { bearerToken } from '../../shared/security/bearer-token.ts';
import { ERROR_STATUS, type ErrorCode, type FieldError, problem, PROBLEM_JSON } from '../ingress/errors.ts';

/** Tokens accepted by /metrics, compared in constant time. */
const tokenCheck = (tokens: readonly string[]) => {
  const digests = tokens.map((token) => createHash('sha256').update(token).digest());
  return (authorization: string | undefined): boolean => {
    const bearer = bearerToken(authorization);
    if (!bearer) return false;
    const given = createHash('sha256').update(bearer).digest();
    return digests.map((digest) => timingSafeEqual(digest, given)).includes(true);
  };
};

export const serveHealth = async (
  port: number,
  host: string,
  backends: Pick<Backends, 'check'>,
  health: Health,
  logger: Logger,
  metricsTokens: readonly string[] = [],
) => {
  const ready = readiness(() => backends.check(), health, logger);
  const mayScrape = tokenCheck(metricsTokens);
  const server = http.createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    // Every answer carries a request id, as the HTTP API's do (there is no request log here to tie it to).
    response.setHeader('x-request-id', randomUUID());
    const send = (status: number, body: unknown) =>
      response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    const refuse = (code: ErrorCode, detail: string, errors?: FieldError[], headers: Record<string, string> = {}) =>
      response
        .writeHead(ERROR_STATUS[code], { ...headers, 'content-type': PROBLEM_JSON })
        .end(JSON.stringify(problem(code, detail, errors)));
    if (path === '/healthz') return send(200, { status: 'ok' });
    if (path === '/readyz') {
      ready().then(
        (report) => send(report.status === 'ready' ? 200 : 503, report),
        (error: unknown) => {
          logger.error({ err: error }, 'readiness check failed');
          send(503, { status: 'unavailable', reasons: ['readiness check failed (logged)'] });
        },
      );
      return;
    }
    if (path === '/metrics') {
      // As the ingress's /metrics answers it (admin-routes.ts): the same code and challenge.
      const challenge = { 'www-authenticate': 'Bearer realm="admin"' };
      if (metricsTokens.length === 0)
        return refuse(
          'ADMIN_TOKEN_INVALID',
          'Set METRICS_TOKEN (or ADMIN_TOKEN) for this process, then scrape with Authorization: Bearer <token>.',
          [
            {
              field: 'Authorization',
              message: 'accepts no token: this process has neither METRICS_TOKEN nor ADMIN_TOKEN',
            },
          ],
          challenge,
        );
      if (!mayScrape(request.headers.authorization))
        return refuse(
          'ADMIN_TOKEN_INVALID',
          'Send METRICS_TOKEN or ADMIN_TOKEN as Authorization: Bearer <token>.',
          [{ field: 'Authorization', message: 'must be Bearer <METRICS_TOKEN or ADMIN_TOKEN>' }],
          challenge,
        );
      renderMetrics().then(
        (text) => response.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE }).end(text),
        (error: unknown) => {
          logger.error({ err: error }, 'metrics could not be collected');
          refuse('INTERNAL', 'The metrics could not be collected; the error has been logged.');
        },
      );
      return;
    }
    refuse('NOT_FOUND', `No route ${request.method} ${path}; try /healthz, /readyz or /metrics.`, [
      { field: 'url', message: 'must be /healthz, /readyz or /metrics' },
    ]);
  });
  await new Promise<void>((resolve, reject) =>
    server
      .once('error', (error) => reject(listenRefusal(error, { host, port, portVariable: 'HEALTH_PORT' })))
      .listen(port, host, () => resolve()),
  );
  const address = server.address() as AddressInfo;
  logger.info({ port: address.port }, `health on http://${host}:${address.port}/readyz`);
  return { close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
};

/**
 * The health port of a standalone processor or projections process, when HEALTH_PORT is set; its
 * /metrics takes METRICS_TOKEN or the admin token.
 */
export const serveHealthPort = async (
  config: Config,
  backends: Pick<Backends, 'check'>,
  health: Health,
  logger: Logger,
): Promise<Awaited<ReturnType<typeof serveHealth>> | undefined> =>
  config.healthPort === undefined
    ? undefined
    : serveHealth(
        config.healthPort,
        config.host,
        backends,
        health,
        logger,
        [config.metricsToken, config.adminToken].filter((token) => token !== undefined),
      );
