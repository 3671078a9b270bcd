/**
 * Runs a service until SIGTERM or SIGINT, then stops it gracefully (in-flight work finishes, the
 * database closes cleanly); a stop that hangs past 15 s exits non-zero. Start-up failures print one
 * clear line. Once running, an uncaught exception or unhandled rejection is logged (level fatal,
 * with its stack) before the process exits with 1.
 */
import type { Logger } from 'pino';
import { isBackendUnavailable } from '../../shared/ports/unavailable.ts';
import { keepMemoryReducerWorking } from './memory-reducer.ts';

export interface Running {
  logger: Logger;
  stop(): Promise<void>;
}

const KNOWN_START_ERRORS = new Set(['CONFIG_INVALID', 'DATA_DIR_LOCKED']);

export const runUntilSignal = (name: string, start: () => Promise<Running>): void => {
  // V8 gives back what a burst grew only with this (memory-reducer.ts).
  keepMemoryReducerWorking();
  start().then(
    (running) => {
      let stopping = false;
      const stop = async (signal: string) => {
        if (stopping) return;
        stopping = true;
        running.logger.info({ signal }, `${name}: shutting down`);
        const force = setTimeout(() => {
          running.logger.error(`${name}: shutdown took longer than 15 s; exiting`);
          process.exit(1);
        }, 15_000);
        force.unref();
        try {
          await running.stop();
          running.logger.info(`${name}: stopped cleanly`);
        } catch (error) {
          running.logger.error({ err: error }, `${name}: shutdown failed`);
          process.exitCode = 1;
        } finally {
          clearTimeout(force);
        }
      };
      process.once('SIGTERM', () => void stop('SIGTERM'));
      process.once('SIGINT', () => void stop('SIGINT'));
      // An error nothing handled leaves the process in an unknown state: it exits, as Node would,
      // but says so in the structured log first, with the stack. What was acknowledged is durable
      // and a restart resumes the rest.
      const fatal = (what: string) => (error: unknown) => {
        running.logger.fatal({ err: error }, `${name}: ${what}; exiting`);
        running.logger.flush();
        process.exit(1);
      };
      process.on('uncaughtException', fatal('uncaught exception'));
      process.on('unhandledRejection', fatal('unhandled rejection'));
    },
    (error: unknown) => {
      // A backend that does not answer is no bug: its message says which and why, a stack nothing more.
      const unavailable = isBackendUnavailable(error);
      const known = unavailable || KNOWN_START_ERRORS.has((error as { code?: string }).code ?? '');
      const line = known ? (error as Error).message : (error as Error).stack;
      const hint = unavailable ? ' (check its address in the environment and that it runs; nothing was started)' : '';
      process.stderr.write(`${name} failed to start: ${line}${hint}\n`);
      process.exit(1);
    },
  );
};
