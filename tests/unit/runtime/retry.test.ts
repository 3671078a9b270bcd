/**
 * The processor's retry with jittered exponential backoff: the delays come from the injected random
 * source, so each one is known; retriable errors are tried again up to the policy's attempts, a
 * terminal one or an abort ends at once; `sleep` waits on (mocked) time and gives way to an abort.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { backoffDelay, isRetriable, retrying, type RetryPolicy, sleep } from '../../../services/processor/retry.ts';
import { DomainError } from '../../../shared/domain/decider.ts';
import { settled } from '../../support/deferred.ts';

const policy: RetryPolicy = { maxAttempts: 4, baseDelayMs: 100, maxDelayMs: 300 };
const retriable = (message: string) => Object.assign(new Error(message), { retriable: true });
const terminal = (message: string) => Object.assign(new Error(message), { retriable: false });

/** Work that fails with each of `errors` in turn, then answers `value`; counts its calls. */
const failing = <T>(errors: Error[], value: T) => {
  let calls = 0;
  return {
    work: async () => {
      const error = errors[calls++];
      if (error) throw error;
      return value;
    },
    calls: () => calls,
  };
};

describe('backoffDelay', () => {
  test('full jitter: random × min(maxDelay, base × 2^(attempt-1)), rounded down', () => {
    assert.deepEqual(
      [1, 2, 3, 4, 10].map((attempt) => backoffDelay(policy, attempt, () => 0.5)),
      [50, 100, 150, 150, 150],
    );
    assert.equal(
      backoffDelay(policy, 1, () => 0),
      0,
    );
    assert.equal(
      backoffDelay(policy, 3, () => 0.999_999),
      299,
      'never reaches the ceiling',
    );
  });
});

describe('isRetriable', () => {
  test('errors are retriable unless they say retriable: false', () => {
    assert.equal(isRetriable(new Error('unknown')), true);
    assert.equal(isRetriable(retriable('x')), true);
    assert.equal(isRetriable(terminal('x')), false);
    assert.equal(isRetriable(undefined), true);
  });

  test('a DomainError is not: the domain refuses the same command on the same state again', () => {
    assert.equal(isRetriable(new DomainError('INVALID_MINUTES', 'actual minutes must be a whole number')), false);
  });
});

describe('retrying', () => {
  test('retriable errors are tried again after the jittered delays, and the result is returned', async () => {
    const { work, calls } = failing([retriable('a'), retriable('b')], 'done');
    const pauses: number[] = [];
    const retries: [string, number, number][] = [];
    const randoms = [0.5, 0.25];
    const result = await retrying(
      work,
      policy,
      new AbortController().signal,
      (error, attempt, delayMs) => retries.push([(error as Error).message, attempt, delayMs]),
      async (ms) => void pauses.push(ms),
      () => randoms.shift()!,
    );
    assert.equal(result, 'done');
    assert.equal(calls(), 3);
    assert.deepEqual(pauses, [50, 50]); // 0.5 × 100, then 0.25 × 200
    assert.deepEqual(retries, [
      ['a', 1, 50],
      ['b', 2, 50],
    ]);
  });

  test('after maxAttempts the last error is thrown', async () => {
    const { work, calls } = failing(
      [retriable('1'), retriable('2'), retriable('3'), retriable('4'), retriable('5')],
      'never',
    );
    const pauses: number[] = [];
    await assert.rejects(
      retrying(
        work,
        policy,
        new AbortController().signal,
        undefined,
        async (ms) => void pauses.push(ms),
        () => 1 - Number.EPSILON,
      ),
      /^Error: 4$/,
    );
    assert.equal(calls(), 4);
    assert.deepEqual(pauses, [99, 199, 299]);
  });

  test('a terminal error is thrown at once, without a pause', async () => {
    const { work, calls } = failing([terminal('bad input')], 'never');
    let paused = false;
    await assert.rejects(
      retrying(work, policy, new AbortController().signal, undefined, async () => void (paused = true)),
      /bad input/,
    );
    assert.equal(calls(), 1);
    assert.equal(paused, false);
  });

  test('a DomainError is thrown at once, without a pause', async () => {
    const { work, calls } = failing([new DomainError('INVALID_MINUTES', 'too many minutes')], 'never');
    let paused = false;
    await assert.rejects(
      retrying(work, policy, new AbortController().signal, undefined, async () => void (paused = true)),
      /too many minutes/,
    );
    assert.equal(calls(), 1);
    assert.equal(paused, false);
  });

  test('once the signal is aborted, a failure is not retried: the work’s error is thrown', async () => {
    const controller = new AbortController();
    const { work, calls } = failing([retriable('first'), retriable('second')], 'never');
    const pausing = async () => controller.abort(new Error('stopped'));
    await assert.rejects(
      retrying(work, policy, controller.signal, undefined, pausing, () => 0),
      /second/,
    );
    assert.equal(calls(), 2, 'no attempt after the one that failed while aborted');
  });
});

describe('sleep', () => {
  test('resolves once the time has passed, not before', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    let done = false;
    const sleeping = sleep(1000, new AbortController().signal).then(() => (done = true));
    t.mock.timers.tick(999);
    await settled();
    assert.equal(done, false);
    t.mock.timers.tick(1);
    await sleeping;
    assert.equal(done, true);
  });

  test('rejects with the signal’s reason when aborted first, or at once when already aborted', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const controller = new AbortController();
    const sleeping = sleep(60_000, controller.signal);
    controller.abort(new Error('shutting down'));
    await assert.rejects(sleeping, /shutting down/);
    await assert.rejects(sleep(10, controller.signal), /shutting down/);
  });

  test('retrying with the default pause waits on the timer', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const { work, calls } = failing([retriable('once')], 'ok');
    const result = retrying(work, policy, new AbortController().signal, undefined, undefined, () => 0.5);
    await settled();
    assert.equal(calls(), 1);
    t.mock.timers.tick(49);
    await settled();
    assert.equal(calls(), 1, 'still waiting out the 50 ms backoff');
    t.mock.timers.tick(1);
    assert.equal(await result, 'ok');
    assert.equal(calls(), 2);
  });
});
