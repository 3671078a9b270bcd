/**
 * In-memory timers for call deadlines. Durability comes from the event store: deadlines are
 * re-armed from the open calls after every restart or rebalance, and a timer that fires late or
 * twice is harmless (a timeout after completion does nothing).
 */
const MAX_TIMER_MS = 2 ** 31 - 1;

export class Deadlines {
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly onDue: (callId: string) => void,
    private readonly now: () => number = Date.now,
  ) {}

  arm(callId: string, deadline: string): void {
    this.disarm(callId);
    const due = Date.parse(deadline);
    const schedule = () => {
      const wait = due - this.now();
      if (wait <= 0) {
        this.timers.delete(callId);
        this.onDue(callId);
        return;
      }
      const timer = setTimeout(schedule, Math.min(wait, MAX_TIMER_MS));
      timer.unref();
      this.timers.set(callId, timer);
    };
    schedule();
  }

  disarm(callId: string): void {
    clearTimeout(this.timers.get(callId));
    this.timers.delete(callId);
  }

  disarmAll(select: (callId: string) => boolean = () => true): void {
    for (const callId of [...this.timers.keys()]) if (select(callId)) this.disarm(callId);
  }

  has(callId: string): boolean {
    return this.timers.has(callId);
  }

  get size(): number {
    return this.timers.size;
  }
}
