/**
 * Traces and metrics across processes (README, Traces and Metrics): one ingress, one processor and
 * one projections process on Kafka + PostgreSQL export their spans over OTLP/HTTP to a collector
 * of the test's own; one call's spans from all three share one trace id. The standalone
 * processor serves /metrics on its health port for METRICS_TOKEN only.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { backend } from '../../support/backends.ts';
import { eventually } from '../../support/eventually.ts';
import { freePort } from '../../support/service-process.ts';
import { scratchDatabase, type Stack, stackEnv, startStack, teamWithKeys, TRANSCRIPT } from '../faults/scaled-out.ts';

const kafka = await backend('kafka');
const postgres = await backend('postgres');
const redis = await backend('redis');
const skip = kafka.skip ?? postgres.skip ?? redis.skip;

const METRICS_TOKEN = 'metrics-token-0123456789abcdef0123456789';

interface CollectedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
}

/** An OTLP/HTTP JSON receiver: what the exporters of the service's processes send. */
const collector = async () => {
  const spans: CollectedSpan[] = [];
  const hex = (id: unknown) =>
    typeof id === 'string' && /^[0-9a-f]*$/i.test(id)
      ? id.toLowerCase()
      : Buffer.from(typeof id === 'string' ? id : '', 'base64').toString('hex');
  const server: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      const payload = JSON.parse(body) as {
        resourceSpans: {
          resource: { attributes: { key: string; value: { stringValue?: string } }[] };
          scopeSpans: { spans: Record<string, unknown>[] }[];
        }[];
      };
      for (const resourceSpans of payload.resourceSpans) {
        const service =
          resourceSpans.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? '';
        for (const scope of resourceSpans.scopeSpans) {
          for (const span of scope.spans) {
            spans.push({
              service,
              traceId: hex(span.traceId),
              spanId: hex(span.spanId),
              parentSpanId: hex(span.parentSpanId),
              name: String(span.name),
            });
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
};

describe('observability across processes (Kafka + PostgreSQL)', { skip, timeout: 5 * 60_000 }, () => {
  let database: Awaited<ReturnType<typeof scratchDatabase>>;
  let otlp: Awaited<ReturnType<typeof collector>>;
  let stack: Stack;

  before(async () => {
    database = await scratchDatabase(postgres.url!);
    otlp = await collector();
    stack = await startStack(
      { ...stackEnv(database.url, kafka.url!, redis.url!), OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, METRICS_TOKEN },
      { ingress: 1, processor: 1, projections: 1 },
    );
  });
  after(async () => {
    await stack?.stopAll();
    await otlp?.close();
    await database?.drop();
  });

  test('one call, one trace: spans from the ingress, the processor and the projections processes share its trace id', async () => {
    const base = stack.ingress[0]!.url;
    const { keys } = await teamWithKeys(base, 1);
    const response = await fetch(`${base}/api/integrations/push-api/ingest`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': keys[0]! },
      body: JSON.stringify({ transcript: TRANSCRIPT, repName: 'Sam Seller' }),
    });
    assert.equal(response.status, 201, await response.clone().text());
    const { callId } = (await response.json()) as { callId: string };

    const trace = await eventually(
      () => {
        const request = otlp.spans.find(
          (s) =>
            s.name === 'POST /api/integrations/push-api/ingest' &&
            otlp.spans.some((p) => p.traceId === s.traceId && p.name === 'step complete'),
        );
        if (!request) throw new Error(`no complete trace yet: ${otlp.spans.length} spans`);
        const spans = otlp.spans.filter((s) => s.traceId === request.traceId);
        if (!spans.some((s) => s.name === 'project call-history')) throw new Error('projection spans not exported yet');
        return spans;
      },
      { timeoutMs: 60_000, intervalMs: 250 },
    );
    const services = new Map(trace.map((s) => [s.name, s.service]));
    assert.equal(services.get('POST /api/integrations/push-api/ingest'), 'call-ingestion-ingress');
    assert.ok(
      [...services].some(([name, service]) => name.startsWith('process ') && service === 'call-ingestion-processor'),
      'the intake span comes from the processor process',
    );
    assert.equal(services.get('step complete'), 'call-ingestion-processor');
    assert.equal(services.get('project call-history'), 'call-ingestion-projections');
    const request = trace.find((s) => s.name === 'POST /api/integrations/push-api/ingest')!;
    const publish = trace.find((s) => s.name.startsWith('publish ') && s.service === 'call-ingestion-ingress')!;
    assert.equal(publish.parentSpanId, request.spanId);
    assert.equal(
      trace.find((s) => s.name.startsWith('process '))!.parentSpanId,
      publish.spanId,
      'the processor continues from the record the ingress wrote',
    );
    console.log(
      `# call ${callId}: ${trace.length} spans in trace ${request.traceId} from ${[...new Set(trace.map((s) => s.service))].join(', ')}`,
    );
  });

  test('the standalone processor serves /metrics on its health port for METRICS_TOKEN only', async () => {
    const processor = stack.processors[0]!.url;
    assert.equal((await fetch(`${processor}/metrics`)).status, 401);
    assert.equal(
      (
        await fetch(`${processor}/metrics`, {
          headers: { authorization: 'Bearer wrong-wrong-wrong-wrong-wrong-wrong' },
        })
      ).status,
      401,
    );
    const scraped = await eventually(
      async () => {
        const res = await fetch(`${processor}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
        assert.equal(res.status, 200);
        const text = await res.text();
        if (!/^calls_finished_total\{status="completed",processing_error="none"\} 1$/m.test(text))
          throw new Error('the completed call is not counted yet');
        return text;
      },
      { timeoutMs: 30_000, intervalMs: 250 },
    );
    assert.match(
      scraped,
      /^event_log_consumer_lag_records\{group="[^"]+",topic="[^"]+calls\.submitted\.v1",partition="0"\} \d+$/m,
    );
    const ingress = stack.ingress[0]!.url;
    const ingressMetrics = await fetch(`${ingress}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    assert.equal(ingressMetrics.status, 200);
    assert.match(await ingressMetrics.text(), /^ingest_responses_total\{status="201",code="ACCEPTED"\} 1$/m);
  });
});
