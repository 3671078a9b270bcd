/**
 * The ingress service assembled from its backends: the team directory (followed from the event
 * store), the team use cases, and the HTTP app. Used by main.ts and by the contract tests.
 */
import type { Logger } from 'pino';
import type { EventLog } from '../../shared/ports/event-log.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import type { RateLimiter } from '../../shared/ports/rate-limiter.ts';
import type { ReadModels } from '../../shared/ports/read-models.ts';
import type { Topics } from '../../shared/topics.ts';
import type { PersonalData } from '../../shared/adapters/crypto/personal-data.ts';
import { createCallEraser } from './call-eraser.ts';
import { createErasureRequests } from './erasure-requests.ts';
import { type RetentionSweepResult, startRetentionSweep } from './retention-sweep.ts';
import type { Health } from '../runtime/health.ts';
import { buildIngressApp, type IngressApp } from './app.ts';
import { DEFAULT_ORPHAN_AFTER_MS, startOrphanSweep } from './teams/orphan-reservations.ts';
import { createTeamWriter, type TeamWriter } from '../runtime/team-writer.ts';
import { registerSecretForRedaction } from '../runtime/logger.ts';
import type { BackendProbes } from '../runtime/backend-probes.ts';
import { DEFAULT_KEY_DIRECTORY_MAX_LAG_MS, TeamService } from './teams/team-service.ts';

export interface IngressOptions {
  eventStore: EventStore;
  eventLog: EventLog;
  limiter: RateLimiter;
  logger: Logger;
  adminToken: string;
  /** A second bearer token accepted by GET /metrics (METRICS_TOKEN). */
  metricsToken?: string;
  apiKeySecret: string;
  /** Probes the backends for GET /readyz (backend-probes.ts); default none. */
  check?: () => Promise<BackendProbes>;
  readModels?: ReadModels;
  topics?: Topics;
  now?: () => Date;
  /** Readiness of this process's parts; the team directory registers here. */
  health?: Health;
  /** The process's team writer, shared with the processor of the same process; default a new one. */
  teams?: TeamWriter;
  /** Keys are answered 503 when the team directory is older than this (default 10 s). */
  keyDirectoryMaxLagMs?: number;
  /** A capacity reservation whose call has not appeared after this long is released (default 15 min). */
  orphanAfterMs?: number;
  /** WEBHOOK_ALLOW_PRIVATE: webhook URLs may name loopback and private addresses (default false). */
  webhookAllowPrivate?: boolean;
  /** Seals personal fields and erases calls (docs/decisions/0014-erasure-crypto-shredding.md). */
  personalData?: PersonalData;
  /** How often teams' retention periods are applied (default 60 s). */
  retentionSweepMs?: number;
  /** The events as stored (personal fields sealed): the team directory follows them, having no use for call data opened. */
  storedEvents?: EventStore;
  /** The event log and the event store share one embedded database: a publish's sync covers the reservation. */
  publishCoversStore?: boolean;
}

export interface Ingress {
  app: IngressApp;
  teams: TeamService;
  /** The retention sweep, when the ingress erases calls. */
  retention?: { sweep(): Promise<RetentionSweepResult> };
  /** Closes the HTTP app (finishing in-flight requests) and stops following team events. */
  close(): Promise<void>;
}

export const createIngress = async (options: IngressOptions): Promise<Ingress> => {
  registerSecretForRedaction(options.adminToken);
  registerSecretForRedaction(options.apiKeySecret);
  if (options.metricsToken) registerSecretForRedaction(options.metricsToken);
  const { directory, repository } = options.teams ?? createTeamWriter(options.eventStore);
  await directory.start(options.storedEvents ?? options.eventStore);
  const maxLagMs = options.keyDirectoryMaxLagMs ?? DEFAULT_KEY_DIRECTORY_MAX_LAG_MS;
  const unregister = options.health?.register('team-directory', () =>
    directory.report((since) => options.health!.retryingTooLong(since), maxLagMs),
  );
  const teams = new TeamService({
    repository,
    directory,
    maxDirectoryLagMs: maxLagMs,
    keySecret: options.apiKeySecret,
    now: options.now,
  });
  // Erasure needs the read models (to find a team's calls) and the data keys (to shred).
  const { personalData, readModels } = options;
  const erase = personalData
    ? createCallEraser({ eventStore: options.eventStore, teams, personalData, now: options.now })
    : undefined;
  const erasure =
    erase && readModels
      ? {
          erase,
          requests: createErasureRequests({
            eventStore: options.eventStore,
            callHistory: readModels.callHistory,
            teams,
            erase,
            log: options.logger,
            now: options.now,
          }),
        }
      : undefined;
  const app = await buildIngressApp({
    logger: options.logger,
    check: options.check ?? (async () => ({})),
    teams,
    limiter: options.limiter,
    eventLog: options.eventLog,
    adminToken: options.adminToken,
    metricsToken: options.metricsToken,
    eventStore: options.eventStore,
    storedEvents: options.storedEvents,
    readModels: options.readModels,
    topics: options.topics,
    now: options.now,
    health: options.health,
    webhookAllowPrivate: options.webhookAllowPrivate,
    personalData,
    erasure,
    publishCoversStore: options.publishCoversStore,
  });
  await app.ready();
  const retention = erasure
    ? startRetentionSweep({
        teams,
        callHistory: readModels!.callHistory,
        erase: erasure.erase,
        log: options.logger,
        intervalMs: options.retentionSweepMs,
        now: options.now,
      })
    : undefined;
  // Erasure requests nobody reads again are finished all the same (their process stopped, or a backend was down).
  const resuming = erasure?.requests.startResuming();
  const orphans = startOrphanSweep({
    teams,
    eventStore: options.eventStore,
    orphanAfterMs: options.orphanAfterMs ?? DEFAULT_ORPHAN_AFTER_MS,
    log: options.logger,
    now: options.now,
  });
  return {
    app,
    teams,
    retention,
    async close() {
      unregister?.();
      await orphans.stop();
      await retention?.stop();
      await resuming?.stop();
      await app.close();
      await erasure?.requests.close();
      await directory.stop();
    },
  };
};
