/**
 * The projections on their own (scaled out: run one). `npm start` runs them inside the all-in-one
 * process instead.
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
import { startProjectionsService } from '../runtime/services.ts';

runUntilSignal('projections', async () => {
  const config = loadConfig();
  assertSeparateProcessLayout(config, 'projections');
  const logger = createLogger(config.logLevel);
  const telemetry = await startTelemetry(config, 'projections', logger);
  const backends = await openBackends(config, logger);
  const health = new Health(config.readyRetryThresholdMs);
  const projections = startProjectionsService(config, backends, logger, health);
  const healthServer = await serveHealthPort(config, backends, health, logger);
  logger.info({ ...backends.description }, 'projections running');
  return {
    logger,
    async stop() {
      await healthServer?.close();
      await projections.stop();
      await backends.close();
      await telemetry.stop();
    },
  };
});
