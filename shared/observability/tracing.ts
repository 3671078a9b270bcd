/**
 * OpenTelemetry traces (README, Traces). Off unless OTEL_EXPORTER_OTLP_ENDPOINT is set: without a
 * registered provider the API hands out no-op spans and the helpers below cost next to nothing.
 *
 * One call is one trace across processes: the ingest request's context travels in the W3C
 * `traceparent` of the calls.submitted.v1 record (as a plain header and as the CloudEvents
 * distributed-tracing extension `ce_traceparent`); the processor stores it in the metadata of every
 * event it appends to the call's stream, where the projections and the call-events relay find it.
 */
import {
  type Attributes,
  type Context,
  context,
  INVALID_SPAN_CONTEXT,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from '@opentelemetry/api';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';

export { SpanKind };

const TRACER = 'call-ingestion-service';
let enabled = false;

/** Whether a tracer provider is installed (the processor reads a call's trace context only then). */
export const tracingEnabled = (): boolean => enabled;

export interface Tracing {
  /** Exports what is buffered and stops. */
  shutdown(): Promise<void>;
}

/**
 * Installs a provider with these span processors as the process's global one. The SDK is loaded
 * here, not with this module: a process that does not trace (the default) never loads it, which
 * keeps about 9 MB of resident memory free at rest (docs/performance.md, "Memory").
 */
export const installTracing = async (spanProcessors: SpanProcessor[], serviceName = TRACER): Promise<Tracing> => {
  const [
    { AsyncLocalStorageContextManager },
    { W3CTraceContextPropagator },
    { resourceFromAttributes },
    { BasicTracerProvider },
    { ATTR_SERVICE_NAME },
  ] = await Promise.all([
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/semantic-conventions'),
  ]);
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: serviceName }),
    spanProcessors,
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  enabled = true;
  return {
    async shutdown() {
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
      enabled = false;
    },
  };
};

/**
 * Exports spans over OTLP/HTTP to `endpoint` (the collector's base URL, `/v1/traces` is added). The
 * exporter is loaded here, so that a process without an endpoint never loads it.
 */
export const startTracing = async (endpoint: string, serviceName: string): Promise<Tracing> => {
  const [{ OTLPTraceExporter }, { BatchSpanProcessor }] = await Promise.all([
    import('@opentelemetry/exporter-trace-otlp-http'),
    import('@opentelemetry/sdk-trace-base'),
  ]);
  return installTracing(
    [new BatchSpanProcessor(new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, '')}/v1/traces` }))],
    serviceName,
  );
};

const tracer = () => trace.getTracer(TRACER);

/** The W3C trace context of `ctx` (default: the active one) as headers: `traceparent`, maybe `tracestate`. */
export const traceHeaders = (ctx: Context = context.active()): Record<string, string> => {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
};

/** The context a carrier (HTTP headers, record headers, event metadata) names; the root context otherwise. */
export const traceContextFrom = (carrier: Record<string, unknown> | undefined): Context => {
  if (!carrier) return ROOT_CONTEXT;
  const traceparent = carrier.traceparent ?? carrier.ce_traceparent;
  if (typeof traceparent !== 'string') return ROOT_CONTEXT;
  const tracestate = carrier.tracestate ?? carrier.ce_tracestate;
  return propagation.extract(ROOT_CONTEXT, { traceparent, ...(typeof tracestate === 'string' ? { tracestate } : {}) });
};

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** Parent context; default the active one. */
  parent?: Context;
  /**
   * Whether an error thrown by the work is the span's failure (status ERROR); default: every error.
   * A server span answering a client's mistake (a 4xx) is not failed: OpenTelemetry's HTTP
   * conventions leave its status unset, so error rates count the server's failures only.
   */
  failed?: (error: unknown) => boolean;
}

/**
 * Runs `work` inside a new active span and ends it; an error thrown is recorded on the span (status
 * ERROR, unless `options.failed` says it is not the span's failure) and thrown on.
 */
export const inSpan = async <T>(name: string, options: SpanOptions, work: (span: Span) => Promise<T>): Promise<T> => {
  if (!enabled) return work(trace.wrapSpanContext(INVALID_SPAN_CONTEXT));
  const parent = options.parent ?? context.active();
  return tracer().startActiveSpan(
    name,
    { kind: options.kind ?? SpanKind.INTERNAL, attributes: options.attributes },
    parent,
    async (span) => {
      try {
        return await work(span);
      } catch (error) {
        if (options.failed?.(error) ?? true) {
          span.recordException(error as Error);
          span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
        }
        throw error;
      } finally {
        span.end();
      }
    },
  );
};

/**
 * Runs `work` (which handles a batch of items) under one span per item that carries a trace
 * context, each a child of its own item's trace: a batch of events from many calls shows in each
 * call's trace. `work` is given each item's trace headers (its span's context; none with tracing
 * off, or for an item without a trace), for records it sends on: a producer's records name their
 * publish span, so a consumer's span is its child. `kind` defaults to CONSUMER.
 */
export const inSpansPerItem = async <I, T>(
  name: string,
  items: readonly I[],
  carrierOf: (item: I) => Record<string, unknown> | undefined,
  attributesOf: (item: I) => Attributes,
  work: (headersOf: (item: I) => Record<string, string>) => Promise<T>,
  kind: SpanKind = SpanKind.CONSUMER,
): Promise<T> => {
  if (!enabled) return work(() => ({}));
  const spans = new Map<I, Span>();
  for (const item of items) {
    const parent = traceContextFrom(carrierOf(item));
    if (trace.getSpanContext(parent))
      spans.set(item, tracer().startSpan(name, { kind, attributes: attributesOf(item) }, parent));
  }
  const headersOf = (item: I) => {
    const span = spans.get(item);
    return span ? traceHeaders(trace.setSpan(ROOT_CONTEXT, span)) : {};
  };
  try {
    return await work(headersOf);
  } catch (error) {
    for (const span of spans.values())
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
    throw error;
  } finally {
    for (const span of spans.values()) span.end();
  }
};
