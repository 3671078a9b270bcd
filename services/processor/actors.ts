/**
 * One actor per call id: a call's work runs one at a time, different calls run concurrently up to
 * a bound. An actor lives while it has work and is passivated (forgotten) as soon as it has none;
 * its state is always reloaded from the event store, so nothing is lost by forgetting it.
 *
 * The bound is a number of processing slots shared fairly between teams (`FairQueue`). An actor
 * holds a slot only while it works: it gives the slot back for anything that waits on the outside
 * world or on time (an audio download, a backoff sleep, the wait for a transcription permit) and
 * queues for one again afterwards, so calls that wait never keep other calls, or other teams, out.
 */
import type { FairQueue, Release } from './fair-queue.ts';

export interface ActorContext {
  callId: string;
  /** The team of the call: whose turn it takes in the fair queues. */
  teamId: string;
  /** Aborted when the actor is stopped (revoked partition, shutdown, call timed out). */
  signal: AbortSignal;
  /**
   * Runs `work` without holding a processing slot, then queues for a slot again. For waits: a
   * download, a sleep, another queue. Rejects with the signal's reason when aborted meanwhile.
   */
  outsideSlot<T>(work: () => Promise<T>): Promise<T>;
}

export type ActorBehaviour = (context: ActorContext) => Promise<void>;

interface Actor {
  teamId: string;
  controller: AbortController;
  /** Another run was asked for while this one was running. */
  again: boolean;
  done: Promise<void>;
}

export class ActorSystem {
  private readonly actors = new Map<string, Actor>();

  constructor(
    private readonly behaviour: ActorBehaviour,
    private readonly slots: FairQueue,
    private readonly onError: (callId: string, error: unknown) => void,
  ) {}

  /** Asks the call's actor to (re)examine its call; starts one when none is alive. */
  wake(callId: string, teamId: string): void {
    const actor = this.actors.get(callId);
    if (actor) {
      actor.again = true;
      return;
    }
    const controller = new AbortController();
    const created: Actor = { teamId, controller, again: false, done: Promise.resolve() };
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
    const { teamId } = actor;
    const { signal } = actor.controller;
    try {
      do {
        actor.again = false;
        let release: Release | undefined;
        const outsideSlot = async <T>(work: () => Promise<T>): Promise<T> => {
          release?.();
          release = undefined;
          try {
            return await work();
          } finally {
            release = await this.slots.acquire(teamId, signal);
          }
        };
        try {
          release = await this.slots.acquire(teamId, signal);
          await this.behaviour({ callId, teamId, signal, outsideSlot });
        } catch (error) {
          if (!signal.aborted) this.onError(callId, error);
        } finally {
          release?.();
        }
      } while (actor.again && !signal.aborted);
    } finally {
      this.actors.delete(callId);
    }
  }
}
