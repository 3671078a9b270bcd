/**
 * Runs every service in one process: the ingress (and the processor and projections) on the
 * backends the environment configures — the embedded SQLite database by default.
 */
import { ConfigError, loadConfig } from '../shared/config.ts';
import { createIngress } from './ingress/ingress.ts';
import { openBackends } from './runtime/backends.ts';
import { createLogger } from './runtime/logger.ts';
import { openRateLimiter } from './runtime/rate-limiter.ts';
import { resolveSecrets } from './runtime/secrets.ts';

const main = async () => {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  const backends = await openBackends(config, logger);
  const secrets = resolveSecrets(config, backends.sqlite?.dataDir);
  if (secrets.files.adminToken) logger.info({ path: secrets.files.adminToken }, `admin token in ${secrets.files.adminToken}`);
  const limiter = openRateLimiter(config, logger);
  const ingress = await createIngress({
    eventStore: backends.eventStore,
    eventLog: backends.eventLog,
    limiter,
    logger,
    adminToken: secrets.adminToken,
    apiKeySecret: secrets.apiKeySecret,
    check: () => backends.check(),
  });

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: finishing in-flight requests');
    const force = setTimeout(() => {
      logger.error('shutdown took longer than 15 s; exiting');
      process.exit(1);
    }, 15_000).unref();
    try {
      await ingress.close();
      await limiter.close();
      await backends.close();
      clearTimeout(force);
      logger.info('stopped cleanly');
    } catch (error) {
      logger.error({ err: error }, 'shutdown failed');
      process.exitCode = 1;
    }
  };
  process.once('SIGTERM', () => void stop('SIGTERM'));
  process.once('SIGINT', () => void stop('SIGINT'));

  const address = await ingress.app.listen({ port: config.port, host: config.host });
  logger.info({ address, ...backends.description }, `listening on ${address} (API docs at ${address}/docs)`);
};

main().catch((error: unknown) => {
  const known = error instanceof ConfigError || (error as { code?: string }).code === 'DATA_DIR_LOCKED';
  process.stderr.write(`call ingestion service failed to start: ${known ? (error as Error).message : (error as Error).stack}\n`);
  process.exit(1);
});
