/**
 * The fair queue in front of processing slots, downloads and transcriptions: round-robin between
 * waiting teams, a cap per team, first come first served within a team.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FairQueue, type Release } from '../../../services/processor/fair-queue.ts';

/** Acquires for each team in order; records the order of grants. */
const queueUp = (queue: FairQueue, teams: string[]) => {
  const granted: string[] = [];
  const releases: Release[] = [];
  const done = teams.map((team, i) =>
    queue.acquire(team).then((release) => {
      granted.push(`${team}${i}`);
      releases.push(release);
    }),
  );
  return { granted, releases, done };
};

const settle = () => new Promise((resolve) => setImmediate(resolve));

test('free permits are granted at once, up to the capacity', async () => {
  const queue = new FairQueue(2);
  const { granted } = queueUp(queue, ['a', 'b', 'c']);
  await settle();
  assert.deepEqual(granted, ['a0', 'b1']);
  assert.equal(queue.used, 2);
  assert.equal(queue.waiting(), 1);
});

test('waiting teams are served round-robin: a team that queued 5 does not go before one that queued 1 after it', async () => {
  const queue = new FairQueue(1);
  const first = await queue.acquire('flood');
  const { granted, releases } = queueUp(queue, ['flood', 'flood', 'flood', 'flood', 'flood', 'other']);
  await settle();
  first();
  await settle();
  assert.deepEqual(granted, ['flood0']);
  releases.shift()!();
  await settle();
  assert.deepEqual(granted, ['flood0', 'other5'], 'the other team comes next, not the flood’s second call');
  for (let i = 0; i < 4; i++) {
    releases.shift()!();
    await settle();
  }
  assert.deepEqual(granted, ['flood0', 'other5', 'flood1', 'flood2', 'flood3', 'flood4']);
});

test('three teams alternate one grant each per turn', async () => {
  const queue = new FairQueue(1);
  const hold = await queue.acquire('x');
  const { granted, releases } = queueUp(queue, ['a', 'a', 'a', 'b', 'b', 'c']);
  hold();
  for (let i = 0; i < 6; i++) {
    await settle();
    releases.shift()?.();
  }
  await settle();
  assert.deepEqual(granted, ['a0', 'b3', 'c5', 'a1', 'b4', 'a2']);
});

test('one team holds at most its cap even when permits are free; other teams get the rest', async () => {
  const queue = new FairQueue(4, 2);
  const { granted, releases } = queueUp(queue, ['flood', 'flood', 'flood', 'flood', 'other']);
  await settle();
  assert.deepEqual(granted, ['flood0', 'flood1', 'other4']);
  assert.equal(queue.heldBy('flood'), 2);
  assert.equal(queue.used, 3, 'one permit stays free rather than exceed the cap');
  releases[0]!();
  await settle();
  assert.deepEqual(granted, ['flood0', 'flood1', 'other4', 'flood2']);
});

test('an aborted waiter leaves the queue and rejects with the signal reason; the next one gets the permit', async () => {
  const queue = new FairQueue(1);
  const hold = await queue.acquire('a');
  const controller = new AbortController();
  const aborted = queue.acquire('b', controller.signal);
  const { granted } = queueUp(queue, ['c']);
  const reason = new Error('call stopped');
  controller.abort(reason);
  await assert.rejects(aborted, (error) => error === reason);
  assert.equal(queue.waiting('b'), 0);
  hold();
  await settle();
  assert.deepEqual(granted, ['c0']);
  await assert.rejects(
    queue.acquire('d', controller.signal),
    (error) => error === reason,
    'an already aborted signal rejects at once',
  );
});

test('releasing twice gives back one permit only', async () => {
  const queue = new FairQueue(1);
  const release = await queue.acquire('a');
  release();
  release();
  assert.equal(queue.used, 0);
  const again = await queue.acquire('a');
  const { granted } = queueUp(queue, ['b']);
  release();
  await settle();
  assert.deepEqual(granted, [], 'the stale release did not free the permit held by the second acquire');
  again();
  await settle();
  assert.deepEqual(granted, ['b0']);
});

test('run holds a permit for the work and gives it back when the work fails', async () => {
  const queue = new FairQueue(1);
  await assert.rejects(
    queue.run('a', async () => Promise.reject(new Error('boom'))),
    /boom/,
  );
  assert.equal(queue.used, 0);
  assert.equal(await queue.run('a', async () => queue.heldBy('a')), 1);
});

test('capacity and cap must be whole numbers ≥ 1', () => {
  assert.throws(() => new FairQueue(0), RangeError);
  assert.throws(() => new FairQueue(2, 0), RangeError);
  assert.throws(() => new FairQueue(1.5), RangeError);
});
