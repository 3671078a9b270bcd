/**
 * The I/O shell around a decider: read the stream, fold with `evolve`, `decide`, append with the
 * expected version, and retry a bounded number of times when another writer got there first, after
 * a short jittered pause so that two writers of one stream stop colliding in lockstep. Events are
 * read and written through the aggregate's catalogue: a stored event that does not decode refuses
 * the load with an EventDecodeError naming its stream, revision and field, and is never folded.
 */
import type { Decider } from '../../shared/domain/decider.ts';
import type { EventCatalogue, TypedEvent } from '../../shared/domain/event-catalogue.ts';
import { type EventStore, ExpectedVersionConflictError, type Json } from '../../shared/ports/event-store.ts';

export interface Versioned<State> {
  state: State;
  /** Revision of the stream's last event; -1 when the stream has none. */
  version: number;
}

/** Where folded states are kept between commands, so a load reads only newer events. */
export interface StateCache<State> {
  get(id: string): Versioned<State> | undefined;
  /** Stores `value` unless the cache already holds a newer version. */
  set(id: string, value: Versioned<State>): void;
}

/** A StateCache in a plain Map: for aggregates whose streams grow long (a team's). */
export class MemoryStateCache<State> implements StateCache<State> {
  private readonly states = new Map<string, Versioned<State>>();

  get(id: string): Versioned<State> | undefined {
    return this.states.get(id);
  }

  set(id: string, value: Versioned<State>): void {
    const held = this.states.get(id);
    if (!held || held.version < value.version) this.states.set(id, value);
  }
}

/**
 * A StateCache of at most `capacity` states, the least recently stored dropped first: for the
 * streams a process is working on (calls in the pipeline), so each step reads only the events
 * appended since its last one instead of the whole stream.
 */
export class BoundedStateCache<State> implements StateCache<State> {
  private readonly states = new Map<string, Versioned<State>>();

  constructor(private readonly capacity = 10_000) {}

  get(id: string): Versioned<State> | undefined {
    return this.states.get(id);
  }

  set(id: string, value: Versioned<State>): void {
    const held = this.states.get(id);
    if (held && held.version >= value.version) return;
    this.states.delete(id);
    this.states.set(id, value);
    if (this.states.size > this.capacity) this.states.delete(this.states.keys().next().value!);
  }

  /** Forgets a state (its stream is done with). */
  delete(id: string): void {
    this.states.delete(id);
  }

  get size(): number {
    return this.states.size;
  }
}

export interface RepositoryOptions<State> {
  cache?: StateCache<State>;
  /** Attempts after a version conflict before giving up; default 10. */
  maxRetries?: number;
  /**
   * Pause before retry n: a random time up to min(maxDelayMs, baseDelayMs × 2^(n-1)) ("full
   * jitter"). Default 2 ms doubling to at most 100 ms, so ten retries wait under a second in all.
   */
  conflictBackoff?: { baseDelayMs: number; maxDelayMs: number };
  /**
   * Decide against the cached state without reading the stream first; the append's expected
   * version is the check. A batch that appends nothing, or in which a command is refused, proves
   * nothing about the state, so the stream is read then, and the batch decided again when it had
   * moved on. For streams this process writes most (a team's, whose cache also follows the feed):
   * a command that appends costs no read.
   */
  decideOnCachedState?: boolean;
  /** Every command's `deferDurability` unless it says otherwise (see HandleOptions). */
  deferDurability?: boolean;
}

const DEFAULT_BACKOFF = { baseDelayMs: 2, maxDelayMs: 100 };

/** How one command is handled. */
export interface HandleOptions {
  /**
   * The stream most likely does not exist yet (a call's first event): the command is decided on the
   * initial state without reading the stream, and the append's "no stream" expectation is the
   * check; when the stream does exist it is read and the command decided again.
   */
  expectNew?: boolean;
  /**
   * Resolve once the events are committed, not yet durable: the caller's next write to the same
   * database covers them (see the event store's `deferDurability`). A batch defers only when each
   * of its commands does.
   */
  deferDurability?: boolean;
}

interface Pending<Command, State, Event> {
  command: Command;
  metadata?: Record<string, Json>;
  deferDurability?: boolean;
  expectNew?: boolean;
  resolve: (result: Versioned<State> & { events: Event[] }) => void;
  reject: (error: unknown) => void;
}

/** What deciding one command of a batch gave: its events and the state after them, or its refusal. */
type Decision<State, Event> = { produced: Event[]; state: State } | { error: unknown };

/** Most commands decided together and appended in one go. */
const MAX_BATCH = 500;

/**
 * Commands for one aggregate are handled one batch at a time in this process: the commands that
 * queued up while the previous batch was being written are decided one after the other against
 * the evolving state and appended together, with one expected version (one transaction, one
 * fsync). A command the domain refuses fails alone. Conflicts then only come from other processes;
 * on one the whole batch is decided again from the stored state.
 */
export class AggregateRepository<Command, State, Event extends TypedEvent> {
  private readonly pending = new Map<string, Pending<Command, State, Event>[]>();

  constructor(
    private readonly store: EventStore,
    private readonly decider: Decider<Command, State, Event>,
    private readonly catalogue: EventCatalogue<Event>,
    private readonly options: RepositoryOptions<State> = {},
  ) {}

  /** Current state: the cached fold (when caching) plus any newer events from the store. */
  async load(id: string): Promise<Versioned<State>> {
    const cached = this.options.cache?.get(id);
    let { state, version } = cached ?? { state: this.decider.initialState, version: -1 };
    const events = await this.store.readStream(this.catalogue.streamId(id), { fromRevision: version + 1 });
    for (const event of events) {
      state = this.decider.evolve(state, this.catalogue.decode(event));
      version = event.revision;
    }
    const loaded = { state, version };
    this.options.cache?.set(id, loaded);
    return loaded;
  }

  /**
   * The state this process last loaded or wrote, without reading the stream; loaded when it holds
   * none. For a writer that goes on from its own last command: another process's write shows at
   * its next command, whose append then conflicts (or, deciding on cached state, whose refusal)
   * makes the repository read the stream and decide again.
   */
  async current(id: string): Promise<Versioned<State>> {
    return this.options.cache?.get(id) ?? this.load(id);
  }

  /**
   * Decides `command` against the current state and appends the result; resolves with the events
   * and the state right after them. DomainErrors from `decide` reject unchanged.
   */
  handle(
    id: string,
    command: Command,
    metadata?: Record<string, Json>,
    options: HandleOptions = {},
  ): Promise<Versioned<State> & { events: Event[] }> {
    return new Promise((resolve, reject) =>
      this.enqueue(id, [
        {
          command,
          metadata,
          resolve,
          reject,
          deferDurability: options.deferDurability ?? this.options.deferDurability,
          expectNew: options.expectNew,
        },
      ]),
    );
  }

  /**
   * Handles `commands` in order as one batch: each is decided against the state the ones before it
   * left, and their events (each with its command's metadata) are appended together, in one
   * transaction. Resolves with one outcome per command: what `handle` would resolve with, or the
   * error that refused it (a DomainError of its own, or the batch's failure to append, which every
   * command then carries).
   */
  handleMany(
    id: string,
    commands: ReadonlyArray<{ command: Command; metadata?: Record<string, Json> }>,
    options: HandleOptions = {},
  ): Promise<Array<(Versioned<State> & { events: Event[] }) | { error: unknown }>> {
    const deferDurability = options.deferDurability ?? this.options.deferDurability;
    const { expectNew } = options;
    type Outcome = (Versioned<State> & { events: Event[] }) | { error: unknown };
    const outcomes = commands.map(() => Promise.withResolvers<Outcome>());
    // Queued together, so that one batch takes them all.
    this.enqueue(
      id,
      commands.map(({ command, metadata }, i) => ({
        command,
        metadata,
        deferDurability,
        expectNew,
        resolve: outcomes[i]!.resolve,
        reject: (error: unknown) => outcomes[i]!.resolve({ error }),
      })),
    );
    return Promise.all(outcomes.map((o) => o.promise));
  }

  private enqueue(id: string, entries: Pending<Command, State, Event>[]): void {
    const queue = this.pending.get(id);
    if (queue) {
      queue.push(...entries);
      return;
    }
    this.pending.set(id, entries);
    void this.drain(id);
  }

  private async drain(id: string): Promise<void> {
    const queue = this.pending.get(id)!;
    while (queue.length > 0) {
      const batch = queue.splice(0, MAX_BATCH);
      await this.runBatch(id, batch).catch((error: unknown) => {
        for (const p of batch) p.reject(error);
      });
    }
    this.pending.delete(id);
  }

  private pauseBeforeRetry(attempt: number): Promise<void> {
    const { baseDelayMs, maxDelayMs } = this.options.conflictBackoff ?? DEFAULT_BACKOFF;
    const ceiling = Math.min(maxDelayMs, baseDelayMs * 2 ** Math.min(attempt - 1, 20));
    return new Promise((resolve) => setTimeout(resolve, Math.random() * ceiling));
  }

  private async runBatch(id: string, batch: Pending<Command, State, Event>[]): Promise<void> {
    const attempts = (this.options.maxRetries ?? 10) + 1;
    for (let attempt = 1; ; attempt++) {
      const held = attempt === 1 ? this.options.cache?.get(id) : undefined;
      const cached =
        attempt !== 1
          ? undefined
          : this.options.decideOnCachedState && held
            ? held
            : !held && batch.every((p) => p.expectNew)
              ? { state: this.decider.initialState, version: -1 }
              : undefined;
      const current = cached ?? (await this.load(id));
      let state = current.state;
      const outcomes: Decision<State, Event>[] = batch.map((p) => {
        try {
          const produced = this.decider.decide(p.command, state);
          state = produced.reduce(this.decider.evolve, state);
          return { produced, state };
        } catch (error) {
          return { error };
        }
      });
      const toAppend = outcomes.flatMap((o, i) =>
        'produced' in o ? o.produced.map((e) => this.catalogue.encode(e, batch[i]!.metadata)) : [],
      );
      if (cached && outcomes.some((o) => 'error' in o || o.produced.length === 0)) {
        // Only an append checks a cached state: read what the stream holds past it.
        const stored = await this.load(id);
        if (stored.version !== cached.version) continue;
      }
      if (toAppend.length > 0) {
        try {
          await this.store.append(this.catalogue.streamId(id), toAppend, {
            expectedVersion: current.version === -1 ? 'no_stream' : current.version,
            ...(batch.every((p) => p.deferDurability) ? { deferDurability: true } : {}),
          });
        } catch (error) {
          if (!(error instanceof ExpectedVersionConflictError) || attempt >= attempts) throw error;
          await this.pauseBeforeRetry(attempt);
          continue;
        }
        this.options.cache?.set(id, { state, version: current.version + toAppend.length });
      }
      let version = current.version;
      outcomes.forEach((o, i) => {
        if ('error' in o) return batch[i]!.reject(o.error);
        version += o.produced.length;
        batch[i]!.resolve({ state: o.state, version, events: o.produced });
      });
      return;
    }
  }
}
