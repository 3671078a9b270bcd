/**
 * A throwaway PostgreSQL cluster of a test's own (initdb / pg_ctl from the Debian server binaries),
 * on its own port and temporary directory, that the test may stop and start at will without
 * touching the server other tests share. As root (CI containers), the server binaries refuse to
 * run, so they run as the `postgres` user.
 */
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The directory of `initdb` and `pg_ctl`, or undefined when no server binaries are installed. */
export const findServerBinaries = (): string | undefined => {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => /^\d+$/.test(v))
    .sort((a, b) => Number(b) - Number(a));
  return versions
    .map((v) => join(root, v, 'bin'))
    .find((bin) => existsSync(join(bin, 'initdb')) && existsSync(join(bin, 'pg_ctl')));
};

const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

/** The uid and gid of the `postgres` user, from /etc/passwd. */
const postgresUser = async (): Promise<{ uid: number; gid: number }> => {
  const { stdout } = await run('id', ['-u', 'postgres']);
  const { stdout: gid } = await run('id', ['-g', 'postgres']);
  return { uid: Number(stdout.trim()), gid: Number(gid.trim()) };
};

export interface Cluster {
  url: string;
  port: number;
  /** Fast shutdown: sessions are terminated, the port closes. */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops it (immediately) and deletes its directory. */
  destroy(): Promise<void>;
}

export const createCluster = async (bin: string): Promise<Cluster> => {
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), 'calls-pg-cluster-'));
  const data = join(dir, 'data');
  const logFile = join(dir, 'server.log');
  if (asRoot) {
    const { uid, gid } = await postgresUser();
    chownSync(dir, uid, gid);
  }
  const exec = (tool: string, args: string[]) =>
    asRoot
      ? run('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args], { cwd: dir })
      : run(join(bin, tool), args, { cwd: dir });
  const port = await freePort();
  const serverOptions = `-p ${port} -c listen_addresses=127.0.0.1 -k ${dir} -c fsync=off -c max_connections=100`;
  const start = async () => {
    await exec('pg_ctl', ['-D', data, '-o', serverOptions, '-l', logFile, '-w', '-t', '60', 'start']);
  };
  try {
    await exec('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
    await start();
  } catch (error) {
    await exec('pg_ctl', ['-D', data, '-m', 'immediate', 'stop']).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    async stop() {
      await exec('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']);
    },
    start,
    async destroy() {
      await exec('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
};
