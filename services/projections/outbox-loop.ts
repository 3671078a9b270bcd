/**
 * The loop an outbox drainer runs on (the deal.outcome.updated publisher, the webhook delivery
 * worker): a pass runs when woken, wakes during a pass coalesce into one more pass, and between
 * passes it polls (at most every second: another process may have written the outbox). A pass
 * that fails is retried at the next poll; the outage is logged once when it starts and once when
 * it ends, and readiness reports it once it lasts too long.
 */
import type { Logger } from 'pino';
import type { ComponentReport } from '../runtime/health.ts';

const POLL_MS = 1000;

export interface OutboxLoopMessages {
  /** Logged once when passes start failing. */
  failed: string;
  /** Logged once when a pass succeeds again. */
  recovered: string;
  /** Readiness reason, followed by ` since <time>: <error>`. */
  failing: string;
}

export class OutboxLoop {
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;
  private again = false;
  private stopped = false;
  private failing: { since: Date; error: string } | undefined;

  /** `pass` drains what it can and may say when something next falls due (polled sooner if so). */
  constructor(
    private readonly pass: () => Promise<Date | undefined | void>,
    private readonly log: Logger,
    private readonly messages: OutboxLoopMessages,
  ) {}

  /** The pass under way, if any. */
  get current(): Promise<void> | undefined {
    return this.running;
  }

  report(retryingTooLong: (since: Date) => boolean): ComponentReport {
    if (this.failing && retryingTooLong(this.failing.since))
      return {
        ready: false,
        reason: `${this.messages.failing} since ${this.failing.since.toISOString()}: ${this.failing.error}`,
      };
    return { ready: true, ...(this.failing ? { retryingSince: this.failing.since.toISOString() } : {}) };
  }

  /** Runs a pass now, or one more after the pass under way. */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.running = this.pass()
      .then((nextDue) => {
        if (this.failing)
          this.log.info({ failedForMs: Date.now() - this.failing.since.getTime() }, this.messages.recovered);
        this.failing = undefined;
        return nextDue ?? undefined;
      })
      .catch((error: unknown) => {
        if (!this.failing) this.log.error({ err: error }, this.messages.failed);
        this.failing = { since: this.failing?.since ?? new Date(), error: (error as Error)?.message ?? String(error) };
        return undefined;
      })
      .then((nextDue) => {
        this.running = undefined;
        if (this.stopped) return;
        if (this.again) {
          this.again = false;
          this.wake();
          return;
        }
        const wait = nextDue === undefined ? POLL_MS : Math.min(POLL_MS, Math.max(10, nextDue.getTime() - Date.now()));
        this.timer = setTimeout(() => this.wake(), wait);
        this.timer.unref();
      });
  }

  /** No pass starts any more; resolves when the one under way has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }
}
