/**
 * The ingress on its own (scaled out: several behind a load balancer, on Kafka + PostgreSQL +
 * Redis). `npm start` runs it inside the all-in-one process instead.
 */
// First: a process on another Node.js stops here, before anything else runs.
import '../runtime/node-version.ts';
import { assertSeparateProcessLayout, loadConfig } from '../../shared/config.ts';
import { openBackends } from '../runtime/backends.ts';
import { Health } from '../runtime/health.ts';
import { runUntilSignal } from '../runtime/lifecycle.ts';
import { startTelemetry } from '../runtime/telemetry.ts';
import { createLogger } from '../runtime/logger.ts';
import { startIngressService } from '../runtime/services.ts';

runUntilSignal('ingress', async () => {
  const config = loadConfig();
  assertSeparateProcessLayout(config, 'ingress');
  const logger = createLogger(config.logLevel);
  const telemetry = await startTelemetry(config, 'ingress', logger);
  const backends = await openBackends(config, logger);
  const ingress = await startIngressService(config, backends, logger, new Health(config.readyRetryThresholdMs));
  logger.info({ address: ingress.address, ...backends.description }, `ingress listening on ${ingress.address}`);
  return {
    logger,
    async stop() {
      await ingress.stop();
      await backends.close();
      await telemetry.stop();
    },
  };
});
