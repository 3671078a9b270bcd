/**
 * The projections on their own (scaled out). `npm start` runs them inside the all-in-one process.
 */
import { loadConfig } from '../../shared/config.ts';
import { openBackends } from '../runtime/backends.ts';
import { runUntilSignal } from '../runtime/lifecycle.ts';
import { createLogger } from '../runtime/logger.ts';
import { startProjections } from './projections.ts';

runUntilSignal('projections', async () => {
  const config = loadConfig();
  const logger = createLogger(config.logLevel);
  const backends = await openBackends(config, logger);
  const projections = startProjections({ eventStore: backends.eventStore, eventLog: backends.eventLog, readModels: backends.readModels, topics: backends.topics, logger });
  logger.info({ ...backends.description }, 'projections running');
  return {
    logger,
    async stop() {
      await projections.stop();
      await backends.close();
    },
  };
});
