/**
 * Keeps a subscription running: when its handler fails (a backend down, say), it is started again
 * from its checkpoint after a growing pause (1 s … 30 s), and the failure is logged once per pause.
 */
import type { Logger } from 'pino';
import type { Subscription } from '../../shared/ports/event-store.ts';

export interface Supervised {
  /** Resolves once the current subscription has handled everything present when called. */
  caughtUp(): Promise<void>;
  stop(): Promise<void>;
}

export const supervised = (name: string, start: () => Subscription, logger: Logger): Supervised => {
  let current = start();
  let stopped = false;
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  const watch = (subscription: Subscription) => {
    subscription.done.then(
      () => undefined,
      (error: unknown) => {
        if (stopped) return;
        let delayMs = 0;
        if ((error as { code?: string }).code === 'CHECKPOINT_MISMATCH') {
          // Another writer (a replay that was activated) moved the checkpoint: follow it at once.
          logger.info({ subscription: name }, `${name}: checkpoint moved; resuming from it`);
        } else {
          failures++;
          delayMs = Math.min(30_000, 1000 * 2 ** Math.min(failures - 1, 5));
          logger.error({ err: error, subscription: name, retryInMs: delayMs }, `${name} failed; restarting from its checkpoint`);
        }
        timer = setTimeout(() => {
          if (stopped) return;
          current = start();
          watch(current);
        }, delayMs);
      },
    );
  };
  watch(current);
  return {
    caughtUp: () => current.caughtUp(),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await current.stop();
    },
  };
};
