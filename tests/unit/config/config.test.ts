import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError, loadConfig } from '../../../shared/config.ts';

test('defaults: embedded backends on 127.0.0.1:3000 with a 60-minute processing timeout', () => {
  const config = loadConfig({});
  assert.equal(config.port, 3000);
  assert.equal(config.host, '127.0.0.1');
  assert.equal(config.dataDir, './data');
  assert.equal(config.processingTimeoutMs, 3_600_000);
  assert.equal(config.databaseUrl, undefined);
  assert.equal(config.databaseQueryTimeoutMs, 30_000);
  assert.deepEqual(config.kafkaBrokers, []);
  assert.equal(config.audioFetchAllowPrivate, false);
  assert.equal(config.apiUrl, 'http://127.0.0.1:3000');
  assert.ok(Object.isFrozen(config));
});

test('variables are read and trimmed; brokers split on commas', () => {
  const config = loadConfig({
    PORT: '8080',
    KAFKA_BROKERS: ' a:9092, b:9092 ',
    DATABASE_URL: 'postgres://x',
    DATABASE_QUERY_TIMEOUT_MS: '5000',
    AUDIO_FETCH_ALLOW_PRIVATE: 'true',
  });
  assert.equal(config.port, 8080);
  assert.deepEqual(config.kafkaBrokers, ['a:9092', 'b:9092']);
  assert.equal(config.databaseUrl, 'postgres://x');
  assert.equal(config.databaseQueryTimeoutMs, 5000);
  assert.equal(config.audioFetchAllowPrivate, true);
});

const rejects = (env: Record<string, string>, variable: string) =>
  assert.throws(
    () => loadConfig(env),
    (error: unknown) => error instanceof ConfigError && error.message.includes(variable),
    variable,
  );

test('a malformed variable fails fast with a message naming it', () => {
  rejects({ PORT: 'eighty' }, 'PORT');
  rejects({ PORT: '-1' }, 'PORT');
  rejects({ PROCESSING_TIMEOUT_MS: '0' }, 'PROCESSING_TIMEOUT_MS');
  rejects({ AUDIO_FETCH_ALLOW_PRIVATE: 'maybe' }, 'AUDIO_FETCH_ALLOW_PRIVATE');
  rejects({ LOG_LEVEL: 'loud' }, 'LOG_LEVEL');
  rejects({ ADMIN_TOKEN: 'short' }, 'ADMIN_TOKEN');
  rejects({ DATABASE_SCHEMA: 'Bad-Name' }, 'DATABASE_SCHEMA');
  rejects({ PORT: '70000' }, 'PORT');
  rejects({ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL');
  rejects({ TRANSCRIBE_URL: 'http://127.0.0.1:6000' }, 'TRANSCRIBE_URL');
  rejects({ ANALYSE_URL: 'ftp://127.0.0.1' }, 'ANALYSE_URL');
});

test('WEBHOOK_RETRY_SCHEDULE: durations in ms, s, m, h or d; the default is the Standard Webhooks schedule; a malformed one is refused', () => {
  assert.deepEqual(loadConfig({}).webhookRetryScheduleMs, [
    5e3,
    30e3,
    120e3,
    600e3,
    1800e3,
    3600e3,
    3 * 3600e3,
    6 * 3600e3,
    12 * 3600e3,
    24 * 3600e3,
  ]);
  assert.deepEqual(
    loadConfig({ WEBHOOK_RETRY_SCHEDULE: '250ms, 2s,1m,1h,1d' }).webhookRetryScheduleMs,
    [250, 2000, 60_000, 3_600_000, 86_400_000],
  );
  assert.equal(loadConfig({}).webhookAllowPrivate, false);
  assert.equal(loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true' }).webhookAllowPrivate, true);
  assert.deepEqual(loadConfig({ WEBHOOK_RETRY_SCHEDULE: '30d' }).webhookRetryScheduleMs, [30 * 86_400_000]);
  for (const schedule of ['5s,,2m', 'soon', '5 seconds', '0s', '-5s', '31d', '200000000d'])
    rejects({ WEBHOOK_RETRY_SCHEDULE: schedule }, 'WEBHOOK_RETRY_SCHEDULE');
  rejects({ WEBHOOK_ALLOW_PRIVATE: 'perhaps' }, 'WEBHOOK_ALLOW_PRIVATE');
});

/** The message a refused environment stops the service with. */
const refusal = (env: Record<string, string>): string => {
  try {
    loadConfig(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.message;
  }
  return assert.fail(`accepted ${JSON.stringify(env)}`);
};

test('a bad value is told with the text the variable held and what it must hold', () => {
  // The text, not the value parsed from it: a malformed duration or port was told as "got null".
  assert.equal(
    refusal({ WEBHOOK_RETRY_SCHEDULE: 'bogus' }),
    'invalid configuration: WEBHOOK_RETRY_SCHEDULE="bogus" is not valid: expected a comma-separated list of durations such as 5s,1m,10m: each a whole number of ms, s, m, h or d, from 1 ms to 30d',
  );
  assert.equal(
    refusal({ AUDIO_ALLOWED_PORTS: '80,abc' }),
    'invalid configuration: AUDIO_ALLOWED_PORTS="80,abc" is not valid: expected a comma-separated list, each a whole number from 1 to 65535',
  );
  assert.equal(
    refusal({ PORT: 'eighty' }),
    'invalid configuration: PORT="eighty" is not valid: expected a whole number from 0 to 65535',
  );
  assert.equal(
    refusal({ LOG_LEVEL: 'loud' }),
    'invalid configuration: LOG_LEVEL="loud" is not valid: expected one of fatal, error, warn, info, debug, trace, silent',
  );
  assert.equal(
    refusal({ WEBHOOK_ALLOW_PRIVATE: 'perhaps' }),
    'invalid configuration: WEBHOOK_ALLOW_PRIVATE="perhaps" is not valid: expected true or false (or 1 and 0, yes and no)',
  );
  assert.match(
    refusal({ TRANSCRIBE_URL: 'http://127.0.0.1:6000' }),
    /^invalid configuration: TRANSCRIBE_URL="http:\/\/127\.0\.0\.1:6000" is not valid: transcription URL names port 6000, .*; expected the http\(s\) base URL of an OpenAI-compatible \/v1\/audio\/transcriptions endpoint$/,
  );
});

test("DATABASE_URL is a postgres:// or postgresql:// URL, told with its password masked; a secret's value is never told", () => {
  assert.equal(loadConfig({ DATABASE_URL: 'postgresql://app@db/calls' }).databaseUrl, 'postgresql://app@db/calls');
  assert.equal(
    refusal({ DATABASE_URL: 'mysql://app:s3cret@db/calls' }),
    'invalid configuration: DATABASE_URL="mysql://app:***@db/calls" is not valid: expected a PostgreSQL connection URL, postgres://user:password@host:5432/database (or postgresql://…)',
  );
  assert.equal(
    refusal({ ANALYSE_URL: 'https://app:s3cret@llm.example/v1' }),
    'invalid configuration: ANALYSE_URL="https://app:***@llm.example/v1" is not valid: analysis URL must not carry credentials; pass the key as apiKey; expected the http(s) base URL of an OpenAI-compatible /v1/chat/completions endpoint',
  );
  for (const variable of ['API_KEY_SECRET', 'DATA_KEY_SECRET'])
    assert.equal(
      refusal({ [variable]: 's3cret-but-short' }),
      `invalid configuration: ${variable} (its value not shown) is not valid: expected at least 32 characters`,
    );
  // Tokens travel in an HTTP header: one a client cannot send as configured is refused at start.
  for (const variable of ['ADMIN_TOKEN', 'METRICS_TOKEN'])
    for (const token of ['s3cret-but-short', `${'x'.repeat(32)} y`, `${'x'.repeat(32)}é`, `${'x'.repeat(32)}\u{1F600}`])
      assert.equal(
        refusal({ [variable]: token }),
        `invalid configuration: ${variable} (its value not shown) is not valid: expected at least 32 printable ASCII characters, no spaces (it is sent in an HTTP header)`,
        JSON.stringify(token),
      );
  assert.equal(loadConfig({ ADMIN_TOKEN: `${'x'.repeat(30)}!~` }).adminToken, `${'x'.repeat(30)}!~`);
});

test('values that read as something else are refused, naming the variable and the rule', () => {
  // A whole number is decimal digits: blanks, hex and exponents are not one (PORT=" " listened on a random port).
  assert.equal(
    refusal({ PORT: ' ' }),
    'invalid configuration: PORT=" " is not valid: expected a whole number from 0 to 65535',
  );
  rejects({ PORT: '0x50' }, 'PORT');
  rejects({ AUDIO_MAX_BYTES: '1e20' }, 'AUDIO_MAX_BYTES');
  // Timers hold at most 2^31 − 1 ms; past it Node.js fires them at once.
  rejects({ DATABASE_QUERY_TIMEOUT_MS: '3000000000' }, 'DATABASE_QUERY_TIMEOUT_MS');
  rejects({ AUDIO_FETCH_TIMEOUT_MS: '3000000000' }, 'AUDIO_FETCH_TIMEOUT_MS');
  assert.equal(loadConfig({ KAFKA_PUBLISH_TIMEOUT_MS: '2147483647' }).kafkaPublishTimeoutMs, 2_147_483_647);
  rejects({ TOPIC_PARTITIONS: '100000' }, 'TOPIC_PARTITIONS');
  // A blank broker entry is an error, not "no Kafka"; an entry is host:port.
  assert.match(
    refusal({ KAFKA_BROKERS: ',,' }),
    /^invalid configuration: KAFKA_BROKERS=",," is not valid: expected host:port/,
  );
  rejects({ KAFKA_BROKERS: 'kafka-1:9092,' }, 'KAFKA_BROKERS');
  rejects({ KAFKA_BROKERS: 'kafka://h:9092' }, 'KAFKA_BROKERS');
  rejects({ KAFKA_BROKERS: 'h' }, 'KAFKA_BROKERS');
  assert.deepEqual(loadConfig({ KAFKA_BROKERS: '[::1]:9092, kafka-2:9092' }).kafkaBrokers, [
    '[::1]:9092',
    'kafka-2:9092',
  ]);
  assert.deepEqual(loadConfig({ KAFKA_BROKERS: '  ' }).kafkaBrokers, []);
  rejects({ REDIS_URL: 'htp://x' }, 'REDIS_URL');
  assert.equal(loadConfig({ REDIS_URL: 'rediss://cache:6380' }).redisUrl, 'rediss://cache:6380');
  rejects({ KURRENTDB_URL: 'localhost:2113' }, 'KURRENTDB_URL');
  assert.match(
    refusal({ DATABASE_URL: 'postgres://127.0.0.1:notaport/postgres' }),
    /DATABASE_URL=.* it does not parse as a URL/,
  );
  rejects({ HEAP_MAX_MB: '-5' }, 'HEAP_MAX_MB');
  rejects({ HEAP_MAX_MB: '0' }, 'HEAP_MAX_MB');
  assert.equal(loadConfig({ HEAP_MAX_MB: '512' }).heapMaxMb, 512);
});

test('the admin CLI reaches an IPv6 or wildcard bind address at a URL that parses', () => {
  assert.equal(loadConfig({ HOST: '::1', PORT: '3100' }).apiUrl, 'http://[::1]:3100');
  assert.equal(loadConfig({ HOST: '::', PORT: '3100' }).apiUrl, 'http://[::1]:3100');
  assert.equal(loadConfig({ HOST: '0.0.0.0', PORT: '3100' }).apiUrl, 'http://127.0.0.1:3100');
  assert.equal(loadConfig({ HOST: '10.0.0.5', PORT: '3100' }).apiUrl, 'http://10.0.0.5:3100');
  for (const host of ['::1', '::', '0.0.0.0']) new URL(loadConfig({ HOST: host }).apiUrl);
});
