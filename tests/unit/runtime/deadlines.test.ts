/**
 * The processor's deadline timers on mocked time and an injected clock: a deadline fires once, at
 * its time and not before; arming again replaces it; disarmed ones never fire; a deadline past the
 * longest timer Node allows is reached in steps; a timer that the clock says is early waits again.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, mock, test } from 'node:test';
import { Deadlines } from '../../../services/processor/deadlines.ts';

const MAX_TIMER_MS = 2 ** 31 - 1;
const START = Date.parse('2026-11-20T10:00:00.000Z');
const at = (ms: number) => new Date(START + ms).toISOString();

describe('Deadlines', () => {
  let clock: number;
  let fired: string[];
  let deadlines: Deadlines;
  /** Moves the injected clock and the mocked timers together. */
  let advance: (ms: number) => void;

  beforeEach(() => {
    mock.timers.enable({ apis: ['setTimeout'] });
    clock = START;
    fired = [];
    deadlines = new Deadlines(
      (callId) => fired.push(callId),
      () => clock,
    );
    advance = (ms) => {
      clock += ms;
      mock.timers.tick(ms);
    };
  });
  afterEach(() => mock.timers.reset());

  test('a deadline fires once, at its time and not before, and is forgotten', () => {
    deadlines.arm('c1', at(5000));
    assert.equal(deadlines.has('c1'), true);
    advance(4999);
    assert.deepEqual(fired, []);
    advance(1);
    assert.deepEqual(fired, ['c1']);
    assert.equal(deadlines.has('c1'), false);
    advance(60_000);
    assert.deepEqual(fired, ['c1'], 'not again');
  });

  test('a deadline already past fires at once, while arming', () => {
    deadlines.arm('late', at(-1));
    deadlines.arm('now', at(0));
    deadlines.arm('soon', at(1));
    assert.deepEqual(fired, ['late', 'now']);
    assert.equal(deadlines.size, 1);
    advance(1);
    assert.deepEqual(fired, ['late', 'now', 'soon']);
  });

  test('arming a call again replaces its deadline', () => {
    deadlines.arm('c1', at(1000));
    deadlines.arm('c1', at(3000));
    assert.equal(deadlines.size, 1);
    advance(2999);
    assert.deepEqual(fired, []);
    advance(1);
    assert.deepEqual(fired, ['c1']);
  });

  test('a disarmed deadline never fires; disarmAll takes the selected ones only', () => {
    for (const id of ['a1', 'a2', 'b1']) deadlines.arm(id, at(1000));
    deadlines.disarm('a1');
    deadlines.disarmAll((id) => id.startsWith('b'));
    assert.deepEqual([deadlines.has('a1'), deadlines.has('a2'), deadlines.has('b1')], [false, true, false]);
    advance(1000);
    assert.deepEqual(fired, ['a2']);
    deadlines.arm('c', at(2000));
    deadlines.disarmAll();
    advance(5000);
    assert.deepEqual(fired, ['a2']);
    assert.equal(deadlines.size, 0);
  });

  test('a deadline beyond the longest timer (about 24.8 days) is reached in steps and fires on time', () => {
    // Node fires a longer timer after 1 ms (TimeoutOverflowWarning); mocked timers do not, so the
    // delays asked for are recorded.
    const delays: number[] = [];
    const mocked = globalThis.setTimeout;
    globalThis.setTimeout = ((handler: () => void, ms?: number) => {
      delays.push(ms ?? 0);
      return mocked(handler, ms);
    }) as typeof setTimeout;
    const thirtyDays = 30 * 24 * 3600 * 1000;
    try {
      deadlines.arm('long', at(thirtyDays));
    } finally {
      globalThis.setTimeout = mocked;
    }
    assert.deepEqual(delays, [MAX_TIMER_MS], 'no timer longer than Node allows');
    advance(MAX_TIMER_MS);
    assert.deepEqual(fired, [], 'the first timer ends before the deadline');
    assert.equal(deadlines.has('long'), true, 're-armed for the rest');
    advance(thirtyDays - MAX_TIMER_MS - 1);
    assert.deepEqual(fired, []);
    advance(1);
    assert.deepEqual(fired, ['long']);
  });

  test('a timer that fires while the clock says the deadline is still ahead waits for the rest', () => {
    deadlines.arm('c1', at(1000));
    // The timer runs its 1000 ms but the clock moved only 400 ms (it was set back meanwhile).
    clock += 400;
    mock.timers.tick(1000);
    assert.deepEqual(fired, []);
    assert.equal(deadlines.has('c1'), true);
    advance(599);
    assert.deepEqual(fired, []);
    advance(1);
    assert.deepEqual(fired, ['c1']);
  });
});
