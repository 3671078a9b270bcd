/**
 * Opens the event store and the event log the configuration asks for:
 * - nothing configured: both in the embedded SQLite database in DATA_DIR;
 * - DATABASE_URL: the event store on PostgreSQL (and the event log too, unless KAFKA_BROKERS);
 * - KAFKA_BROKERS: the event log on Apache Kafka;
 * - KURRENTDB_URL: the event store on KurrentDB, whatever else is set; the event log and the read
 *   models stay on Kafka / PostgreSQL / the embedded database as above.
 */
import type { Logger } from 'pino';
import { createSqliteEventLog } from '../../shared/adapters/event-log/sql-event-log.ts';
import { createSqliteEventStore } from '../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite, type OpenedSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
import type { Config } from '../../shared/config.ts';
import { invalidVariable, maskPassword } from '../../shared/config-error.ts';
import type { EventLog } from '../../shared/ports/event-log.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import type { ReadModels } from '../../shared/ports/read-models.ts';
import { createSqliteReadModels } from '../../shared/adapters/read-models/sqlite-read-models.ts';
import { createTeamWriter, type TeamWriter } from './team-writer.ts';
import { keyEncryptionKey } from '../../shared/adapters/crypto/aes-gcm.ts';
import { createPersonalData, type PersonalData } from '../../shared/adapters/crypto/personal-data.ts';
import { createSqliteDataKeys } from '../../shared/adapters/data-keys/sqlite-data-keys.ts';
import { createSealedEventStore } from '../../shared/adapters/event-store/sealed-event-store.ts';
import { resolveDataKeySecret } from './secrets.ts';
import { allTopics, type Topics, topicNames, topicSpecs } from '../../shared/topics.ts';
import { type BackendProbe, backendProbes } from './backend-probes.ts';

export interface Backends {
  /** The event store, personal fields of call events sealed at append and opened at read. */
  eventStore: EventStore;
  /** The same store as stored (personal fields still sealed), for readers that forward events as they are. */
  storedEvents: EventStore;
  /** Seals, opens and erases personal fields under per-call data keys (docs/decisions/0014-erasure-crypto-shredding.md). */
  personalData: PersonalData;
  eventLog: EventLog;
  /** Call history and deal records: on PostgreSQL with DATABASE_URL, else in the embedded database (whichever the event store is). */
  readModels: ReadModels;
  /** Topic names (with TOPIC_PREFIX). */
  topics: Topics;
  /** The process's one writer of team streams, shared by its ingress and processor. */
  teams: TeamWriter;
  /** The embedded database when one is open (for DATA_DIR files such as the admin token). */
  sqlite?: OpenedSqlite;
  /**
   * The event log and the event store are one embedded SQLite database: a durable publish makes the
   * store's earlier commits durable too (docs/decisions/0015-embedded-durability-off-the-event-loop.md).
   */
  publishCoversStore: boolean;
  /**
   * The event store is the embedded database, which one process holds at a time (`DATA_DIR/LOCK`):
   * every team event is written by this process, through its team writer, which folds it into the
   * team directory at once, so the directory cannot be behind another writer.
   */
  eventStoreHeldByThisProcess: boolean;
  /** One line per backend, for the start-up log. */
  description: { eventStore: string; eventLog: string };
  /** Probes each backend, each within READINESS_PROBE_DEADLINE_MS (backend-probes.ts); used by GET /readyz. */
  check(): Promise<Record<'eventStore' | 'eventLog', BackendProbe>>;
  close(): Promise<void>;
}

/** The PostgreSQL server, schema and statement deadline every PostgreSQL adapter is given. */
const postgresOf = (config: Config) => ({
  connectionString: config.databaseUrl!,
  schema: config.databaseSchema,
  queryTimeoutMs: config.databaseQueryTimeoutMs,
});

/** Errors of the file system that say DATA_DIR is not a directory this process can use. */
const DATA_DIR_REFUSALS = new Set(['EEXIST', 'ENOTDIR', 'EACCES', 'EPERM', 'EROFS', 'ENOENT']);

/** The embedded database in DATA_DIR; a DATA_DIR that is a file, or not writable, is told as its variable. */
const openDataDir = (config: Config, log: Logger) => {
  try {
    return openSqlite(config.dataDir, {
      onCheckpointerEnded: (error, restartInMs) =>
        log.error(
          { err: error, restartInMs },
          `the embedded database's WAL checkpointer ended; it starts again in ${restartInMs} ms (until then the WAL grows and /readyz says so)`,
        ),
    });
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code !== 'string' || !DATA_DIR_REFUSALS.has(code)) throw error;
    throw invalidVariable(
      'DATA_DIR',
      config.dataDir,
      'a directory this user can create, read and write',
      (error as Error).message,
    );
  }
};

export const openBackends = async (config: Config, log: Logger): Promise<Backends> => {
  const sqlite = config.databaseUrl ? undefined : openDataDir(config, log);
  const closing: Array<() => Promise<void>> = [];
  try {
    // The server adapters (and their drivers) are loaded only when configured: the embedded
    // default never loads the KurrentDB, PostgreSQL or Kafka clients, tens of MB of memory each.
    const storedEvents = config.kurrentDbUrl
      ? await (
          await import('../../shared/adapters/event-store/kurrentdb-event-store.ts')
        ).openKurrentDbEventStore({ connectionString: config.kurrentDbUrl, log })
      : config.databaseUrl
        ? await (
            await import('../../shared/adapters/event-store/postgres-event-store.ts')
          ).createPostgresEventStore({ ...postgresOf(config), log })
        : createSqliteEventStore(sqlite!.db);
    closing.push(() => storedEvents.close());
    const dataKeySecret = resolveDataKeySecret(config, sqlite?.dataDir);
    if (dataKeySecret.file) log.info({ path: dataKeySecret.file }, `data key secret in ${dataKeySecret.file}`);
    const kek = keyEncryptionKey(dataKeySecret.secret);
    const dataKeys = config.databaseUrl
      ? await (
          await import('../../shared/adapters/data-keys/postgres-data-keys.ts')
        ).createPostgresDataKeys(postgresOf(config), kek)
      : // The embedded log's durable publish covers a new key's commit; Kafka's does not.
        createSqliteDataKeys(sqlite!.db, kek, { coveredByNextWrite: config.kafkaBrokers.length === 0 });
    const personalData = createPersonalData(dataKeys);
    closing.push(() => personalData.close());
    const eventStore = createSealedEventStore(storedEvents, personalData);
    const eventLog =
      config.kafkaBrokers.length > 0
        ? await (
            await import('../../shared/adapters/event-log/kafka-event-log.ts')
          ).createKafkaEventLog({ brokers: config.kafkaBrokers, publishTimeoutMs: config.kafkaPublishTimeoutMs })
        : config.databaseUrl
          ? await (
              await import('../../shared/adapters/event-log/sql-event-log.ts')
            ).createPostgresEventLog({
              ...postgresOf(config),
              retentionMs: config.logRetentionHours * 3_600_000,
            })
          : createSqliteEventLog(sqlite!.db, { retentionMs: config.logRetentionHours * 3_600_000 });
    const readModels = config.databaseUrl
      ? await (
          await import('../../shared/adapters/read-models/postgres-read-models.ts')
        ).createPostgresReadModels(postgresOf(config))
      : createSqliteReadModels(sqlite!.db);
    const topics = topicNames(config.topicPrefix);
    await eventLog.ensureTopics(topicSpecs(topics, config.topicPartitions));
    // A topic made before keeps its count; the services go by the topic's own (the processors own
    // calls by it), so a different setting is only reported.
    for (const name of allTopics(topics)) {
      const partitions = await eventLog.partitionCount(name);
      if (partitions !== config.topicPartitions)
        log.warn(
          { topic: name, partitions, topicPartitions: config.topicPartitions },
          `topic ${name} has ${partitions} partitions, not TOPIC_PARTITIONS=${config.topicPartitions}: it existed already; its ${partitions} are used`,
        );
    }
    const description = {
      eventStore: config.kurrentDbUrl
        ? `kurrentdb ${maskPassword(config.kurrentDbUrl)}`
        : config.databaseUrl
          ? `postgresql ${maskPassword(config.databaseUrl)} schema ${config.databaseSchema}`
          : `sqlite ${sqlite!.dataDir}`,
      eventLog:
        config.kafkaBrokers.length > 0
          ? `kafka ${config.kafkaBrokers.join(',')}`
          : config.databaseUrl
            ? `postgresql table log (schema ${config.databaseSchema})`
            : `sqlite table log ${sqlite!.dataDir}`,
    };
    log.info(description, 'backends open');
    return {
      eventStore,
      storedEvents,
      personalData,
      eventLog,
      readModels,
      topics,
      teams: createTeamWriter(eventStore, {
        onUndecodable: (error) =>
          log.error(
            { err: error, streamId: error.streamId, revision: error.revision, field: error.field },
            "a team event does not decode: the team's keys are refused until it is fixed or skipped",
          ),
        onFailed: (error, retryInMs) =>
          log.error({ err: error, retryInMs }, 'the team events feed failed; following it again'),
      }),
      sqlite,
      // Both in the embedded database: not with KurrentDB's store beside the embedded log.
      publishCoversStore: !config.databaseUrl && !config.kurrentDbUrl && config.kafkaBrokers.length === 0,
      eventStoreHeldByThisProcess: !config.databaseUrl && !config.kurrentDbUrl,
      description,
      check: backendProbes({
        eventStore: () => eventStore.readAll({ maxCount: 1 }),
        eventLog: () => eventLog.committedOffset('readiness-probe', topics.callsSubmitted, 0),
      }),
      async close() {
        await eventLog.close();
        await readModels.close();
        await personalData.close();
        await eventStore.close();
        sqlite?.close();
      },
    };
  } catch (error) {
    for (const close of closing.reverse()) await close().catch(() => undefined);
    sqlite?.close();
    throw error;
  }
};
