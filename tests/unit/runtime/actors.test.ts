/**
 * The per-call actors with behaviours the test finishes by hand: one run at a time per call, wakes
 * during a run coalesce into one more run, different calls run side by side up to the slots, a
 * wait outside the slot lets another call in, an actor is forgotten when it has no work, stop
 * aborts it, and only errors of a run that was not stopped are reported.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type ActorContext, ActorSystem } from '../../../services/processor/actors.ts';
import { FairQueue } from '../../../services/processor/fair-queue.ts';
import { type Deferred, deferred, settled } from '../../support/deferred.ts';

/** A behaviour whose runs wait for the test: `runs` lists them, `finish(i)` ends run i. */
const handHeld = () => {
  const runs: { callId: string; context: ActorContext; end: Deferred<void> }[] = [];
  const running = new Set<string>();
  let overlapped = false;
  const behaviour = async (context: ActorContext) => {
    if (running.has(context.callId)) overlapped = true;
    running.add(context.callId);
    const end = deferred();
    runs.push({ callId: context.callId, context, end });
    try {
      await end.promise;
    } finally {
      running.delete(context.callId);
    }
  };
  const finish = async (i: number, error?: Error) => {
    if (error) runs[i]!.end.reject(error);
    else runs[i]!.end.resolve();
    await settled();
  };
  return { behaviour, runs, finish, overlapped: () => overlapped };
};

const system = (capacity = 4) => {
  const held = handHeld();
  const errors: [string, string][] = [];
  const slots = new FairQueue(capacity);
  const actors = new ActorSystem(held.behaviour, slots, (callId, error) =>
    errors.push([callId, (error as Error).message]),
  );
  return { ...held, actors, slots, errors };
};

describe('ActorSystem', () => {
  test('a call runs one at a time: wakes during a run make exactly one more run, after it', async () => {
    const { actors, runs, finish, overlapped } = system();
    actors.wake('c1', 't1');
    await settled();
    assert.equal(runs.length, 1);
    actors.wake('c1', 't1');
    actors.wake('c1', 't1');
    await settled();
    assert.equal(runs.length, 1, 'no second run while the first works');
    await finish(0);
    assert.equal(runs.length, 2, 'one more run for the wakes');
    await finish(1);
    assert.equal(runs.length, 2);
    assert.equal(overlapped(), false);
  });

  test('an actor is forgotten as soon as it has no work, and a later wake starts a new one', async () => {
    const { actors, runs, finish } = system();
    actors.wake('c1', 't1');
    assert.equal(actors.has('c1'), true);
    await settled();
    await finish(0);
    assert.equal(actors.has('c1'), false);
    assert.equal(actors.size, 0);
    actors.wake('c1', 't1');
    await settled();
    assert.equal(runs.length, 2);
    await finish(1);
  });

  test('different calls run side by side up to the number of slots; the next starts when one ends', async () => {
    const { actors, runs, finish, slots } = system(2);
    for (const id of ['a', 'b', 'c']) actors.wake(id, 't1');
    await settled();
    assert.deepEqual(
      runs.map((r) => r.callId),
      ['a', 'b'],
    );
    assert.equal(slots.used, 2);
    await finish(0);
    assert.deepEqual(
      runs.map((r) => r.callId),
      ['a', 'b', 'c'],
    );
    await finish(1);
    await finish(2);
    assert.equal(slots.used, 0, 'every slot given back');
  });

  test('work outside the slot gives it back meanwhile, then queues for one again', async () => {
    const { actors, runs, finish, slots } = system(1);
    actors.wake('a', 't1');
    await settled();
    const download = deferred<string>();
    const outside = runs[0]!.context.outsideSlot(() => download.promise);
    actors.wake('b', 't1');
    await settled();
    assert.deepEqual(
      runs.map((r) => r.callId),
      ['a', 'b'],
      'b runs while a waits outside its slot',
    );
    download.resolve('bytes');
    await settled();
    let back = false;
    void outside.then(() => (back = true));
    await settled();
    assert.equal(back, false, 'a waits for a slot before going on');
    await finish(1);
    assert.equal(await outside, 'bytes');
    assert.equal(slots.used, 1);
    await finish(0);
    assert.equal(slots.used, 0);
  });

  test('stop aborts the run with the reason, resolves once it has ended, and a stopped run’s error is not reported', async () => {
    const { actors, runs, errors } = system();
    actors.wake('c1', 't1');
    await settled();
    const { context, end } = runs[0]!;
    context.signal.addEventListener('abort', () => end.reject(context.signal.reason));
    actors.wake('c1', 't1'); // asked again: the stop cancels that too
    await actors.stop('c1', 'partition revoked');
    assert.equal((context.signal.reason as Error).message, 'partition revoked');
    assert.equal(actors.has('c1'), false);
    assert.equal(runs.length, 1, 'no further run after a stop');
    assert.deepEqual(errors, []);
  });

  test('an error of a run that was not stopped is reported with its call, and the actor ends', async () => {
    const { actors, finish, errors } = system();
    actors.wake('c1', 't1');
    await settled();
    await finish(0, new Error('boom'));
    assert.deepEqual(errors, [['c1', 'boom']]);
    assert.equal(actors.has('c1'), false);
  });

  test('stopAll stops the selected actors only', async () => {
    const { actors, runs } = system();
    for (const id of ['p0-a', 'p0-b', 'p1-a']) actors.wake(id, 't1');
    await settled();
    for (const { context, end } of runs) context.signal.addEventListener('abort', () => end.resolve());
    await actors.stopAll((id) => id.startsWith('p0-'));
    assert.deepEqual([actors.has('p0-a'), actors.has('p0-b'), actors.has('p1-a')], [false, false, true]);
    await actors.stopAll();
    assert.equal(actors.size, 0);
  });
});
