/**
 * Runs every service in one process — the ingress, the call processor and the projections — on
 * the backends the environment configures: the embedded SQLite database by default.
 */
// First: a process on another Node.js stops here, before anything else runs.
import './runtime/node-version.ts';
import { loadConfig } from '../shared/config.ts';
import { openBackends } from './runtime/backends.ts';
import { checkSecrets } from './runtime/secrets.ts';
import { Health } from './runtime/health.ts';
import { runUntilSignal } from './runtime/lifecycle.ts';
import { startTelemetry } from './runtime/telemetry.ts';
import { createLogger } from './runtime/logger.ts';
import { startIngressService, startProcessorService, startProjectionsService } from './runtime/services.ts';

runUntilSignal('call ingestion service', async () => {
  const config = loadConfig();
  checkSecrets(config);
  const logger = createLogger(config.logLevel);
  const telemetry = await startTelemetry(config, 'all-in-one', logger);
  const backends = await openBackends(config, logger);
  const health = new Health(config.readyRetryThresholdMs);
  try {
    const processor = await startProcessorService(config, backends, logger, health);
    const projections = startProjectionsService(config, backends, logger, health);
    const ingress = await startIngressService(config, backends, logger, health);
    logger.info(
      { address: ingress.address, ...backends.description },
      `listening on ${ingress.address} (API docs at ${ingress.address}/docs)`,
    );
    return {
      logger,
      async stop() {
        await ingress.stop();
        await processor.stop();
        await projections.stop();
        await backends.close();
        await telemetry.stop();
      },
    };
  } catch (error) {
    await backends.close().catch(() => undefined);
    throw error;
  }
});
