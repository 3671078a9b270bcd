/**
 * The embedded default (`npm start` with no server configured) loads none of the server clients:
 * the KurrentDB, PostgreSQL, Kafka and Redis drivers, the OTLP exporter and the tracing SDK are
 * imported only when their backend is configured, since each costs memory at rest. The services' modules
 * are imported and the embedded backends, the ingress, the processor and the projections started in
 * this process (its own: node:test runs each file in a process), then the CommonJS module cache is
 * read for the clients' packages.
 */
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import pino from 'pino';
import { loadConfig } from '../../../shared/config.ts';
import { tempDir } from '../../support/temp-dir.ts';

const SERVER_CLIENTS = [
  'kafkajs',
  'pg',
  'ioredis',
  '@kurrent/kurrentdb-client',
  '@grpc/grpc-js',
  '@opentelemetry/exporter-trace-otlp-http',
  // The tracing SDK: loaded only when traces are exported (OTEL_EXPORTER_OTLP_ENDPOINT).
  '@opentelemetry/sdk-trace-base',
  '@opentelemetry/context-async-hooks',
  '@opentelemetry/core',
  '@opentelemetry/resources',
  '@opentelemetry/semantic-conventions',
];

const loadedPackages = (): Set<string> => {
  const cache = createRequire(import.meta.url).cache;
  const packages = new Set<string>();
  for (const path of Object.keys(cache)) {
    const match = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(path);
    if (match) packages.add(match[1]!);
  }
  return packages;
};

test('the embedded default starts without loading a server client', async () => {
  const dir = tempDir('embedded-clients-');
  const { openBackends } = await import('../../../services/runtime/backends.ts');
  const { startIngressService, startProcessorService, startProjectionsService } =
    await import('../../../services/runtime/services.ts');
  const { startTelemetry } = await import('../../../services/runtime/telemetry.ts');
  const config = loadConfig({ DATA_DIR: dir.path, PORT: '0', ADMIN_TOKEN: 'a'.repeat(40) });
  const logger = pino({ level: 'silent' });
  const telemetry = await startTelemetry(config, 'all-in-one', logger);
  const backends = await openBackends(config, logger);
  const processor = await startProcessorService(config, backends, logger);
  const projections = startProjectionsService(config, backends, logger);
  const ingress = await startIngressService(config, backends, logger);
  try {
    const loaded = loadedPackages();
    assert.ok(loaded.has('better-sqlite3'), 'the check reads the module cache (better-sqlite3 is in it)');
    assert.deepEqual(
      SERVER_CLIENTS.filter((name) => loaded.has(name)),
      [],
      'no server client is loaded on the embedded default',
    );
  } finally {
    await ingress.stop();
    await projections.stop();
    await processor.stop();
    await backends.close();
    await telemetry.stop();
    dir.remove();
  }
});
