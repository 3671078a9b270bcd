/**
 * A fixed number of permits shared fairly between teams: waiting teams are served round-robin (one
 * grant per team per turn, whatever the length of its queue), and no team holds more than
 * `perTeam` permits at once, even when others are free. Within a team, first come first served.
 * So one team's flood waits behind its own calls, never in front of another team's.
 */

/** Gives a permit back; calling it again does nothing. */
export type Release = () => void;

interface Waiter {
  grant: (release: Release) => void;
  cancel: () => void;
}

export class FairQueue {
  private readonly held = new Map<string, number>();
  private readonly queues = new Map<string, Waiter[]>();
  /** Teams with waiters, in the order they are served next. */
  private ring: string[] = [];
  private inUse = 0;

  constructor(
    readonly capacity: number,
    /** Most permits one team holds at once; default all of them. */
    readonly perTeam: number = capacity,
  ) {
    for (const [name, value] of [
      ['capacity', capacity],
      ['perTeam', perTeam],
    ] as const) {
      if (!Number.isSafeInteger(value) || value < 1)
        throw new RangeError(`${name} must be an integer ≥ 1, got ${value}`);
    }
  }

  /**
   * Resolves with a permit of `team` once its turn comes; rejects with the signal's reason when
   * the signal aborts first (the place in the queue is given up).
   */
  acquire(team: string, signal?: AbortSignal): Promise<Release> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const onAbort = () => waiter.cancel();
      const waiter: Waiter = {
        grant: (release) => {
          signal?.removeEventListener('abort', onAbort);
          resolve(release);
        },
        cancel: () => {
          const queue = this.queues.get(team) ?? [];
          const at = queue.indexOf(waiter);
          if (at >= 0) queue.splice(at, 1);
          if (queue.length === 0) this.forget(team);
          reject(signal?.reason);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      const queue = this.queues.get(team);
      if (queue) queue.push(waiter);
      else {
        this.queues.set(team, [waiter]);
        this.ring.push(team);
      }
      this.pump();
    });
  }

  /** Runs `work` holding a permit of `team`. */
  async run<T>(team: string, work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const release = await this.acquire(team, signal);
    try {
      return await work();
    } finally {
      release();
    }
  }

  /** Permits held right now. */
  get used(): number {
    return this.inUse;
  }

  /** Permits `team` holds right now. */
  heldBy(team: string): number {
    return this.held.get(team) ?? 0;
  }

  /** Waiters of `team`, or of every team. */
  waiting(team?: string): number {
    if (team !== undefined) return this.queues.get(team)?.length ?? 0;
    let count = 0;
    for (const queue of this.queues.values()) count += queue.length;
    return count;
  }

  /** Grants free permits to the first team of the ring under its cap, which then goes to the back. */
  private pump(): void {
    while (this.inUse < this.capacity) {
      const team = this.ring.find((t) => this.heldBy(t) < this.perTeam);
      if (team === undefined) return;
      const queue = this.queues.get(team)!;
      const waiter = queue.shift()!;
      this.ring = this.ring.filter((t) => t !== team);
      if (queue.length > 0) this.ring.push(team);
      else this.queues.delete(team);
      this.inUse++;
      this.held.set(team, this.heldBy(team) + 1);
      waiter.grant(this.releaser(team));
    }
  }

  private releaser(team: string): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inUse--;
      const left = this.heldBy(team) - 1;
      if (left > 0) this.held.set(team, left);
      else this.held.delete(team);
      this.pump();
    };
  }

  private forget(team: string): void {
    this.queues.delete(team);
    this.ring = this.ring.filter((t) => t !== team);
  }
}
