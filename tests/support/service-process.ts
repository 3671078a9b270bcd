/**
 * The real service as a child process (`services/main.ts` through tsx), for tests that kill it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { eventually } from './eventually.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));

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

export const startService = async (env: Record<string, string>, entry = 'services/main.ts'): Promise<ServiceProcess> => {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: 'warn', ...env, PORT: String(port), HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
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
