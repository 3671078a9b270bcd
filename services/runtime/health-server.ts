/**
 * /healthz and /readyz for a process without the HTTP API (a standalone processor or projections
 * process), on HEALTH_PORT: the same readiness answer as the ingress gives.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Backends } from './backends.ts';
import type { Health } from './health.ts';
import { readiness } from './readiness.ts';

export const serveHealth = async (port: number, host: string, backends: Pick<Backends, 'check'>, health: Health, logger: Logger) => {
  const ready = readiness(() => backends.check(), health, logger);
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    const send = (status: number, body: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (path === '/healthz') return send(200, { status: 'ok' });
    if (path === '/readyz') {
      ready().then(
        (report) => send(report.status === 'ready' ? 200 : 503, report),
        (error: unknown) => send(503, { status: 'unavailable', reasons: [`readiness check failed: ${(error as Error).message}`] }),
      );
      return;
    }
    send(404, { status: 404, detail: `No route ${request.method} ${path}; try /healthz or /readyz.` });
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, host, () => resolve()));
  const address = server.address() as AddressInfo;
  logger.info({ port: address.port }, `health on http://${host}:${address.port}/readyz`);
  return { close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
};
