/**
 * One call is one trace from POST to completed (README, Traces): the ingest request, the log
 * append, the processor's intake and steps, the projections and the relay share one trace id. The
 * context crosses the event log in the record's headers and the event store in event metadata, as
 * it would between processes; the SDK's in-memory exporter collects the spans.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { SpanStatusCode } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { messageHeaders, TOPIC_MESSAGES } from '../../../shared/domain/call/topic-messages.ts';
import { installTracing, SpanKind, type Tracing } from '../../../shared/observability/tracing.ts';
import type { AudioSource } from '../../../shared/ports/audio-source.ts';
import { eventually } from '../../support/eventually.ts';
import type { PipelineHarness } from '../../support/pipeline-harness.ts';
import { type EmbeddedPipeline, openEmbeddedPipeline } from '../../support/embedded-pipeline.ts';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/;
const traceIdOf = (traceparent: string | undefined) => TRACEPARENT.exec(traceparent ?? '')?.[1];

describe('traces: one call, one trace', () => {
  const exporter = new InMemorySpanExporter();
  let tracing: Tracing;
  let pipeline: EmbeddedPipeline;
  let h: PipelineHarness;

  before(async () => {
    tracing = await installTracing([new SimpleSpanProcessor(exporter)]);
    pipeline = await openEmbeddedPipeline();
    h = pipeline.h;
  });
  after(async () => {
    await pipeline?.close();
    await tracing.shutdown();
  });

  /** The spans of one trace once `names` are all among them. */
  const spansOf = (traceId: string, names: (string | RegExp)[]) =>
    eventually(
      () => {
        const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
        const missing = names.filter(
          (name) => !spans.some((s) => (typeof name === 'string' ? s.name === name : name.test(s.name))),
        );
        if (missing.length > 0)
          throw new Error(`trace ${traceId} lacks ${missing.join(', ')}; has ${spans.map((s) => s.name).join(', ')}`);
        return spans;
      },
      { timeoutMs: 15_000, intervalMs: 50 },
    );

  const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

  test('ingress, processor and projections spans of one call share its trace id, each a child of the step before', async () => {
    const team = await h.team();
    const accepted = await h.ingest({
      key: team.key,
      body: { transcript: 'Rep: hello\nDana: we will sign by Friday', repName: 'Sam Seller' },
    });
    assert.equal(accepted.statusCode, 201, accepted.body);
    const { callId } = accepted.json<{ callId: string }>();
    await h.callEvents(callId);

    // The record on calls.submitted.v1 carries the trace context, plain and as the CloudEvents extension.
    const record = await h.submitted(callId);
    const traceId = traceIdOf(record.headers.traceparent);
    assert.ok(traceId, `traceparent header on the record: ${JSON.stringify(record.headers)}`);
    assert.equal(record.headers.ce_traceparent, record.headers.traceparent);

    const submitted = h.topics.callsSubmitted;
    const spans = await spansOf(traceId, [
      'POST /api/integrations/push-api/ingest',
      `publish ${submitted}`,
      `process ${submitted}`,
      'step start',
      'step analyse',
      'step complete',
      'project call-history',
      'project deals',
      `publish ${h.topics.callEvents}`,
    ]);
    const byName = (name: string) => spans.find((s) => s.name === name)!;
    const request = byName('POST /api/integrations/push-api/ingest');
    const publish = byName(`publish ${submitted}`);
    const intake = byName(`process ${submitted}`);
    assert.equal(parentOf(publish), request.spanContext().spanId, 'the append is part of the request');
    assert.equal(
      parentOf(intake),
      publish.spanContext().spanId,
      'the intake continues from the record the ingress wrote',
    );
    for (const step of spans.filter((s) => s.name.startsWith('step '))) {
      assert.equal(
        parentOf(step),
        intake.spanContext().spanId,
        `${step.name} follows the intake (context from the call's first event)`,
      );
      assert.equal(step.attributes['call.id'], callId);
    }
    const completeStep = byName('step complete');
    const projected = spans.filter(
      (s) => s.name === 'project call-history' && s.attributes['event.type'] === 'CallCompleted',
    );
    assert.equal(projected.length, 1, 'the history projection of CallCompleted is in the trace');
    assert.equal(
      parentOf(projected[0]!),
      completeStep.spanContext().spanId,
      'projecting CallCompleted is a child of the step that appended it',
    );
    assert.ok(spans.every((s) => s.spanContext().traceId === traceId));

    // Downstream systems continue the trace from calls.events.v1.
    const relayed = await eventually(
      async () => {
        const records = (await h.eventLog.read(h.topics.callEvents, { limit: 10_000 })).filter((r) => r.key === callId);
        if (!records.some((r) => r.headers.ce_type === 'call.completed'))
          throw new Error('call.completed not relayed yet');
        return records;
      },
      { timeoutMs: 15_000 },
    );
    for (const r of relayed)
      assert.equal(traceIdOf(r.headers.ce_traceparent), traceId, `${r.headers.ce_type} carries the call's trace`);
    // Each record names its own publish span, a producer, so a consumer's span is that span's child.
    const publishes = (await spansOf(traceId, [`publish ${h.topics.callEvents}`])).filter(
      (s) => s.name === `publish ${h.topics.callEvents}`,
    );
    for (const r of relayed) {
      const spanId = r.headers.traceparent?.split('-')[2];
      const own = publishes.find((s) => s.spanContext().spanId === spanId);
      assert.ok(own, `${r.headers.ce_type}'s traceparent names a publish span of its own`);
      assert.equal(own.kind, SpanKind.PRODUCER, 'the relay publishes as a producer');
      assert.equal(r.headers.ce_traceparent, r.headers.traceparent);
    }
  });

  test("a caller's traceparent makes the call part of the caller's trace", async () => {
    const team = await h.team();
    const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const accepted = await h.ingest({
      key: team.key,
      body: { transcript: 'Rep: hi\nDana: hello' },
      headers: { traceparent: `00-${callerTrace}-00f067aa0ba902b7-01` },
    });
    assert.equal(accepted.statusCode, 201, accepted.body);
    await h.callEvents(accepted.json<{ callId: string }>().callId);
    const spans = await spansOf(callerTrace, ['POST /api/integrations/push-api/ingest', 'step complete']);
    assert.equal(
      spans.find((s) => s.name === 'POST /api/integrations/push-api/ingest')!.parentSpanContext?.spanId,
      '00f067aa0ba902b7',
    );
  });

  test("a refused request's span is not failed: a 4xx is the caller's mistake (OpenTelemetry's HTTP conventions)", async () => {
    const team = await h.team();
    const callerTrace = '5cf92f3577b34da6a3ce929d0e0e4737';
    const refused = await h.ingest({
      key: team.key,
      body: { transcript: 'Rep: hi', callTitle: 42 },
      headers: { traceparent: `00-${callerTrace}-00f067aa0ba902b8-01` },
    });
    assert.equal(refused.statusCode, 400, refused.body);
    const [span] = await spansOf(callerTrace, ['POST /api/integrations/push-api/ingest']);
    assert.equal(span!.status.code, SpanStatusCode.UNSET, JSON.stringify(span!.status));
    assert.deepEqual(span!.events, [], 'no exception recorded');
  });

  test("each topic's messages carry the trace context exactly where the served index says they do", async () => {
    const team = await h.team();
    const accepted = await h.ingest({
      key: team.key,
      body: { transcript: 'Rep: hello\nDana: we will sign by Friday', dealSize: 1200 },
      headers: { traceparent: '00-6cf92f3577b34da6a3ce929d0e0e4738-00f067aa0ba902b9-01' },
    });
    assert.equal(accepted.statusCode, 201, accepted.body);
    const { callId } = accepted.json<{ callId: string }>();
    for (const [name, topic] of Object.entries(h.topics) as [keyof typeof TOPIC_MESSAGES, string][]) {
      if (name === 'deadLetter') continue;
      const records = await eventually(
        async () => {
          const found = (await h.eventLog.read(topic, { limit: 10_000 })).filter((r) => r.key === callId);
          assert.ok(found.length > 0, `${topic} has the call's messages`);
          return found;
        },
        { timeoutMs: 15_000 },
      );
      const documented = 'traceparent' in messageHeaders(TOPIC_MESSAGES[name]);
      for (const record of records)
        assert.equal(
          record.headers.traceparent !== undefined,
          documented,
          `${topic} ${record.headers.ce_type}: traceparent ${documented ? 'documented but missing' : 'sent but not documented'}`,
        );
    }
  });

  test('two calls are two traces', async () => {
    const team = await h.team();
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const accepted = await h.ingest({ key: team.key, body: { transcript: `Rep: call ${i}\nDana: ok` } });
      ids.push(accepted.json<{ callId: string }>().callId);
    }
    const traces = await Promise.all(ids.map(async (id) => traceIdOf((await h.submitted(id)).headers.traceparent)));
    assert.ok(traces[0] && traces[1]);
    assert.notEqual(traces[0], traces[1]);
  });
});

describe('traces: a call that times out', () => {
  const exporter = new InMemorySpanExporter();
  let tracing: Tracing;
  let pipeline: EmbeddedPipeline;

  /** A recording whose download never ends until the actor is stopped: the deadline ends the call. */
  const hanging: AudioSource = {
    fetch: (_url, options) =>
      new Promise((_resolve, reject) =>
        options?.signal?.addEventListener('abort', () => reject(options.signal!.reason), { once: true }),
      ),
  };

  before(async () => {
    tracing = await installTracing([new SimpleSpanProcessor(exporter)]);
    pipeline = await openEmbeddedPipeline({ processingTimeoutMs: 500, audio: hanging });
  });
  after(async () => {
    await pipeline?.close();
    await tracing.shutdown();
  });

  test("the timeout is a span of the call's trace, and its CallFailed carries the trace on", async () => {
    const { h } = pipeline;
    const team = await h.team();
    const accepted = await h.ingest({ key: team.key, body: { audioUrl: 'https://example.com/hangs.wav' } });
    assert.equal(accepted.statusCode, 201, accepted.body);
    const { callId } = accepted.json<{ callId: string }>();
    const events = await h.callEvents(callId);
    const failed = events.find((e) => e.type === 'CallFailed');
    assert.ok(failed, `the call failed: ${events.map((e) => e.type).join(', ')}`);
    const traceId = traceIdOf((await h.submitted(callId)).headers.traceparent);
    assert.ok(traceId);
    assert.equal(
      traceIdOf(failed.metadata?.traceparent as string | undefined),
      traceId,
      'CallFailed continues the trace',
    );
    const timeOut = await eventually(
      () => {
        const span = exporter
          .getFinishedSpans()
          .find((s) => s.name === 'time out' && s.attributes['call.id'] === callId);
        assert.ok(span, 'a time out span for the call');
        return span;
      },
      { timeoutMs: 10_000, intervalMs: 50 },
    );
    assert.equal(timeOut.spanContext().traceId, traceId);
  });
});
