/**
 * Runs every service in one process — the ingress, the call processor (and the projections) — on
 * the backends the environment configures: the embedded SQLite database by default.
 */
import { loadConfig } from '../shared/config.ts';
import { createIngress } from './ingress/ingress.ts';
import { startProcessor } from './processor/processor.ts';
import { startProjections } from './projections/projections.ts';
import { openBackends } from './runtime/backends.ts';
import { runUntilSignal } from './runtime/lifecycle.ts';
import { createLogger } from './runtime/logger.ts';
import { openRateLimiter } from './runtime/rate-limiter.ts';
import { resolveSecrets } from './runtime/secrets.ts';
import { openSteps } from './runtime/steps.ts';

runUntilSignal('call ingestion service', async () => {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  const backends = await openBackends(config, logger);
  try {
    const secrets = resolveSecrets(config, backends.sqlite?.dataDir);
    if (secrets.files.adminToken) logger.info({ path: secrets.files.adminToken }, `admin token in ${secrets.files.adminToken}`);
    const limiter = openRateLimiter(config, logger);
    const steps = openSteps(config);
    const transcription = await steps.transcriber.available();
    if (!transcription.ok) logger.warn({ reason: transcription.reason }, 'no transcription engine: audio calls will fail with transcription_unavailable');
    const processor = await startProcessor({
      eventStore: backends.eventStore,
      eventLog: backends.eventLog,
      ...steps,
      logger,
      processingTimeoutMs: config.processingTimeoutMs,
      topicPartitions: config.topicPartitions,
      concurrency: config.processorConcurrency,
      transcriptionConcurrency: config.transcribeConcurrency,
      topics: backends.topics,
    });
    const projections = startProjections({
      eventStore: backends.eventStore,
      eventLog: backends.eventLog,
      readModels: backends.readModels,
      topics: backends.topics,
      logger,
    });
    const ingress = await createIngress({
      eventStore: backends.eventStore,
      eventLog: backends.eventLog,
      limiter,
      logger,
      adminToken: secrets.adminToken,
      apiKeySecret: secrets.apiKeySecret,
      check: () => backends.check(),
      readModels: backends.readModels,
      topics: backends.topics,
    });
    const address = await ingress.app.listen({ port: config.port, host: config.host });
    logger.info({ address, ...backends.description, transcriber: steps.transcriber.describe(), analyser: steps.analyser.describe() }, `listening on ${address} (API docs at ${address}/docs)`);
    return {
      logger,
      async stop() {
        await ingress.close();
        await processor.stop();
        await projections.stop();
        await limiter.close();
        await backends.close();
      },
    };
  } catch (error) {
    await backends.close().catch(() => undefined);
    throw error;
  }
});
