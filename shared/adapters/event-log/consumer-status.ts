/**
 * A consumer's state for readiness, and the log lines that go with each change: one warning when
 * it starts retrying, one line when it recovers, one error when it ends on a fault. Both event-log
 * adapters keep their member's state here, so they report alike.
 */
import type { ConsumerLog, ConsumerStatus } from '../../ports/event-log.ts';

const describe = (error: unknown): string =>
  error instanceof Error ? `${error.name}: ${error.message}` : String(error);

export class ConsumerStatusTracker {
  private state: Omit<ConsumerStatus, 'partitions'> = { state: 'running', since: new Date() };

  constructor(
    private readonly log: ConsumerLog | undefined,
    private readonly fields: object,
  ) {}

  /** Working normally (again). */
  running(): void {
    if (this.state.state === 'running' || this.ended) return;
    if (this.state.state === 'retrying') {
      this.log?.info(
        { ...this.fields, retriedForMs: Date.now() - this.state.since.getTime() },
        'consumer recovered; consuming again',
      );
    }
    this.state = { state: 'running', since: new Date() };
  }

  /** A retriable failure: the member keeps its partitions and tries again. */
  retrying(error: unknown): void {
    if (this.ended) return;
    if (this.state.state === 'retrying') {
      this.state.error = describe(error);
      return;
    }
    this.log?.warn({ ...this.fields, err: error }, 'consumer cannot reach its backend; retrying until it answers');
    this.state = { state: 'retrying', since: new Date(), error: describe(error) };
  }

  stopped(): void {
    if (!this.ended) this.state = { state: 'stopped', since: new Date() };
  }

  failed(error: unknown): void {
    if (this.state.state === 'failed') return;
    this.log?.error({ ...this.fields, err: error }, 'consumer stopped on an error it cannot retry');
    this.state = { state: 'failed', since: new Date(), error: describe(error) };
  }

  snapshot(partitions: number): ConsumerStatus {
    return { ...this.state, partitions };
  }

  private get ended(): boolean {
    return this.state.state === 'stopped' || this.state.state === 'failed';
  }
}

/** Full-jitter backoff: random(0, min(maxMs, baseMs × 2^(attempt−1))), at least 1 ms. */
export const jitteredBackoff = (attempt: number, baseMs = 100, maxMs = 5000): number =>
  Math.max(1, Math.floor(Math.random() * Math.min(maxMs, baseMs * 2 ** Math.max(0, attempt - 1))));
