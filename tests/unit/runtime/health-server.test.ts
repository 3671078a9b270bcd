/**
 * The health port of a standalone processor or projections process answers its errors as the
 * HTTP API does: RFC 9457 problem+json with the API's codes (ADMIN_TOKEN_INVALID with the bearer
 * challenge, NOT_FOUND, INTERNAL), and a failure inside the process is logged, never told.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { Gauge } from 'prom-client';
import { type FieldError, problem, problemType } from '../../../services/ingress/errors.ts';
import type { BackendProbes } from '../../../services/runtime/backend-probes.ts';
import { Health } from '../../../services/runtime/health.ts';
import { serveHealth } from '../../../services/runtime/health-server.ts';
import { registry } from '../../../shared/observability/metrics.ts';

const TOKEN = 'metrics-token-0123456789abcdef0123456789';
const INTERNAL = 'connection to 10.0.0.7:5432 refused for user svc_metrics';

type Served = Awaited<ReturnType<typeof serveHealth>> & { url: string; logs: Record<string, unknown>[] };

/** A health server on a free loopback port; `check` answers /readyz's probe. */
const serve = async (
  tokens: readonly string[],
  check: () => Promise<BackendProbes> = async () => ({ eventStore: { up: true } }),
): Promise<Served> => {
  const logs: Record<string, unknown>[] = [];
  const logger = pino(
    { level: 'info' },
    { write: (line: string) => void logs.push(JSON.parse(line) as Record<string, unknown>) },
  );
  const server = await serveHealth(0, '127.0.0.1', { check } as never, new Health(), logger, tokens);
  const port = logs.find((line) => typeof line.port === 'number')!.port as number;
  return { ...server, url: `http://127.0.0.1:${port}`, logs };
};

/** Asserts a problem+json answer of `code`, naming `errors` (every 4xx does); gives its body. */
const assertProblem = async (res: Response, code: Parameters<typeof problem>[0], errors?: FieldError[]) => {
  assert.match(String(res.headers.get('content-type')), /^application\/problem\+json/);
  const body = (await res.json()) as Record<string, unknown>;
  const expected = problem(code, String(body.detail), errors);
  assert.equal(res.status, expected.status);
  assert.deepEqual(body, expected);
  assert.equal(body.type, problemType(code));
  assert.ok(String(body.detail).length > 0);
  return body;
};

describe('health server errors', () => {
  let withToken: Served;
  let withoutToken: Served;
  before(async () => {
    withToken = await serve([TOKEN]);
    withoutToken = await serve([]);
  });
  after(async () => {
    await withToken?.close();
    await withoutToken?.close();
  });

  test('/metrics without a token configured: 401 ADMIN_TOKEN_INVALID naming what to set', async () => {
    const res = await fetch(`${withoutToken.url}/metrics`);
    const body = await assertProblem(res, 'ADMIN_TOKEN_INVALID', [
      { field: 'Authorization', message: 'accepts no token: this process has neither METRICS_TOKEN nor ADMIN_TOKEN' },
    ]);
    assert.match(String(body.detail), /Set METRICS_TOKEN \(or ADMIN_TOKEN\)/);
    assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="admin"');
  });

  test('/metrics with a wrong or no token: 401 ADMIN_TOKEN_INVALID; the right one: 200', async () => {
    for (const headers of [{}, { authorization: 'Bearer wrong' }]) {
      const res = await fetch(`${withToken.url}/metrics`, { headers });
      const body = await assertProblem(res, 'ADMIN_TOKEN_INVALID', [
        { field: 'Authorization', message: 'must be Bearer <METRICS_TOKEN or ADMIN_TOKEN>' },
      ]);
      assert.match(String(body.detail), /Authorization: Bearer <token>/);
      assert.equal(res.headers.get('www-authenticate'), 'Bearer realm="admin"');
    }
    const ok = await fetch(`${withToken.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(ok.status, 200);
    assert.match(await ok.text(), /^# HELP /m);
  });

  test('an unknown path: 404 NOT_FOUND naming the routes there are', async () => {
    const res = await fetch(`${withToken.url}/nope?x=1`);
    const body = await assertProblem(res, 'NOT_FOUND', [
      { field: 'url', message: 'must be /healthz, /readyz or /metrics' },
    ]);
    assert.equal(body.detail, 'No route GET /nope; try /healthz, /readyz or /metrics.');
  });

  test('metrics that cannot be collected: 500 INTERNAL without the internal message, which is logged', async () => {
    const name = 'test_health_server_broken';
    new Gauge({
      name,
      help: 'A gauge whose collection fails.',
      registers: [registry],
      collect() {
        throw new Error(INTERNAL);
      },
    });
    try {
      const res = await fetch(`${withToken.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
      const body = await assertProblem(res, 'INTERNAL');
      assert.doesNotMatch(JSON.stringify(body), /10\.0\.0\.7|svc_metrics|refused/);
    } finally {
      registry.removeSingleMetric(name);
    }
    const logged = withToken.logs.find((line) => line.level === 50 && JSON.stringify(line).includes(INTERNAL));
    assert.ok(logged, 'the internal message is in the log');
  });

  test('a readiness check that fails: 503 not ready, without the internal message, which is logged', async () => {
    const failing = await serve([TOKEN], () => Promise.reject(new Error(INTERNAL)));
    try {
      const res = await fetch(`${failing.url}/readyz`);
      assert.equal(res.status, 503);
      const body = (await res.json()) as { status: string; reasons: string[] };
      assert.equal(body.status, 'unavailable');
      assert.equal(body.reasons.length, 1);
      assert.doesNotMatch(JSON.stringify(body), /10\.0\.0\.7|svc_metrics|refused/);
      assert.ok(failing.logs.some((line) => line.level === 50 && JSON.stringify(line).includes(INTERNAL)));
    } finally {
      await failing.close();
    }
  });

  test('/healthz and a ready /readyz are unchanged', async () => {
    const health = await fetch(`${withToken.url}/healthz`);
    assert.equal(health.status, 200);
    for (const path of ['/healthz', '/readyz', '/metrics', '/nope'])
      assert.match((await fetch(`${withToken.url}${path}`)).headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/, path);
    assert.deepEqual(await health.json(), { status: 'ok' });
    const ready = await fetch(`${withToken.url}/readyz`);
    assert.equal(ready.status, 200);
    assert.equal(((await ready.json()) as { status: string }).status, 'ready');
  });
});
