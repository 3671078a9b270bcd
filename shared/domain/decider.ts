/**
 * The shape every aggregate of the domain takes (Jérémie Chassaing's "decider"):
 * `decide` turns a command into events given the current state, `evolve` folds one event into the
 * state, `initialState` is the state of a stream with no events.
 *
 * Both functions are pure: no clock, no random ids, no I/O. Time and ids travel inside commands
 * (`command.now`, `command.callId`), so a test states them and a replay reproduces them.
 */
export interface Decider<Command, State, Event> {
  /** Events the command produces in this state; `[]` when it changes nothing; throws DomainError when refused. */
  readonly decide: (command: Command, state: State) => Event[];
  /** The state after one more event. Never throws for an event `decide` could have produced. */
  readonly evolve: (state: State, event: Event) => State;
  /** State of a stream that has no events yet. */
  readonly initialState: State;
}

/** Folds events into a state, starting from the decider's initial state. */
export const foldEvents = <Command, State, Event>(
  decider: Decider<Command, State, Event>,
  events: readonly Event[],
): State => events.reduce(decider.evolve, decider.initialState);

/**
 * A command the domain refuses. `code` is a stable string (`CAPACITY_EXHAUSTED`) that the edge maps
 * to a status in one table; the domain knows nothing of HTTP.
 */
export class DomainError<Code extends string = string> extends Error {
  override readonly name = 'DomainError';
  /** Stable, machine-readable reason, e.g. `CAPACITY_EXHAUSTED`. */
  readonly code: Code;
  /** The command's field the refusal is about, when one is (`url` of a webhook, say). */
  readonly field: string | undefined;

  constructor(code: Code, message: string, options: { field?: string } = {}) {
    super(message);
    this.code = code;
    this.field = options.field;
  }
}

/** True when `error` is a DomainError, optionally with the given code. */
export const isDomainError = (error: unknown, code?: string): error is DomainError =>
  error instanceof DomainError && (code === undefined || error.code === code);
