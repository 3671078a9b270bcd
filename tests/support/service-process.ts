/**
 * The real service as a child process (`services/main.ts` through tsx), for tests that kill it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { eventually } from './eventually.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** The data key secret the service processes of a test share unless the test gives its own. */
export const TEST_DATA_KEY_SECRET = 'test-data-key-secret-0123456789abcdef0123';

export const freePort = async (): Promise<number> => {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
};

export interface ServiceProcess {
  url: string;
  child: ChildProcess;
  /** Everything the process wrote, for failure messages. */
  output(): string;
  /** SIGKILL: no shutdown code runs. */
  kill9(): Promise<void>;
  /** SIGTERM and wait for a clean exit. */
  stop(): Promise<number | null>;
}

/** The service's own variables are never inherited from the test run (CI exports the server ones). */
const SERVICE_VARIABLES =
  /^(DATABASE_URL|DATABASE_SCHEMA|KAFKA_BROKERS|REDIS_URL|KURRENTDB_URL|TOPIC_PREFIX|TOPIC_PARTITIONS|DATA_DIR|ADMIN_TOKEN|API_KEY_SECRET|DATA_KEY_SECRET|LOG_RETENTION_HOURS|TRANSCRIBE_\w+|ANALYSE_\w+|AUDIO_\w+|PROCESS\w+|PORT|HEALTH_PORT|READY_\w+|HOST|API_URL|ORPHAN_\w+|KAFKA_\w+|OTEL_\w+|METRICS_TOKEN|WEBHOOK_\w+)$/;

export const startService = async (
  env: Record<string, string>,
  entry = 'services/main.ts',
): Promise<ServiceProcess> => {
  const port = await freePort();
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !SERVICE_VARIABLES.test(name)));
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    cwd: root,
    // The standalone processor and projections answer /healthz and /readyz on HEALTH_PORT.
    // Every process of one deployment needs the same data key secret (required with DATABASE_URL); '' in `env` leaves it unset.
    env: {
      ...inherited,
      LOG_LEVEL: 'warn',
      DATA_KEY_SECRET: TEST_DATA_KEY_SECRET,
      ...env,
      PORT: String(port),
      HEALTH_PORT: String(port),
      HOST: '127.0.0.1',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  const exited = once(child, 'exit');
  const url = `http://127.0.0.1:${port}`;
  const healthy = eventually(
    async () => {
      const res = await fetch(`${url}/healthz`);
      if (!res.ok) throw new Error(`healthz ${res.status}`);
    },
    { timeoutMs: 60_000, intervalMs: 100 },
  );
  const died = exited.then(([code]) => {
    throw new Error(`service exited with ${String(code)} before answering`);
  });
  died.catch(() => undefined); // it also rejects on a later, intended kill
  await Promise.race([healthy, died]).catch((error: unknown) => {
    child.kill('SIGKILL');
    throw new Error(`service did not start: ${(error as Error).message}\n${output}`);
  });
  return {
    url,
    child,
    output: () => output,
    async kill9() {
      child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      child.kill('SIGTERM');
      const [code] = (await exited) as [number | null];
      return code;
    },
  };
};
