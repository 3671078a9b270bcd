/**
 * The call processor on its own (scaled out: run several, on Kafka + PostgreSQL). `npm start` runs
 * it inside the all-in-one process instead.
 */
// First: a process on another Node.js stops here, before anything else runs.
import '../runtime/node-version.ts';
import { assertSeparateProcessLayout, loadConfig } from '../../shared/config.ts';
import { openBackends } from '../runtime/backends.ts';
import { Health } from '../runtime/health.ts';
import { serveHealthPort } from '../runtime/health-server.ts';
import { runUntilSignal } from '../runtime/lifecycle.ts';
import { startTelemetry } from '../runtime/telemetry.ts';
import { createLogger } from '../runtime/logger.ts';
import { startProcessorService } from '../runtime/services.ts';

runUntilSignal('processor', async () => {
  const config = loadConfig();
  assertSeparateProcessLayout(config, 'processor');
  const logger = createLogger(config.logLevel);
  const telemetry = await startTelemetry(config, 'processor', logger);
  const backends = await openBackends(config, logger);
  const health = new Health(config.readyRetryThresholdMs);
  const processor = await startProcessorService(config, backends, logger, health, { followTeams: true });
  const healthServer = await serveHealthPort(config, backends, health, logger);
  logger.info({ ...backends.description }, 'processor running');
  return {
    logger,
    async stop() {
      await healthServer?.close();
      await processor.stop();
      await backends.close();
      await telemetry.stop();
    },
  };
});
