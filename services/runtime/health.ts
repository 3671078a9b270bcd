/**
 * What this process knows about its own health, for GET /readyz: each long-running part (the
 * processor's consumer, each projection, each feed subscription) registers a check that says
 * whether it is doing its job and, when not, why. Backends answering is not enough: a consumer
 * that lost its partitions or a projection stopped on a bad event leaves the process unready.
 */

export interface ComponentReport {
  ready: boolean;
  /** Why it is not ready (or a note while it is). */
  reason?: string;
  [detail: string]: unknown;
}

export interface HealthReport {
  ready: boolean;
  components: Record<string, ComponentReport>;
}

/** How long a part may keep retrying a backend before the process says it is not ready; default 30 s. */
export const DEFAULT_RETRY_THRESHOLD_MS = 30_000;

export class Health {
  private readonly checks = new Map<string, () => ComponentReport>();

  constructor(readonly retryThresholdMs: number = DEFAULT_RETRY_THRESHOLD_MS) {}

  /** Adds (or replaces) a part's check; returns the function that removes it. */
  register(name: string, check: () => ComponentReport): () => void {
    this.checks.set(name, check);
    return () => {
      if (this.checks.get(name) === check) this.checks.delete(name);
    };
  }

  report(): HealthReport {
    const components: Record<string, ComponentReport> = {};
    for (const [name, check] of this.checks) {
      try {
        components[name] = check();
      } catch (error) {
        components[name] = { ready: false, reason: `health check failed: ${(error as Error).message}` };
      }
    }
    return { ready: Object.values(components).every((c) => c.ready), components };
  }

  /** A part retrying since `since` is ready until the threshold has passed. */
  retryingTooLong(since: Date | undefined, now = Date.now()): boolean {
    return since !== undefined && now - since.getTime() > this.retryThresholdMs;
  }
}
