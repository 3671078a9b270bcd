/**
 * Finds the real servers a suite needs: from KAFKA_BROKERS / DATABASE_URL / REDIS_URL /
 * KURRENTDB_URL; where unset and a Docker engine answers, started with testcontainers; otherwise the
 * suite is skipped with one line saying which and why.
 *
 * REQUIRE_BACKENDS (comma-separated: kafka,postgres,redis,kurrentdb) turns a skip into a failure,
 * so CI cannot go green when a server it should have did not start.
 */
import { existsSync } from 'node:fs';

export type BackendName = 'kafka' | 'postgres' | 'redis' | 'kurrentdb';

export type Backend =
  { name: BackendName; url: string; skip?: undefined } | { name: BackendName; url?: undefined; skip: string };

const ENV: Record<BackendName, string> = {
  kafka: 'KAFKA_BROKERS',
  postgres: 'DATABASE_URL',
  redis: 'REDIS_URL',
  kurrentdb: 'KURRENTDB_URL',
};

const required = (): Set<string> =>
  new Set(
    (process.env.REQUIRE_BACKENDS ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );

const dockerAnswers = (): boolean => Boolean(process.env.DOCKER_HOST) || existsSync('/var/run/docker.sock');

type Started = { url: string; stop: () => Promise<unknown> };
const containers = new Map<BackendName, Promise<Started>>();

const startContainer = async (name: BackendName): Promise<Started> => {
  const tc = await import('testcontainers');
  switch (name) {
    case 'postgres': {
      const c = await new tc.GenericContainer('postgres:16.4-alpine')
        .withEnvironment({ POSTGRES_PASSWORD: 'test', POSTGRES_DB: 'calls' })
        .withExposedPorts(5432)
        .withWaitStrategy(tc.Wait.forLogMessage(/database system is ready to accept connections/, 2))
        .start();
      return { url: `postgres://postgres:test@${c.getHost()}:${c.getMappedPort(5432)}/calls`, stop: () => c.stop() };
    }
    case 'redis': {
      const c = await new tc.GenericContainer('redis:7.4.1-alpine').withExposedPorts(6379).start();
      return { url: `redis://${c.getHost()}:${c.getMappedPort(6379)}`, stop: () => c.stop() };
    }
    case 'kurrentdb': {
      const c = await new tc.GenericContainer('docker.kurrent.io/kurrent-latest/kurrentdb:25.1.4')
        .withEnvironment({ KURRENTDB_INSECURE: 'true', KURRENTDB_RUN_PROJECTIONS: 'None' })
        .withExposedPorts(2113)
        .withWaitStrategy(tc.Wait.forHttp('/health/live', 2113).forStatusCode(204))
        .start();
      return { url: `kurrentdb://${c.getHost()}:${c.getMappedPort(2113)}?tls=false`, stop: () => c.stop() };
    }
    case 'kafka': {
      const port = 9093 + Math.floor(Math.random() * 500);
      const c = await new tc.GenericContainer('apache/kafka:4.3.1')
        .withExposedPorts({ container: port, host: port })
        .withEnvironment({
          KAFKA_NODE_ID: '1',
          KAFKA_PROCESS_ROLES: 'broker,controller',
          KAFKA_LISTENERS: `PLAINTEXT://:${port},CONTROLLER://:9094`,
          KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://localhost:${port}`,
          KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
          KAFKA_CONTROLLER_QUORUM_VOTERS: '1@localhost:9094',
          KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
          KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
          KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
          KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
        })
        .withWaitStrategy(tc.Wait.forLogMessage(/Kafka Server started/))
        .start();
      return { url: `localhost:${port}`, stop: () => c.stop() };
    }
  }
};

const reported = new Set<BackendName>();

/** The server for `name`, or a skip reason (printed once). Throws when the backend is required. */
export const backend = async (name: BackendName): Promise<Backend> => {
  const fromEnv = process.env[ENV[name]];
  if (fromEnv) return { name, url: fromEnv };
  let reason: string;
  if (dockerAnswers()) {
    try {
      let started = containers.get(name);
      if (!started) {
        started = startContainer(name);
        containers.set(name, started);
      }
      return { name, url: (await started).url };
    } catch (error) {
      reason = `${ENV[name]} is unset and starting a ${name} container failed: ${(error as Error).message}`;
    }
  } else {
    reason = `${ENV[name]} is unset and no Docker engine answers`;
  }
  if (required().has(name)) throw new Error(`REQUIRE_BACKENDS names ${name} but it is unavailable: ${reason}`);
  if (!reported.has(name)) {
    reported.add(name);
    process.stdout.write(`# skipping ${name} suites: ${reason}\n`);
  }
  return { name, skip: reason };
};

/** Stops containers this process started (call from an `after` hook of the last suite). */
export const stopContainers = async (): Promise<void> => {
  for (const started of containers.values()) await (await started).stop().catch(() => undefined);
  containers.clear();
};
