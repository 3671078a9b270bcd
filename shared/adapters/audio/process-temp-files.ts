/**
 * Temp files named after the process that made them (`audio-<pid>-<uuid>`), so the ones a killed
 * process left behind can be told from those a live process is still writing, and removed.
 */
import { randomUUID } from 'node:crypto';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';

/** `<prefix><pid>-<uuid>`: a temp name of this process. */
export const processTempName = (prefix: string): string => `${prefix}${process.pid}-${randomUUID()}`;

/** The prefix for `mkdtemp` (which appends random characters): `<prefix><pid>-`. */
export const processTempPrefix = (prefix: string): string => `${prefix}${process.pid}-`;

/** Whether a process with this id runs (EPERM: it does, as another user). */
export const processAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
};

export interface SweepOptions {
  /** Test seam; default `processAlive`. */
  isAlive?: (pid: number) => boolean;
  /** When this process started (ms since the epoch); default from `process.uptime()`. */
  startedAt?: number;
}

/**
 * Removes the files and directories `<prefix><pid>-…` in `dir` whose process is gone. A process
 * restarted under the same pid (pid 1 in a container) finds its predecessor's by their age: older
 * than itself. Entries of another live process are kept (a reused pid keeps a file, never loses
 * one). Resolves with how many were removed; a missing `dir` has none.
 */
export const sweepStaleTempFiles = async (dir: string, prefix: string, options: SweepOptions = {}): Promise<number> => {
  const isAlive = options.isAlive ?? processAlive;
  const startedAt = options.startedAt ?? Date.now() - process.uptime() * 1000;
  const pattern = new RegExp(`^${prefix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(\\d+)-`);
  const names = await readdir(dir).catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return [];
    throw error;
  });
  let removed = 0;
  for (const name of names) {
    const pid = Number(pattern.exec(name)?.[1]);
    if (!Number.isSafeInteger(pid)) continue;
    const path = join(dir, name);
    if (pid === process.pid) {
      const modified = await stat(path).then(
        (s) => s.mtimeMs,
        () => undefined,
      );
      if (modified === undefined || modified >= startedAt) continue;
    } else if (isAlive(pid)) continue;
    await rm(path, { recursive: true, force: true });
    removed++;
  }
  return removed;
};
