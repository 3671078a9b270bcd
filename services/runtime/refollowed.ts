/**
 * A subscription of the global feed that is followed again when it fails. Outages never reach
 * here (a subscription retries them in place); what does is an error it does not retry itself,
 * such as a handler's bug on one event. The feed is then subscribed to again, from wherever
 * `subscribe` starts it (the caller's last applied position), after a growing pause (`minMs` …
 * `maxMs`, back to the shortest once a new subscription caught up); meanwhile its status says it
 * failed, so readiness reports it. The in-memory state built from the team and call feeds (the
 * team directory, the open calls) thus never stays without its feed.
 */
import { jitteredBackoff } from '../../shared/adapters/event-log/consumer-status.ts';
import type { Subscription, SubscriptionStatus } from '../../shared/ports/event-store.ts';

export interface Refollowed {
  /** Resolves once the current subscription has handled every event present when called. */
  caughtUp(): Promise<void>;
  status(): SubscriptionStatus;
  stop(): Promise<void>;
}

export const refollowed = (
  subscribe: () => Subscription,
  options: { onFailed?: (error: unknown, retryInMs: number) => void; minMs?: number; maxMs?: number } = {},
): Refollowed => {
  let current: Subscription;
  let failures = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const follow = (): void => {
    const subscription = subscribe();
    current = subscription;
    subscription.caughtUp().then(
      () => (failures = 0),
      () => undefined,
    );
    subscription.done.catch((error: unknown) => {
      if (stopped) return;
      failures++;
      const retryInMs = jitteredBackoff(failures, options.minMs ?? 500, options.maxMs ?? 30_000);
      options.onFailed?.(error, retryInMs);
      timer = setTimeout(() => {
        if (!stopped) follow();
      }, retryInMs);
      timer.unref();
    });
  };
  follow();
  return {
    caughtUp: () => current.caughtUp(),
    status: () => current.status(),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await current.stop();
    },
  };
};
