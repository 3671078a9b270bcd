/**
 * Decider tests that read like the spec:
 *
 *   const { given } = deciderSpec(teamDecider);
 *   given([teamCreated]).when(reserve).then([capacityReserved]);
 *   given([]).when(reserve).thenThrows('TEAM_NOT_FOUND');
 *
 * `then` also folds the produced events through `evolve`, so an event `decide` emits but `evolve`
 * cannot apply fails the test where it is produced.
 */
import assert from 'node:assert/strict';
import { DomainError, foldEvents, type Decider } from '../../shared/domain/decider.ts';

export interface WhenStep<State, Event> {
  /** Asserts that the command yields exactly these events (deep, strict equality, in order). */
  then(expected: readonly Event[]): void;
  /** Asserts that the command yields no event. */
  thenNothing(): void;
  /** Asserts that the command is refused with a DomainError carrying this code; returns it. */
  thenThrows(code: string): DomainError;
  /** The state after the given events and the events this command produced. */
  stateAfter(): State;
}

export interface GivenStep<Command, State, Event> {
  when(command: Command): WhenStep<State, Event>;
  /** The state the given events fold into. */
  state(): State;
}

export const deciderSpec = <Command, State, Event>(decider: Decider<Command, State, Event>) => ({
  given: (events: readonly Event[]): GivenStep<Command, State, Event> => {
    const state = (): State => foldEvents(decider, events);
    return {
      state,
      when: (command: Command): WhenStep<State, Event> => {
        const run = (): { produced: Event[]; after: State } => {
          const before = state();
          const produced = decider.decide(command, before);
          return { produced, after: produced.reduce(decider.evolve, before) };
        };
        return {
          then: (expected) => assert.deepStrictEqual(run().produced, expected),
          thenNothing: () => assert.deepStrictEqual(run().produced, []),
          stateAfter: () => run().after,
          thenThrows: (code) => {
            let produced: Event[] | undefined;
            try {
              produced = decider.decide(command, state());
            } catch (error) {
              assert.ok(error instanceof DomainError, `expected a DomainError ${code}, got ${String(error)}`);
              assert.equal(error.code, code, `expected ${code}, got ${error.code}: ${error.message}`);
              return error;
            }
            assert.fail(`expected DomainError ${code}, got events ${JSON.stringify(produced)}`);
          },
        };
      },
    };
  },
});
