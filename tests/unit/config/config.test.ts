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
  for (const schedule of ['5s,,2m', 'soon', '5 seconds', '0s', '-5s'])
    rejects({ WEBHOOK_RETRY_SCHEDULE: schedule }, 'WEBHOOK_RETRY_SCHEDULE');
  rejects({ WEBHOOK_ALLOW_PRIVATE: 'perhaps' }, 'WEBHOOK_ALLOW_PRIVATE');
});
