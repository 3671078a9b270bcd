/**
 * The I/O shell around a decider: read the stream, fold with `evolve`, `decide`, append with the
 * expected version, and retry a bounded number of times when another writer got there first.
 */
import type { Decider } from '../../shared/domain/decider.ts';
import { type EventStore, ExpectedVersionConflictError, type Json } from '../../shared/ports/event-store.ts';

export interface Versioned<State> {
  state: State;
  /** Revision of the stream's last event; -1 when the stream has none. */
  version: number;
}

export interface DomainEvent {
  type: string;
  data: unknown;
}

/** Where folded states are kept between commands, so a load reads only newer events. */
export interface StateCache<State> {
  get(id: string): Versioned<State> | undefined;
  /** Stores `value` unless the cache already holds a newer version. */
  set(id: string, value: Versioned<State>): void;
}

export interface RepositoryOptions<State> {
  cache?: StateCache<State>;
  /** Attempts after a version conflict before giving up; default 10. */
  maxRetries?: number;
}

export class AggregateRepository<Command, State, Event extends DomainEvent> {
  /** Commands for one aggregate run one at a time in this process; conflicts then only come from other processes. */
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(
    private readonly store: EventStore,
    private readonly decider: Decider<Command, State, Event>,
    private readonly streamIdOf: (id: string) => string,
    private readonly options: RepositoryOptions<State> = {},
  ) {}

  /** Current state: the cached fold (when caching) plus any newer events from the store. */
  async load(id: string): Promise<Versioned<State>> {
    const cached = this.options.cache?.get(id);
    let { state, version } = cached ?? { state: this.decider.initialState, version: -1 };
    const events = await this.store.readStream(this.streamIdOf(id), { fromRevision: version + 1 });
    for (const event of events) {
      state = this.decider.evolve(state, { type: event.type, data: event.data } as Event);
      version = event.revision;
    }
    const loaded = { state, version };
    this.options.cache?.set(id, loaded);
    return loaded;
  }

  /**
   * Decides `command` against the current state and appends the result. DomainErrors from `decide`
   * propagate unchanged; a version conflict reloads and decides again.
   */
  handle(id: string, command: Command, metadata?: Record<string, Json>): Promise<Versioned<State> & { events: Event[] }> {
    const previous = this.queues.get(id) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(() => this.decideAndAppend(id, command, metadata));
    const tail = run.catch(() => undefined);
    this.queues.set(id, tail);
    void tail.then(() => {
      if (this.queues.get(id) === tail) this.queues.delete(id);
    });
    return run;
  }

  private async decideAndAppend(id: string, command: Command, metadata?: Record<string, Json>): Promise<Versioned<State> & { events: Event[] }> {
    const attempts = (this.options.maxRetries ?? 10) + 1;
    for (let attempt = 1; ; attempt++) {
      const current = await this.load(id);
      const events = this.decider.decide(command, current.state);
      if (events.length === 0) return { ...current, events };
      try {
        const result = await this.store.append(
          this.streamIdOf(id),
          events.map((e) => ({ type: e.type, data: e.data as Json, ...(metadata ? { metadata } : {}) })),
          { expectedVersion: current.version === -1 ? 'no_stream' : current.version },
        );
        const state = events.reduce(this.decider.evolve, current.state);
        const next = { state, version: result.nextExpectedVersion };
        this.options.cache?.set(id, next);
        return { ...next, events };
      } catch (error) {
        if (!(error instanceof ExpectedVersionConflictError) || attempt >= attempts) throw error;
      }
    }
  }
}
