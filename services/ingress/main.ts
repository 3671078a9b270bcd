/**
 * The ingress on its own (scaled out: several behind a load balancer, on Kafka + PostgreSQL +
 * Redis). `npm start` runs it inside the all-in-one process instead.
 */
import { loadConfig } from '../../shared/config.ts';
import { openBackends } from '../runtime/backends.ts';
import { runUntilSignal } from '../runtime/lifecycle.ts';
import { createLogger } from '../runtime/logger.ts';
import { openRateLimiter } from '../runtime/rate-limiter.ts';
import { resolveSecrets } from '../runtime/secrets.ts';
import { createIngress } from './ingress.ts';

runUntilSignal('ingress', async () => {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  const backends = await openBackends(config, logger);
  const secrets = resolveSecrets(config, backends.sqlite?.dataDir);
  const limiter = openRateLimiter(config, logger);
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
  logger.info({ address, ...backends.description }, `ingress listening on ${address}`);
  return {
    logger,
    async stop() {
      await ingress.close();
      await limiter.close();
      await backends.close();
    },
  };
});
