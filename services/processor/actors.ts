/**
 * One actor per call id: a call's work runs one at a time, different calls run concurrently up to
 * a bound. An actor lives while it has work and is passivated (forgotten) as soon as it has none;
 * its state is always reloaded from the event store, so nothing is lost by forgetting it.
 */

export interface ActorContext {
  callId: string;
  /** Aborted when the actor is stopped (revoked partition, shutdown, call timed out). */
  signal: AbortSignal;
}

export type ActorBehaviour = (context: ActorContext) => Promise<void>;

interface Actor {
  controller: AbortController;
  /** Another run was asked for while this one was running. */
  again: boolean;
  done: Promise<void>;
}

export class ActorSystem {
  private readonly actors = new Map<string, Actor>();
  private readonly waiting: (() => void)[] = [];
  private running = 0;

  constructor(
    private readonly behaviour: ActorBehaviour,
    private readonly concurrency: number,
    private readonly onError: (callId: string, error: unknown) => void,
  ) {}

  /** Asks the call's actor to (re)examine its call; starts one when none is alive. */
  wake(callId: string): void {
    const actor = this.actors.get(callId);
    if (actor) {
      actor.again = true;
      return;
    }
    const controller = new AbortController();
    const created: Actor = { controller, again: false, done: Promise.resolve() };
    this.actors.set(callId, created);
    created.done = this.live(callId, created);
  }

  /** Aborts the actor of a call, if alive; resolves when it has stopped. */
  async stop(callId: string, reason = 'stopped'): Promise<void> {
    const actor = this.actors.get(callId);
    if (!actor) return;
    actor.again = false;
    actor.controller.abort(new Error(reason));
    await actor.done;
  }

  /** Aborts every actor matching `select` (default all); resolves when they have stopped. */
  async stopAll(select: (callId: string) => boolean = () => true, reason = 'stopped'): Promise<void> {
    await Promise.all([...this.actors.keys()].filter(select).map((id) => this.stop(id, reason)));
  }

  has(callId: string): boolean {
    return this.actors.has(callId);
  }

  get size(): number {
    return this.actors.size;
  }

  private async live(callId: string, actor: Actor): Promise<void> {
    try {
      do {
        actor.again = false;
        await this.slot();
        try {
          if (!actor.controller.signal.aborted) await this.behaviour({ callId, signal: actor.controller.signal });
        } catch (error) {
          if (!actor.controller.signal.aborted) this.onError(callId, error);
        } finally {
          this.release();
        }
      } while (actor.again && !actor.controller.signal.aborted);
    } finally {
      this.actors.delete(callId);
    }
  }

  private slot(): Promise<void> {
    if (this.running < this.concurrency) {
      this.running++;
      return Promise.resolve();
    }
    return new Promise((resolve) => this.waiting.push(() => (this.running++, resolve())));
  }

  private release(): void {
    this.running--;
    this.waiting.shift()?.();
  }
}
