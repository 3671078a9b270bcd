/**
 * Each service started from the configuration and the open backends. The entry points compose
 * them: `services/main.ts` runs all three in one process, the others one each.
 */
import type { Logger } from 'pino';
import type { Config } from '../../shared/config.ts';
import { createIngress } from '../ingress/ingress.ts';
import { startProcessor } from '../processor/processor.ts';
import { startProjections } from '../projections/projections.ts';
import type { Backends } from './backends.ts';
import type { Health } from './health.ts';
import { openRateLimiter } from './rate-limiter.ts';
import { resolveSecrets } from './secrets.ts';
import { openSteps } from './steps.ts';
import { listenRefusal } from './listen-refusal.ts';
import { registerEmbeddedDatabase } from './embedded-database-health.ts';

export interface Service {
  stop(): Promise<void>;
}

/** The HTTP API, listening on HOST:PORT. */
export const startIngressService = async (
  config: Config,
  backends: Backends,
  logger: Logger,
  health?: Health,
): Promise<Service & { address: string }> => {
  const secrets = resolveSecrets(config, backends.sqlite?.dataDir);
  if (secrets.files.adminToken)
    logger.info({ path: secrets.files.adminToken }, `admin token in ${secrets.files.adminToken}`);
  const limiter = await openRateLimiter(config, logger);
  const ingress = await createIngress({
    eventStore: backends.eventStore,
    eventLog: backends.eventLog,
    limiter,
    logger,
    adminToken: secrets.adminToken,
    metricsToken: config.metricsToken,
    apiKeySecret: secrets.apiKeySecret,
    check: () => backends.check(),
    readModels: backends.readModels,
    topics: backends.topics,
    health,
    orphanAfterMs: config.orphanReservationMs,
    // Keys fail closed when the directory may miss another process's revocation; with the embedded
    // store no other process writes, and a busy event loop must not turn every key away.
    keyDirectoryMaxLagMs: backends.eventStoreHeldByThisProcess ? Number.POSITIVE_INFINITY : config.keyDirectoryMaxLagMs,
    webhookAllowPrivate: config.webhookAllowPrivate,
    teams: backends.teams,
    personalData: backends.personalData,
    storedEvents: backends.storedEvents,
    publishCoversStore: backends.publishCoversStore,
  });
  const address = await ingress.app
    .listen({ port: config.port, host: config.host })
    .catch((error: unknown) => Promise.reject(listenRefusal(error, { ...config, portVariable: 'PORT' })));
  const unregister = registerEmbeddedDatabase(backends, health);
  return {
    address,
    async stop() {
      unregister();
      await ingress.close();
      await limiter.close();
    },
  };
};

/**
 * The call processor with the configured steps. A processor without an ingress beside it
 * (`followTeams`) follows the team events itself, as the ingress does: its settlements decide on the
 * team states it holds, and one that saw only its own writes met a version conflict at nearly every
 * settlement, since the ingress (and the other processors) had appended to the team's stream meanwhile.
 */
export const startProcessorService = async (
  config: Config,
  backends: Backends,
  logger: Logger,
  health?: Health,
  options: { followTeams?: boolean } = {},
): Promise<Service> => {
  const stopFollowing = options.followTeams ? await followTeams(backends, health) : undefined;
  const processor = await startProcessorSteps(config, backends, logger, health);
  const unregister = registerEmbeddedDatabase(backends, health);
  return {
    async stop() {
      unregister();
      await processor.stop();
      await stopFollowing?.();
    },
  };
};

/** Starts the team directory on the feed, its readiness registered; resolves with its stop. */
const followTeams = async (backends: Backends, health?: Health): Promise<() => Promise<void>> => {
  const { directory } = backends.teams;
  await directory.start(backends.storedEvents);
  const unregister = health?.register('team-directory', () =>
    directory.report((since) => health.retryingTooLong(since)),
  );
  return async () => {
    unregister?.();
    await directory.stop();
  };
};

const startProcessorSteps = async (
  config: Config,
  backends: Backends,
  logger: Logger,
  health?: Health,
): Promise<Service> => {
  const steps = openSteps(config);
  const transcription = await steps.transcriber.available();
  if (!transcription.ok)
    logger.warn(
      { reason: transcription.reason },
      'no transcription engine: audio calls will fail with transcription_unavailable',
    );
  logger.info({ transcriber: steps.transcriber.describe(), analyser: steps.analyser.describe() }, 'processing steps');
  return startProcessor({
    eventStore: backends.eventStore,
    eventLog: backends.eventLog,
    ...steps,
    logger,
    processingTimeoutMs: config.processingTimeoutMs,
    concurrency: config.processorConcurrency,
    transcriptionConcurrency: config.transcribeConcurrency,
    audioFetchBudgetMs: config.audioFetchBudgetMs,
    topics: backends.topics,
    teams: backends.teams.repository,
    health,
    personalData: backends.personalData,
    storedEvents: backends.storedEvents,
    deferDurability: backends.publishCoversStore,
  });
};

/** Call history, deals, deal.outcome.updated, webhooks and their delivery, and the call-events relay. */
export const startProjectionsService = (
  config: Config,
  backends: Backends,
  logger: Logger,
  health?: Health,
): Service => {
  const unregister = registerEmbeddedDatabase(backends, health);
  const projections = startProjections({
    eventStore: backends.eventStore,
    storedEvents: backends.storedEvents,
    personalData: backends.personalData,
    eventLog: backends.eventLog,
    readModels: backends.readModels,
    topics: backends.topics,
    logger,
    health,
    webhookDelivery: { retryScheduleMs: config.webhookRetryScheduleMs, allowPrivate: config.webhookAllowPrivate },
  });
  return {
    async stop() {
      unregister();
      await projections.stop();
    },
  };
};
