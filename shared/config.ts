/**
 * The service configuration: read from the environment once, validated, frozen.
 * Nothing else in the code base reads `process.env`.
 */
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { openAiEndpoint } from './adapters/openai-compatible.ts';
import { ConfigError, invalidField, invalidVariable } from './config-error.ts';

export { ConfigError };

const Integer = (description: string, minimum = 0) => Type.Integer({ description, minimum });
/** Milliseconds a timer waits: at most what Node.js timers hold (2^31 − 1 ms, about 24.8 days). */
const Millis = (description: string, minimum = 0) => Type.Integer({ description, minimum, maximum: 2_147_483_647 });
const Port = (description: string) => Type.Integer({ description, minimum: 0, maximum: 65_535 });
/**
 * A token sent in an `Authorization: Bearer` header: printable ASCII, no space. HTTP carries header
 * values as Latin-1 bytes, so a token with other characters (or a space) could never be sent as it
 * is configured, and every request would be refused.
 */
const BearerToken = (description: string) =>
  Type.String({
    description,
    minLength: 32,
    pattern: '^[\\x21-\\x7E]{32,}$',
    expected: 'at least 32 printable ASCII characters, no spaces (it is sent in an HTTP header)',
  });

export const ConfigSchema = Type.Object({
  /** HTTP port. */
  port: Port('PORT: HTTP port (default 3000)'),
  /** Port of /healthz and /readyz for the standalone processor and projections; unset: none. */
  healthPort: Type.Optional(
    Port(
      'HEALTH_PORT: port of /healthz and /readyz of a standalone processor or projections process (default: not served)',
    ),
  ),
  readyRetryThresholdMs: Millis(
    'READY_RETRY_THRESHOLD_MS: how long a part may retry an unavailable backend before /readyz answers 503 (default 30000)',
    1,
  ),
  /** HTTP bind address. */
  host: Type.String({ description: 'HOST: bind address (default 127.0.0.1)', minLength: 1 }),
  /** Embedded database directory (default backend). */
  dataDir: Type.String({ description: 'DATA_DIR: embedded database directory (default ./data)', minLength: 1 }),
  /** Bearer token of the admin API; generated into DATA_DIR/admin-token when unset on the embedded default. */
  adminToken: Type.Optional(BearerToken('ADMIN_TOKEN: bearer token of the admin API (at least 32 characters)')),
  /** OTLP/HTTP collector of traces (its base URL); unset: tracing is off. */
  otelExporterOtlpEndpoint: Type.Optional(
    Type.String({
      description:
        'OTEL_EXPORTER_OTLP_ENDPOINT: OTLP/HTTP collector base URL, e.g. http://127.0.0.1:4318 (default: traces off)',
      pattern: '^https?://',
      expected: 'an http:// or https:// URL such as http://127.0.0.1:4318',
    }),
  ),
  /** The service name on this process's spans. */
  otelServiceName: Type.Optional(
    Type.String({
      description: 'OTEL_SERVICE_NAME: service name on spans (default call-ingestion-<process>)',
      minLength: 1,
    }),
  ),
  /** A bearer token for GET /metrics only, so a scraper need not hold the admin token. */
  metricsToken: Type.Optional(
    BearerToken(
      'METRICS_TOKEN: bearer token of GET /metrics on every process, besides the admin token (at least 32 characters)',
    ),
  ),
  /** Secret of the keyed hash under which API keys are stored; generated into DATA_DIR/api-key-secret when unset on the embedded default. */
  apiKeySecret: Type.Optional(
    Type.String({
      description: 'API_KEY_SECRET: secret of the keyed hash of API keys (at least 32 characters)',
      minLength: 32,
    }),
  ),
  /** Secret the per-call data keys are wrapped under; generated into DATA_DIR/data-key-secret when unset on the embedded default. */
  dataKeySecret: Type.Optional(
    Type.String({
      description:
        'DATA_KEY_SECRET: secret wrapping the per-call data keys that encrypt personal fields (at least 32 characters)',
      minLength: 32,
    }),
  ),
  /** SQL event log: records below every group's committed offset are deleted after this many hours. */
  logRetentionHours: Integer(
    'LOG_RETENTION_HOURS: hours a record of the SQL event log is kept once every consumer group is past it (default 168); dead letters are never deleted by age',
    1,
  ),
  /** A call still pending this long after submission fails with `processing_timeout`. */
  processingTimeoutMs: Millis('PROCESSING_TIMEOUT_MS: processing deadline per call (default 3600000 = 60 min)', 1),
  /** PostgreSQL server for the event store (and the event log when Kafka is not configured). */
  databaseUrl: Type.Optional(
    Type.String({
      description: 'DATABASE_URL: postgres://… — event store on PostgreSQL',
      pattern: '^postgres(ql)?://',
      expected: 'a PostgreSQL connection URL, postgres://user:password@host:5432/database (or postgresql://…)',
    }),
  ),
  /** A statement on PostgreSQL not answered within this time fails (503 for a request; retried by the pipeline). */
  databaseQueryTimeoutMs: Millis(
    'DATABASE_QUERY_TIMEOUT_MS: deadline of one statement on PostgreSQL before it fails as unavailable (default 30000)',
    1,
  ),
  /** KurrentDB server for the event store (the event log and the read models stay where they are). */
  kurrentDbUrl: Type.Optional(
    Type.String({
      description: 'KURRENTDB_URL: kurrentdb://… — event store on KurrentDB',
      pattern: '^(kurrentdb|esdb|kdb)(\\+discover)?://',
      expected: 'a KurrentDB connection string, kurrentdb://host:2113?tls=false (or kurrentdb+discover://…)',
    }),
  ),
  /** Schema holding the service's PostgreSQL tables. */
  databaseSchema: Type.String({
    description: 'DATABASE_SCHEMA: PostgreSQL schema (default public)',
    pattern: '^[a-z_][a-z0-9_]{0,62}$',
    expected: 'a schema name of at most 63 lower-case letters, digits and _, not starting with a digit',
  }),
  /** Kafka bootstrap brokers, comma-separated. */
  kafkaBrokers: Type.Array(Type.String({ pattern: '^(\\[[0-9A-Fa-f:.]+\\]|[^\\s:,\\[\\]]+):[0-9]{1,5}$' }), {
    description: 'KAFKA_BROKERS: host:port,… — event log on Apache Kafka',
    expected: 'host:port entries, comma-separated, none blank (kafka-1:9092,kafka-2:9092)',
  }),
  /** API keys are answered 503 when this process has not read team events for this long. */
  keyDirectoryMaxLagMs: Millis(
    'KEY_DIRECTORY_MAX_LAG_MS: how stale the API key directory may be before keys are answered 503 (default 10000)',
    1,
  ),
  /** A capacity reservation whose call never reached the pipeline is released after this long. */
  orphanReservationMs: Millis(
    'ORPHAN_RESERVATION_MS: age after which a capacity reservation with no call is released (default 900000 = 15 min)',
    1,
  ),
  /** A publish to Kafka not confirmed within this time answers 503 (the call may have been written). */
  kafkaPublishTimeoutMs: Millis(
    'KAFKA_PUBLISH_TIMEOUT_MS: deadline of one publish to Kafka before ingest answers 503 (default 10000)',
    1,
  ),
  /** Partitions of each topic the service creates. */
  topicPartitions: Type.Integer({
    description: 'TOPIC_PARTITIONS: partitions per created topic (default 6)',
    minimum: 1,
    maximum: 1_000,
  }),
  /** Prefix of every topic name, so several deployments can share one Kafka cluster. */
  topicPrefix: Type.String({
    description: 'TOPIC_PREFIX: prefix of every topic name (default none)',
    pattern: '^[A-Za-z0-9._-]{0,100}$',
    expected: 'at most 100 letters, digits, ., _ and -',
  }),
  /** Redis for rate-limit counters shared by every ingress process. */
  redisUrl: Type.Optional(
    Type.String({
      description: 'REDIS_URL: redis://… — shared rate limits',
      pattern: '^rediss?://',
      expected: 'a Redis URL, redis://host:6379 (or rediss:// for TLS)',
    }),
  ),
  /** Read by `npm start` (node --max-old-space-size); checked here, since node only warns of a bad one and runs uncapped. */
  heapMaxMb: Type.Optional(
    Type.Integer({
      description: 'HEAP_MAX_MB: cap of the JavaScript heap in MB, read by npm start (default 256)',
      minimum: 64,
      maximum: 1_048_576,
    }),
  ),
  /** Base URL of a running service, for the admin CLI. */
  apiUrl: Type.String({
    description: 'API_URL: base URL the admin CLI talks to (default http://HOST:PORT)',
    minLength: 1,
  }),
  /** OpenAI-compatible transcription endpoint (base URL); the local engine is used when unset. */
  transcribeUrl: Type.Optional(
    Type.String({
      description: 'TRANSCRIBE_URL: base URL of an OpenAI-compatible /v1/audio/transcriptions endpoint',
      minLength: 1,
    }),
  ),
  transcribeApiKey: Type.Optional(
    Type.String({ description: 'TRANSCRIBE_API_KEY: bearer key of the transcription endpoint', minLength: 1 }),
  ),
  transcribeModel: Type.String({
    description: 'TRANSCRIBE_MODEL: model name sent to the transcription endpoint (default whisper-1)',
    minLength: 1,
  }),
  /** OpenAI-compatible chat endpoint for analysis; the built-in analyser is used when unset. */
  analyseUrl: Type.Optional(
    Type.String({
      description: 'ANALYSE_URL: base URL of an OpenAI-compatible /v1/chat/completions endpoint',
      minLength: 1,
    }),
  ),
  analyseApiKey: Type.Optional(
    Type.String({ description: 'ANALYSE_API_KEY: bearer key of the analysis endpoint', minLength: 1 }),
  ),
  analyseModel: Type.String({
    description: 'ANALYSE_MODEL: model name sent to the analysis endpoint (default gpt-4o-mini)',
    minLength: 1,
  }),
  /** Lifts the private-address check of audio downloads (local development and tests only). */
  audioFetchAllowPrivate: Type.Boolean({
    description: 'AUDIO_FETCH_ALLOW_PRIVATE: true lets audioUrl point at private/loopback addresses (development only)',
  }),
  audioMaxBytes: Integer('AUDIO_MAX_BYTES: largest recording downloaded (default 524288000 = 500 MiB)', 1),
  audioFetchTimeoutMs: Millis(
    'AUDIO_FETCH_TIMEOUT_MS: deadline of one recording download (default 600000 = 10 min)',
    1,
  ),
  /** Time one call may spend downloading its recording over all attempts; keep it well under PROCESSING_TIMEOUT_MS. */
  audioFetchBudgetMs: Millis(
    'AUDIO_FETCH_BUDGET_MS: time one call may spend downloading its recording over all attempts (default 900000 = 15 min)',
    1,
  ),
  /** Ports an audioUrl (or a redirect) may name. */
  audioAllowedPorts: Type.Array(Type.Integer({ minimum: 1, maximum: 65_535 }), {
    description: 'AUDIO_ALLOWED_PORTS: ports an audioUrl may use, comma-separated (default 80,443)',
    minItems: 1,
  }),
  /** Longest recording transcribed; longer ones fail with audio_too_long before they are decoded. */
  audioMaxSeconds: Integer('AUDIO_MAX_SECONDS: longest recording transcribed, in seconds (default 14400 = 4 h)', 1),
  /** Pause before each retry of a webhook delivery (ms); after the last the delivery is failed. */
  // Each pause at most 30 days: a longer one (200000000d) made the next attempt's date NaN.
  webhookRetryScheduleMs: Type.Array(Type.Integer({ minimum: 1, maximum: 30 * 86_400_000 }), {
    description:
      'WEBHOOK_RETRY_SCHEDULE: pauses before each retry of a webhook delivery, comma-separated durations like 500ms, 5s, 2m, 1h (default 5s,30s,2m,10m,30m,1h,3h,6h,12h,24h)',
    expected:
      'a comma-separated list of durations such as 5s,1m,10m: each a whole number of ms, s, m, h or d, from 1 ms to 30d',
  }),
  /** Lifts the address policy of webhook deliveries (local development and tests only). */
  webhookAllowPrivate: Type.Boolean({
    description: 'WEBHOOK_ALLOW_PRIVATE: true lets webhook URLs point at private/loopback addresses (development only)',
  }),
  processorConcurrency: Integer('PROCESSOR_CONCURRENCY: calls processed at once per process (default 16)', 1),
  transcribeConcurrency: Integer('TRANSCRIBE_CONCURRENCY: transcriptions at once per process (default 1)', 1),
  /** Log level of the service's structured logs. */
  logLevel: Type.Union(
    ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
    {
      description: 'LOG_LEVEL (default info)',
    },
  ),
});

export type Config = Readonly<Static<typeof ConfigSchema>>;

type Env = Record<string, string | undefined>;

/**
 * The number a variable holds, written in decimal digits (blanks around them allowed); anything else
 * (`0x50`, `1e3`, ` `) is NaN, which the schema refuses, naming the text.
 */
const integer = (env: Env, name: string, fallback: number): number => {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  return /^\s*[0-9]+\s*$/.test(raw) ? Number(raw) : Number.NaN;
};

const boolean = (env: Env, name: string, fallback: boolean): boolean => {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (['true', '1', 'yes'].includes(raw)) return true;
  if (['false', '0', 'no'].includes(raw)) return false;
  throw invalidVariable(name, env[name], 'true or false (or 1 and 0, yes and no)');
};

const optional = (env: Env, name: string): string | undefined => {
  const raw = env[name]?.trim();
  return raw ? raw : undefined;
};

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
/** `5s,30s,2m` as milliseconds; a malformed entry becomes NaN, which the schema refuses. */
const durations = (text: string): number[] =>
  text.split(',').map((part) => {
    const match = /^\s*([0-9]+)\s*(ms|s|m|h|d)\s*$/.exec(part);
    return match ? Number(match[1]) * DURATION_UNITS[match[2]!]! : Number.NaN;
  });

/**
 * The host as a URL holds it: an IPv6 literal in brackets, and a wildcard bind address (every
 * interface) as the loopback address a client on this host reaches it by.
 */
const hostOfUrl = (host: string): string => {
  if (host === '0.0.0.0') return '127.0.0.1';
  if (host === '::' || host === '[::]') return '[::1]';
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
};

/** Builds the configuration from an environment (default `process.env`); throws ConfigError naming the variable. */
export const loadConfig = (env: Env = process.env): Config => {
  const config = {
    port: integer(env, 'PORT', 3000),
    healthPort: optional(env, 'HEALTH_PORT') === undefined ? undefined : integer(env, 'HEALTH_PORT', 0),
    readyRetryThresholdMs: integer(env, 'READY_RETRY_THRESHOLD_MS', 30_000),
    host: optional(env, 'HOST') ?? '127.0.0.1',
    dataDir: optional(env, 'DATA_DIR') ?? './data',
    adminToken: optional(env, 'ADMIN_TOKEN'),
    apiKeySecret: optional(env, 'API_KEY_SECRET'),
    dataKeySecret: optional(env, 'DATA_KEY_SECRET'),
    logRetentionHours: integer(env, 'LOG_RETENTION_HOURS', 168),
    metricsToken: optional(env, 'METRICS_TOKEN'),
    otelExporterOtlpEndpoint: optional(env, 'OTEL_EXPORTER_OTLP_ENDPOINT'),
    otelServiceName: optional(env, 'OTEL_SERVICE_NAME'),
    processingTimeoutMs: integer(env, 'PROCESSING_TIMEOUT_MS', 60 * 60 * 1000),
    databaseUrl: optional(env, 'DATABASE_URL'),
    databaseSchema: optional(env, 'DATABASE_SCHEMA') ?? 'public',
    databaseQueryTimeoutMs: integer(env, 'DATABASE_QUERY_TIMEOUT_MS', 30_000),
    kurrentDbUrl: optional(env, 'KURRENTDB_URL'),
    // Unset or blank: no Kafka. Set: every entry must be one (a blank entry is refused, not dropped).
    kafkaBrokers:
      optional(env, 'KAFKA_BROKERS') === undefined ? [] : env.KAFKA_BROKERS!.split(',').map((b) => b.trim()),
    orphanReservationMs: integer(env, 'ORPHAN_RESERVATION_MS', 15 * 60_000),
    keyDirectoryMaxLagMs: integer(env, 'KEY_DIRECTORY_MAX_LAG_MS', 10_000),
    kafkaPublishTimeoutMs: integer(env, 'KAFKA_PUBLISH_TIMEOUT_MS', 10_000),
    topicPartitions: integer(env, 'TOPIC_PARTITIONS', 6),
    topicPrefix: optional(env, 'TOPIC_PREFIX') ?? '',
    redisUrl: optional(env, 'REDIS_URL'),
    heapMaxMb: optional(env, 'HEAP_MAX_MB') === undefined ? undefined : integer(env, 'HEAP_MAX_MB', 256),
    logLevel: optional(env, 'LOG_LEVEL') ?? 'info',
    transcribeUrl: optional(env, 'TRANSCRIBE_URL'),
    transcribeApiKey: optional(env, 'TRANSCRIBE_API_KEY'),
    transcribeModel: optional(env, 'TRANSCRIBE_MODEL') ?? 'whisper-1',
    analyseUrl: optional(env, 'ANALYSE_URL'),
    analyseApiKey: optional(env, 'ANALYSE_API_KEY'),
    analyseModel: optional(env, 'ANALYSE_MODEL') ?? 'gpt-4o-mini',
    audioFetchAllowPrivate: boolean(env, 'AUDIO_FETCH_ALLOW_PRIVATE', false),
    audioMaxBytes: integer(env, 'AUDIO_MAX_BYTES', 500 * 1024 * 1024),
    audioFetchTimeoutMs: integer(env, 'AUDIO_FETCH_TIMEOUT_MS', 10 * 60 * 1000),
    audioFetchBudgetMs: integer(env, 'AUDIO_FETCH_BUDGET_MS', 15 * 60 * 1000),
    audioAllowedPorts: (optional(env, 'AUDIO_ALLOWED_PORTS') ?? '80,443')
      .split(',')
      .map((port) => Number(port.trim() || Number.NaN)),
    audioMaxSeconds: integer(env, 'AUDIO_MAX_SECONDS', 4 * 3600),
    webhookRetryScheduleMs: durations(optional(env, 'WEBHOOK_RETRY_SCHEDULE') ?? '5s,30s,2m,10m,30m,1h,3h,6h,12h,24h'),
    webhookAllowPrivate: boolean(env, 'WEBHOOK_ALLOW_PRIVATE', false),
    processorConcurrency: integer(env, 'PROCESSOR_CONCURRENCY', 16),
    transcribeConcurrency: integer(env, 'TRANSCRIBE_CONCURRENCY', 1),
    apiUrl: '',
  };
  config.apiUrl = (optional(env, 'API_URL') ?? `http://${hostOfUrl(config.host)}:${config.port}`).replace(/\/+$/, '');
  for (const key of Object.keys(config) as (keyof typeof config)[]) if (config[key] === undefined) delete config[key];
  const error = Value.Errors(ConfigSchema, config).First();
  if (error) {
    // The text the variable held, not the value parsed from it (a malformed duration is NaN, shown as null).
    throw invalidField((ConfigSchema.properties as Record<string, TSchema>)[error.path.split('/')[1] ?? '']!, env);
  }
  if (config.databaseUrl !== undefined) {
    try {
      new URL(config.databaseUrl);
    } catch {
      throw invalidVariable(
        'DATABASE_URL',
        env.DATABASE_URL,
        'a PostgreSQL connection URL, postgres://user:password@host:5432/database',
        'it does not parse as a URL',
      );
    }
  }
  // The same rule the adapters apply, at start rather than at the first call (a blocked port fails every call).
  for (const [variable, url, what, path] of [
    ['TRANSCRIBE_URL', config.transcribeUrl, 'transcription', 'audio/transcriptions'],
    ['ANALYSE_URL', config.analyseUrl, 'analysis', 'chat/completions'],
  ] as const) {
    if (url === undefined) continue;
    try {
      openAiEndpoint(url, path, what);
    } catch (refusal) {
      throw invalidVariable(
        variable,
        env[variable],
        `the http(s) base URL of an OpenAI-compatible /v1/${path} endpoint`,
        (refusal as Error).message,
      );
    }
  }
  return Object.freeze(config);
};

/**
 * For a service run as a process of its own (`services/ingress/main.ts` and the like): on shared
 * backends (Kafka, KurrentDB) its data keys must be where every process reads them, in PostgreSQL.
 * Without DATABASE_URL each process keeps them in its own DATA_DIR, and no other process could
 * open a call's personal fields: a processor would read every call as erased and skip it. On the
 * embedded backends alone a process shares nothing, which is consistent (the benches run the
 * ingress so).
 */
export const assertSeparateProcessLayout = (config: Config, service: string): void => {
  if (config.databaseUrl || (config.kafkaBrokers.length === 0 && !config.kurrentDbUrl)) return;
  throw new ConfigError(
    `invalid configuration: the ${service} runs as a process of its own on shared backends (${config.kafkaBrokers.length > 0 ? 'KAFKA_BROKERS' : 'KURRENTDB_URL'}) but DATABASE_URL is unset, so it would keep the calls' data keys in its own DATA_DIR where no other process can read them; set DATABASE_URL, or run every service in one process (npm start)`,
  );
};
