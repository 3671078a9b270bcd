/**
 * Group commit with a flush the test holds and releases by hand: requests of one turn share a
 * flush; requests that arrive while a flush runs go together into the next; the window and the
 * batch bound hold; an item's own Error fails it alone, a thrown error fails its whole batch.
 */
import assert from 'node:assert/strict';
import { afterEach, describe, mock, test } from 'node:test';
import { GroupCommit } from '../../../shared/adapters/group-commit.ts';
import { type Deferred, deferred, settled } from '../../support/deferred.ts';

/** A flush that records each batch and waits for the test to answer it. */
const heldFlush = () => {
  const batches: number[][] = [];
  const answers: Deferred<(number | Error)[]>[] = [];
  const flush = (items: number[]) => {
    batches.push(items);
    const answer = deferred<(number | Error)[]>();
    answers.push(answer);
    return answer.promise;
  };
  /** Answers batch `i` with each item doubled. */
  const answer = (i: number) => answers[i]!.resolve(batches[i]!.map((n) => n * 2));
  return { flush, batches, answers, answer };
};

describe('GroupCommit', () => {
  afterEach(() => mock.timers.reset());

  test('requests of one turn share one flush; each gets its own result, in order', async () => {
    const flushes: number[][] = [];
    const group = new GroupCommit<number, number>((items) => {
      flushes.push(items);
      return items.map((n) => n * 10);
    });
    assert.deepEqual(await Promise.all([group.submit(1), group.submit(2), group.submit(3)]), [10, 20, 30]);
    assert.deepEqual(flushes, [[1, 2, 3]]);
  });

  test('requests that arrive while a flush runs are handed to the next flush together', async () => {
    const { flush, batches, answer } = heldFlush();
    const group = new GroupCommit<number, number>(flush);
    const first = group.submit(1);
    await settled();
    assert.deepEqual(batches, [[1]]);
    const later = [group.submit(2), group.submit(3), group.submit(4)];
    await settled();
    assert.deepEqual(batches, [[1]], 'no second flush while the first runs');
    answer(0);
    assert.equal(await first, 2);
    await settled();
    assert.deepEqual(batches, [[1], [2, 3, 4]]);
    answer(1);
    assert.deepEqual(await Promise.all(later), [4, 6, 8]);
  });

  test('at most maxBatch items go in one flush', async () => {
    const flushes: number[][] = [];
    const group = new GroupCommit<number, number>((items) => (flushes.push(items), items), { maxBatch: 2 });
    await Promise.all([1, 2, 3, 4, 5].map((n) => group.submit(n)));
    assert.deepEqual(flushes, [[1, 2], [3, 4], [5]]);
  });

  test('with a window, the flush waits windowMs after the first request and takes what came meanwhile', async () => {
    mock.timers.enable({ apis: ['setTimeout', 'setImmediate'] });
    const flushes: number[][] = [];
    const group = new GroupCommit<number, number>((items) => (flushes.push(items), items), { windowMs: 5 });
    const a = group.submit(1);
    mock.timers.tick(4);
    const b = group.submit(2);
    await settled();
    assert.deepEqual(flushes, [], 'nothing flushed before the window ends');
    mock.timers.tick(1);
    assert.deepEqual(await Promise.all([a, b]), [1, 2]);
    assert.deepEqual(flushes, [[1, 2]]);
  });

  test('an Error outcome fails its item alone; the others of the batch succeed', async () => {
    const group = new GroupCommit<number, number>((items) =>
      items.map((n) => (n === 2 ? new Error(`conflict on ${n}`) : n)),
    );
    const results = await Promise.allSettled([group.submit(1), group.submit(2), group.submit(3)]);
    assert.deepEqual(
      results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message)),
      [1, 'conflict on 2', 3],
    );
  });

  test('a thrown error fails the whole batch, and the next batch is flushed all the same', async () => {
    const { flush, batches, answers, answer } = heldFlush();
    const group = new GroupCommit<number, number>(flush);
    const failing = Promise.allSettled([group.submit(1), group.submit(2)]);
    await settled();
    const next = group.submit(3);
    answers[0]!.reject(new Error('disk full'));
    assert.deepEqual(
      (await failing).map((r) => r.status === 'rejected' && (r.reason as Error).message),
      ['disk full', 'disk full'],
    );
    await settled();
    assert.deepEqual(batches, [[1, 2], [3]]);
    answer(1);
    assert.equal(await next, 6);
  });

  test('drain resolves once everything submitted so far is flushed', async () => {
    const { flush, answer } = heldFlush();
    const group = new GroupCommit<number, number>(flush);
    await group.drain(); // idle: at once
    const submitted = group.submit(1);
    let drained = false;
    const draining = group.drain().then(() => (drained = true));
    await settled();
    assert.equal(drained, false);
    answer(0);
    await submitted;
    await draining;
    assert.equal(drained, true);
  });
});
