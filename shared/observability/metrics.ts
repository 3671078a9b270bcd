/**
 * The process's Prometheus metrics, in one registry (README, Metrics). Adapters and services
 * record into these instruments; `GET /metrics` renders the registry in the text format.
 *
 * Names follow Prometheus conventions: base units (`_seconds`, `_bytes`), `_total` for counters.
 * Gauges that describe live parts (open calls, consumer lag, projection lag) are read at scrape
 * time from the sources those parts register, so a part that stops also stops being reported.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { CallEvent } from '../domain/call/call-events.ts';
import { sharedReads, withinDeadline } from '../bounded-reads.ts';

export const registry = new Registry();
collectDefaultMetrics({ register: registry });

/** Latency buckets for HTTP answers and appends: 0.5 ms to 10 s. */
const FAST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Items or events handled together in one go: 1 to 1,000, in powers of two. */
const COUNT_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000];
/** Pipeline steps run from milliseconds (the built-in analyser) to many minutes (long recordings). */
const STEP_BUCKETS = [0.001, 0.005, 0.025, 0.1, 0.25, 1, 2.5, 10, 30, 60, 180, 600, 1800];

export const httpRequests = new Counter({
  name: 'http_requests_total',
  help: 'HTTP requests answered, by method, route pattern and status.',
  labelNames: ['method', 'route', 'status'] as const,
  registers: [registry],
});

export const httpRequestDuration = new Histogram({
  name: 'http_request_duration_seconds',
  help: 'Time from a request arriving to its answer being sent, by method, route pattern and status.',
  labelNames: ['method', 'route', 'status'] as const,
  buckets: FAST_BUCKETS,
  registers: [registry],
});

export const ingestAnswers = new Counter({
  name: 'ingest_responses_total',
  help: 'Answers of the ingest endpoint by status and code (ACCEPTED for a 201, REPLAYED for an idempotent replay, else the problem code).',
  labelNames: ['status', 'code'] as const,
  registers: [registry],
});

export const dealOutcomesLeftOut = new Counter({
  name: 'deal_outcomes_left_out_total',
  help: 'deal.outcome.updated messages left out of deals.outcome-updated.v1 because the log refused them on their own (logged, each).',
  registers: [registry],
});

export const relayedEventsLeftOut = new Counter({
  name: 'call_events_relay_left_out_total',
  help: 'Call events the relay left out of calls.events.v1 because the log refused them on their own (logged, each).',
  registers: [registry],
});

export const rateLimitRefusals = new Counter({
  name: 'rate_limit_refusals_total',
  help: 'Requests refused for a limit, by limit: 429s (ingest, read, admin-auth), and API-key 401s past the per-address failure limit (auth-failure).',
  labelNames: ['limit'] as const,
  registers: [registry],
});

export const capacityRefusals = new Counter({
  name: 'capacity_refusals_total',
  help: "Submissions refused with 402 because the team's live call hours were used up.",
  registers: [registry],
});

export const callsFinished = new Counter({
  name: 'calls_finished_total',
  help: 'Calls that reached a final status (completed, failed), by status and processingError code ("none" when completed).',
  labelNames: ['status', 'processing_error'] as const,
  registers: [registry],
});

export const stepDuration = new Histogram({
  name: 'pipeline_step_duration_seconds',
  help: 'Duration of one attempt of a pipeline step (fetch, transcribe, analyse), by step and outcome (ok, error).',
  labelNames: ['step', 'outcome'] as const,
  buckets: STEP_BUCKETS,
  registers: [registry],
});

export const deadLetters = new Counter({
  name: 'dead_letters_total',
  help: 'Records moved to the dead-letter topic, by the topic they came from.',
  labelNames: ['source_topic'] as const,
  registers: [registry],
});

export const webhookAttempts = new Counter({
  name: 'webhook_attempts_total',
  help: 'Webhook delivery attempts, by outcome: delivered (2xx), retry (will be tried again), failed (retry schedule spent), gone (410: webhook disabled).',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export const appendDuration = new Histogram({
  name: 'event_store_append_duration_seconds',
  help: 'Time an append to the event store takes, from the call to its durable commit (group commit included).',
  labelNames: ['store'] as const,
  buckets: FAST_BUCKETS,
  registers: [registry],
});

export const walSyncDuration = new Histogram({
  name: 'sqlite_wal_sync_duration_seconds',
  help: "One fdatasync of the embedded database's WAL, which every durable 201 waits for: from its start in the thread pool until the event loop takes its result (the disk's time plus the loop's delay).",
  buckets: FAST_BUCKETS,
  registers: [registry],
});

export const walRestartHold = new Histogram({
  name: 'sqlite_wal_restart_hold_seconds',
  help: "Time the embedded database's writes were held while its WAL was started again from its beginning (a RESTART checkpoint, in a worker).",
  buckets: FAST_BUCKETS,
  registers: [registry],
});

export const groupCommitBatchSize = new Histogram({
  name: 'group_commit_batch_size',
  help: 'Items committed together in one transaction (one fsync), by writer.',
  labelNames: ['writer'] as const,
  buckets: COUNT_BUCKETS,
  registers: [registry],
});

export const projectionBatchEvents = new Histogram({
  name: 'projection_batch_events',
  help: 'Events a projection applied in one batch (one transaction), by projection: few per batch means many small writes.',
  labelNames: ['projection'] as const,
  buckets: COUNT_BUCKETS,
  registers: [registry],
});

/** A sample of a gauge read at scrape time. */
export interface GaugeSample {
  labels: Record<string, string | number>;
  value: number;
}
type GaugeSource = () => GaugeSample[] | Promise<GaugeSample[]>;

/**
 * How long a scrape waits for one gauge source (a lag read from the database, say). A backend that
 * stops answering without refusing would otherwise hold /metrics for its whole statement timeout,
 * longer than a scraper waits, and every series of the process would be lost with the scrape.
 */
export const GAUGE_SOURCE_DEADLINE_MS = 2_000;

/** A gauge whose samples come from the parts that registered a source; read at every scrape. */
const sourcedGauge = (name: string, help: string, labelNames: readonly string[]) => {
  const sources = new Set<GaugeSource>();
  /** A source's read still under way: the next scrape waits for it instead of starting another. */
  const read = sharedReads((source: GaugeSource): Promise<GaugeSample[]> =>
    Promise.resolve()
      .then(source)
      .catch(() => []),
  );
  new Gauge({
    name,
    help,
    labelNames,
    registers: [registry],
    async collect() {
      this.reset();
      // A source whose backend fails, or does not answer within the deadline, leaves its series
      // out of this scrape; the sources are read side by side.
      const reads = await Promise.all(
        [...sources].map((source) => withinDeadline(read(source), GAUGE_SOURCE_DEADLINE_MS, () => [])),
      );
      for (const samples of reads) for (const sample of samples) this.set(sample.labels, sample.value);
    },
  });
  return {
    /** Adds a source; returns the function that removes it. */
    register(source: GaugeSource): () => void {
      sources.add(source);
      return () => void sources.delete(source);
    },
  };
};

export const openCallsGauge = sourcedGauge(
  'pipeline_open_calls',
  'Calls accepted and not finished, as the processor of this consumer group sees them (the pipeline backlog).',
  ['group'],
);

export const consumerLagGauge = sourcedGauge(
  'event_log_consumer_lag_records',
  'Records of a topic partition a consumer group has not committed yet (end offset minus committed offset).',
  ['group', 'topic', 'partition'],
);

export const projectionLagGauge = sourcedGauge(
  'projection_lag_events',
  'Events in the event store a projection has not handled yet (head position minus its checkpoint).',
  ['projection'],
);

/** The text exposition of every metric of this process. */
export const renderMetrics = (): Promise<string> => registry.metrics();

export const METRICS_CONTENT_TYPE = registry.contentType;

/** Records how long an append took to commit (or fail); hands the promise back. */
export const timeAppend = <T>(store: string, append: Promise<T>): Promise<T> => {
  const end = appendDuration.startTimer({ store });
  append.then(
    () => end(),
    () => end(),
  );
  return append;
};

/** Runs one attempt of a pipeline step and records its duration and outcome. */
export const timeStep = async <T>(step: 'fetch' | 'transcribe' | 'analyse', work: () => Promise<T>): Promise<T> => {
  const end = stepDuration.startTimer({ step });
  try {
    const result = await work();
    end({ outcome: 'ok' });
    return result;
  } catch (error) {
    end({ outcome: 'error' });
    throw error;
  }
};

/** Counts the calls these newly appended events finished. */
export const countFinishedCalls = (events: readonly CallEvent[]): void => {
  for (const event of events) {
    if (event.type === 'CallCompleted') callsFinished.inc({ status: 'completed', processing_error: 'none' });
    else if (event.type === 'CallFailed') callsFinished.inc({ status: 'failed', processing_error: event.data.code });
  }
};
