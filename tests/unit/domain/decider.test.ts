import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DomainError, foldEvents, isDomainError, type Decider } from '../../../shared/domain/decider.ts';
import { deciderSpec } from '../../support/decider-spec.ts';

// A counter that may not go above 2: the smallest decider with a refusal.
type Command = { type: 'Increment' };
type Event = { type: 'Incremented' };
const counter: Decider<Command, number, Event> = {
  initialState: 0,
  evolve: (n) => n + 1,
  decide: (_, n) => {
    if (n >= 2) throw new DomainError('LIMIT_REACHED', 'at most 2');
    return [{ type: 'Incremented' }];
  },
};
const { given } = deciderSpec(counter);
const inc: Command = { type: 'Increment' };
const incremented: Event = { type: 'Incremented' };

test('foldEvents replays events from the initial state', () => {
  assert.equal(foldEvents(counter, [incremented, incremented]), 2);
  assert.equal(given([incremented]).state(), 1);
});

test('given/when/then passes on the expected events and fails on others', () => {
  given([]).when(inc).then([incremented]);
  assert.throws(() => given([]).when(inc).then([]), assert.AssertionError);
  assert.throws(() => given([]).when(inc).thenNothing(), assert.AssertionError);
  assert.equal(given([incremented]).when(inc).stateAfter(), 2);
});

test('thenThrows passes on the expected code and fails on another code or on no error', () => {
  const error = given([incremented, incremented]).when(inc).thenThrows('LIMIT_REACHED');
  assert.equal(error.message, 'at most 2');
  assert.throws(() => given([incremented, incremented]).when(inc).thenThrows('OTHER'), assert.AssertionError);
  assert.throws(() => given([]).when(inc).thenThrows('LIMIT_REACHED'), assert.AssertionError);
});

test('DomainError carries a code and a message, no HTTP status', () => {
  const error = new DomainError('CAPACITY_EXHAUSTED', 'no minutes left');
  assert.deepEqual(
    { name: error.name, code: error.code, message: error.message },
    { name: 'DomainError', code: 'CAPACITY_EXHAUSTED', message: 'no minutes left' },
  );
  assert.ok(error instanceof Error);
  assert.equal('status' in error, false);
  assert.ok(
    isDomainError(error) &&
      isDomainError(error, 'CAPACITY_EXHAUSTED') &&
      !isDomainError(error, 'X') &&
      !isDomainError(new Error('x')),
  );
});
