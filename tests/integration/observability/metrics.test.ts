/**
 * GET /metrics after a known workload: every counter moved by exactly that workload (README,
 * Metrics). The whole pipeline runs on the embedded default in this process, so the ingress,
 * processor and projections record into the one registry the scrape renders.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { INGEST_PATH } from '../../../services/ingress/ingest-route.ts';
import { eventually } from '../../support/eventually.ts';
import { ADMIN_TOKEN } from '../../support/ingress-harness.ts';
import type { PipelineHarness } from '../../support/pipeline-harness.ts';
import { type EmbeddedPipeline, openEmbeddedPipeline } from '../../support/embedded-pipeline.ts';

/** The samples of a Prometheus text exposition, keyed `name{label="value",…}` with labels sorted. */
const parse = (text: string): Map<string, number> => {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(match, `not a sample line: ${line}`);
    const labels = [...(match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)]
      .map(([, k, v]) => `${k}="${v}"`)
      .sort();
    samples.set(`${match[1]}{${labels.join(',')}}`, Number(match[3]));
  }
  return samples;
};

const key = (name: string, labels: Record<string, string> = {}) =>
  `${name}{${Object.entries(labels)
    .map(([k, v]) => `${k}="${v}"`)
    .sort()
    .join(',')}}`;

describe('GET /metrics', () => {
  let pipeline: EmbeddedPipeline;
  let h: PipelineHarness;

  before(async () => {
    pipeline = await openEmbeddedPipeline();
    h = pipeline.h;
  });
  after(async () => {
    await pipeline?.close();
  });

  const scrape = async () => {
    const response = await h.ingress.app.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    assert.equal(response.statusCode, 200, response.body);
    assert.match(String(response.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    return parse(response.body);
  };

  test('401 without the admin token (or METRICS_TOKEN); the scrape is not public', async () => {
    const anonymous = await h.ingress.app.inject({ method: 'GET', url: '/metrics' });
    assert.equal(anonymous.statusCode, 401);
    assert.equal(anonymous.json<{ code: string }>().code, 'ADMIN_TOKEN_INVALID');
    const wrong = await h.ingress.app.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: 'Bearer not-the-token-not-the-token-not-the-token' },
    });
    assert.equal(wrong.statusCode, 401);
  });

  test('counters move by exactly the workload: answers by status and code, refusals, finished calls, steps, appends, dead letters', async () => {
    const rich = await h.team();
    const flooded = await h.team();
    const broke = await h.team({ capacityHours: 0 });
    const before = await scrape();

    const callIds: string[] = [];
    for (let i = 0; i < 3; i++) {
      const accepted = await h.ingest({
        key: rich.key,
        body: { transcript: `Rep: hello number ${i}\nDana: we need pricing by Friday`, repName: 'Sam Seller' },
      });
      assert.equal(accepted.statusCode, 201, accepted.body);
      callIds.push(accepted.json<{ callId: string }>().callId);
    }
    assert.equal(
      (await h.ingest({ key: rich.key, body: { repName: 'no recording and no transcript' } })).statusCode,
      400,
    );
    for (let i = 0; i < 30; i++) assert.equal((await h.ingest({ key: flooded.key, body: {} })).statusCode, 400);
    assert.equal((await h.ingest({ key: flooded.key, body: {} })).statusCode, 429);
    assert.equal((await h.ingest({ key: broke.key, body: { transcript: 'Rep: hi\nDana: hello' } })).statusCode, 402);
    for (const callId of callIds) await h.callEvents(callId);

    // One record nobody can parse goes to the dead letters.
    await h.eventLog.publish(h.topics.callsSubmitted, [{ key: 'poison', value: '{not json', headers: {} }]);

    const delta = (name: string, labels?: Record<string, string>) =>
      (after.get(key(name, labels)) ?? 0) - (before.get(key(name, labels)) ?? 0);
    let after = await scrape();
    after = await eventually(
      async () => {
        const now = await scrape();
        const finished =
          (now.get(key('calls_finished_total', { status: 'completed', processing_error: 'none' })) ?? 0) -
          (before.get(key('calls_finished_total', { status: 'completed', processing_error: 'none' })) ?? 0);
        const dead =
          (now.get(key('dead_letters_total', { source_topic: h.topics.callsSubmitted })) ?? 0) -
          (before.get(key('dead_letters_total', { source_topic: h.topics.callsSubmitted })) ?? 0);
        if (finished < 3 || dead < 1) throw new Error(`finished ${finished}, dead-lettered ${dead}`);
        return now;
      },
      { timeoutMs: 15_000, intervalMs: 100 },
    );

    assert.equal(delta('ingest_responses_total', { status: '201', code: 'ACCEPTED' }), 3);
    assert.equal(delta('ingest_responses_total', { status: '400', code: 'VALIDATION_FAILED' }), 31);
    assert.equal(delta('ingest_responses_total', { status: '429', code: 'RATE_LIMITED' }), 1);
    assert.equal(delta('ingest_responses_total', { status: '402', code: 'CAPACITY_EXHAUSTED' }), 1);
    assert.equal(delta('rate_limit_refusals_total', { limit: 'ingest' }), 1);
    assert.equal(delta('capacity_refusals_total'), 1);
    const ingestRoute = { method: 'POST', route: INGEST_PATH };
    assert.equal(delta('http_requests_total', { ...ingestRoute, status: '201' }), 3);
    assert.equal(delta('http_requests_total', { ...ingestRoute, status: '400' }), 31);
    assert.equal(delta('http_request_duration_seconds_count', { ...ingestRoute, status: '201' }), 3);
    assert.equal(delta('http_request_duration_seconds_bucket', { ...ingestRoute, status: '201', le: '+Inf' }), 3);
    assert.equal(delta('calls_finished_total', { status: 'completed', processing_error: 'none' }), 3);
    assert.equal(delta('pipeline_step_duration_seconds_count', { step: 'analyse', outcome: 'ok' }), 3);
    assert.equal(
      delta('pipeline_step_duration_seconds_count', { step: 'fetch', outcome: 'ok' }),
      0,
      'transcript-only calls fetch nothing',
    );
    assert.equal(delta('dead_letters_total', { source_topic: h.topics.callsSubmitted }), 1);
    // Each call appends its capacity reservation, its settlement and CallSubmitted with its steps
    // (all of which run here, appended together).
    assert.ok(
      delta('event_store_append_duration_seconds_count', { store: 'sqlite' }) >= 3 * 3,
      'event store appends were timed',
    );
    assert.ok(
      delta('group_commit_batch_size_count', { writer: 'sqlite-event-store' }) >= 1,
      'event store group commits were measured',
    );
    assert.ok(
      delta('group_commit_batch_size_count', { writer: 'sql-event-log' }) >= 4,
      'event log group commits were measured (3 calls, 1 poison record)',
    );
    assert.ok(after.has(key('process_resident_memory_bytes')), 'the default process metrics are there');
    // The projections count the events of each batch they apply: each call's CallSubmitted and
    // CallCompleted at least, once they have caught up.
    await eventually(
      async () => {
        const now = await scrape();
        for (const projection of ['call-history', 'deals']) {
          const changed = (name: string) =>
            (now.get(key(name, { projection })) ?? 0) - (before.get(key(name, { projection })) ?? 0);
          const events = changed('projection_batch_events_sum');
          const batches = changed('projection_batch_events_count');
          if (events < 3 * 2 || batches < 1 || batches > events)
            throw new Error(`${projection}: ${events} events in ${batches} batches`);
        }
      },
      { timeoutMs: 15_000, intervalMs: 100 },
    );
  });

  test('gauges read at scrape time: backlog, consumer lag per partition and projection lag reach 0 once everything is handled', async () => {
    await h.projections!.caughtUp();
    const samples = await eventually(
      async () => {
        const now = await scrape();
        const lagging = [...now].filter(
          ([name, value]) =>
            /^(pipeline_open_calls|event_log_consumer_lag_records|projection_lag_events)\{/.test(name) && value !== 0,
        );
        if (lagging.length > 0) throw new Error(`still lagging: ${lagging.map(([n, v]) => `${n} ${v}`).join('; ')}`);
        return now;
      },
      { timeoutMs: 15_000, intervalMs: 100 },
    );
    const names = [...samples.keys()];
    for (const partition of ['0', '1', '2']) {
      assert.ok(
        names.some(
          (n) =>
            n.startsWith('event_log_consumer_lag_records{') &&
            n.includes(`partition="${partition}"`) &&
            n.includes(`topic="${h.topics.callsSubmitted}"`),
        ),
        `lag of partition ${partition}`,
      );
    }
    for (const projection of ['call-history', 'deals', 'webhooks', 'call-events-relay'])
      assert.ok(samples.has(key('projection_lag_events', { projection })), `lag of ${projection}`);
    assert.ok(
      names.some((n) => n.startsWith('pipeline_open_calls{')),
      'the backlog gauge is there',
    );
  });
});
