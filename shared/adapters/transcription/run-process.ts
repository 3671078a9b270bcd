/**
 * Runs one program without a shell and says how it ended, so each adapter can turn the outcome into
 * its own `StepError`s. stdout is kept whole (up to a cap), stderr only its tail: pocketsphinx logs
 * hundreds of lines there, and only the last ones explain a failure.
 */
import { spawn, spawnSync } from 'node:child_process';

export type ProcessOutcome =
  /** The program ran to its end; `exitCode` may be non-zero. */
  | { kind: 'exited'; exitCode: number; stdout: string; stderr: string }
  /** Something other than us killed it (a crash: SIGSEGV, the OOM killer's SIGKILL…). */
  | { kind: 'signalled'; signal: string; stdout: string; stderr: string }
  /** Our deadline passed; the program was killed. */
  | { kind: 'timeout' }
  /** The caller's signal aborted; the program was killed. */
  | { kind: 'aborted'; reason: unknown }
  /** No such program (ENOENT) or not executable (EACCES). */
  | { kind: 'missing'; error: NodeJS.ErrnoException }
  /** It could not be started for another reason (EMFILE, EAGAIN…), or its output passed the cap. */
  | { kind: 'failed'; error: Error };

export interface RunOptions {
  /** Kills the program (SIGKILL) once this many ms have passed. */
  timeoutMs: number;
  signal?: AbortSignal | undefined;
  /** Largest stdout kept before the program is killed; default 64 MiB. */
  maxStdoutBytes?: number;
}

const STDERR_TAIL_BYTES = 8 * 1024;
const DEFAULT_MAX_STDOUT_BYTES = 64 * 1024 * 1024;

const isMissing = (error: NodeJS.ErrnoException): boolean => error.code === 'ENOENT' || error.code === 'EACCES';

export const runProcess = (command: string, args: readonly string[], options: RunOptions): Promise<ProcessOutcome> =>
  new Promise((resolve) => {
    const { signal } = options;
    if (signal?.aborted) return resolve({ kind: 'aborted', reason: signal.reason });
    const maxStdout = options.maxStdoutBytes ?? DEFAULT_MAX_STDOUT_BYTES;
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], shell: false, windowsHide: true });
    const stdout: Buffer[] = [];
    let stdoutBytes = 0;
    let stderr = Buffer.alloc(0);
    let ending: ProcessOutcome | undefined;
    const kill = (outcome: ProcessOutcome) => {
      ending ??= outcome;
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => kill({ kind: 'timeout' }), options.timeoutMs);
    const onAbort = () => kill({ kind: 'aborted', reason: signal?.reason });
    signal?.addEventListener('abort', onAbort, { once: true });

    child.stdout.on('data', (chunk: Buffer) => {
      stdoutBytes += chunk.byteLength;
      if (stdoutBytes > maxStdout)
        return kill({ kind: 'failed', error: new Error(`${command} wrote more than ${maxStdout} bytes to stdout`) });
      stdout.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = Buffer.concat([stderr, chunk]);
      if (stderr.byteLength > STDERR_TAIL_BYTES) stderr = stderr.subarray(stderr.byteLength - STDERR_TAIL_BYTES);
    });
    let spawnError: NodeJS.ErrnoException | undefined;
    child.on('error', (error: NodeJS.ErrnoException) => {
      spawnError ??= error;
    });
    // 'close' follows 'error' when spawning fails, and comes after the pipes are drained otherwise.
    child.on('close', (exitCode, killedBy) => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (ending) return resolve(ending);
      if (spawnError)
        return resolve(
          isMissing(spawnError) ? { kind: 'missing', error: spawnError } : { kind: 'failed', error: spawnError },
        );
      const out = Buffer.concat(stdout).toString('utf8');
      const err = stderr.toString('utf8');
      if (killedBy) return resolve({ kind: 'signalled', signal: killedBy, stdout: out, stderr: err });
      resolve({ kind: 'exited', exitCode: exitCode ?? 1, stdout: out, stderr: err });
    });
  });

/** Whether `command` can be started at all (it exists on PATH, or at that path, and is executable). */
export const canRun = async (command: string, args: readonly string[]): Promise<boolean> => {
  const outcome = await runProcess(command, args, { timeoutMs: 10_000, maxStdoutBytes: 1024 * 1024 });
  return outcome.kind !== 'missing';
};

/** `canRun`, blocking: for choosing an adapter once while the service is wired. */
export const canRunSync = (command: string, args: readonly string[]): boolean => {
  const result = spawnSync(command, args, { stdio: 'ignore', shell: false, timeout: 10_000, windowsHide: true });
  const error = result.error;
  return !(error && isMissing(error));
};

/** The last line of `text` that says something (ffmpeg and pocketsphinx put the cause last). */
export const lastLine = (text: string, pattern?: RegExp): string | undefined => {
  const lines = text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter(Boolean);
  const matching = pattern ? lines.filter((line) => pattern.test(line)) : lines;
  return matching.at(-1) ?? lines.at(-1);
};
