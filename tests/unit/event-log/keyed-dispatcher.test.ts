import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { KeyedDispatcher } from '../../../shared/adapters/event-log/keyed-dispatcher.ts';
import type { LogRecord } from '../../../shared/ports/event-log.ts';

const record = (offset: number, key: string, partition = 0, topic = 't'): LogRecord => ({
  topic,
  partition,
  offset: BigInt(offset),
  key,
  value: `v${offset}`,
  headers: {},
  timestamp: new Date(0),
});

/** Lets every queued promise callback run (no timers involved). */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A handler whose calls finish only when the test says so. */
const controlledHandler = () => {
  const started: LogRecord[] = [];
  const running = new Map<string, { resolve: () => void; reject: (e: Error) => void }>();
  const id = (r: { topic: string; partition: number; offset: bigint }) => `${r.topic}/${r.partition}/${r.offset}`;
  return {
    started,
    running,
    handler: (r: LogRecord) =>
      new Promise<void>((resolve, reject) => {
        started.push(r);
        running.set(id(r), { resolve, reject });
      }),
    async finish(offset: number, partition = 0, topic = 't') {
      const call = running.get(id({ topic, partition, offset: BigInt(offset) }));
      assert.ok(call, `offset ${offset} of ${topic}/${partition} is not running`);
      running.delete(id({ topic, partition, offset: BigInt(offset) }));
      call.resolve();
      await settle();
    },
    async fail(offset: number, error: Error) {
      const call = running.get(id({ topic: 't', partition: 0, offset: BigInt(offset) }));
      assert.ok(call, `offset ${offset} is not running`);
      running.delete(id({ topic: 't', partition: 0, offset: BigInt(offset) }));
      call.reject(error);
      await settle();
    },
    runningOffsets: () => [...running.keys()].map((k) => Number(k.split('/')[2])).sort((a, b) => a - b),
  };
};

describe('KeyedDispatcher', () => {
  test('runs records with the same key one at a time, in push order', async () => {
    const h = controlledHandler();
    const d = new KeyedDispatcher(h.handler, { concurrency: 10 });
    for (const offset of [0, 1, 2]) await d.push(record(offset, 'a'));
    await settle();
    assert.deepEqual(h.runningOffsets(), [0]);
    await h.finish(0);
    assert.deepEqual(h.runningOffsets(), [1]);
    await h.finish(1);
    await h.finish(2);
    assert.deepEqual(
      h.started.map((r) => r.offset),
      [0n, 1n, 2n],
    );
  });

  test('runs different keys concurrently up to the bound, and push waits when full', async () => {
    const h = controlledHandler();
    const d = new KeyedDispatcher(h.handler, { concurrency: 3 });
    for (const offset of [0, 1, 2]) await d.push(record(offset, `k${offset}`));
    await settle();
    assert.deepEqual(h.runningOffsets(), [0, 1, 2]);
    assert.equal(d.capacity, 0);

    let accepted = false;
    const fourth = d.push(record(3, 'k3')).then(() => (accepted = true));
    await settle();
    assert.equal(accepted, false, 'push resolved while the dispatcher was full');
    assert.deepEqual(h.runningOffsets(), [0, 1, 2]);

    await h.finish(1);
    await fourth;
    assert.equal(accepted, true);
    assert.deepEqual(h.runningOffsets(), [0, 2, 3]);
  });

  test('records waiting behind their key count towards the bound', async () => {
    const h = controlledHandler();
    const d = new KeyedDispatcher(h.handler, { concurrency: 2 });
    await d.push(record(0, 'a'));
    await d.push(record(1, 'a'));
    let accepted = false;
    const third = d.push(record(2, 'b')).then(() => (accepted = true));
    await settle();
    assert.equal(accepted, false);
    await h.finish(0);
    await third;
    assert.deepEqual(h.runningOffsets(), [1, 2]);
  });

  test('waiting pushes are accepted in the order they were made', async () => {
    const h = controlledHandler();
    const d = new KeyedDispatcher(h.handler, { concurrency: 1 });
    await d.push(record(0, 'a'));
    const later = [d.push(record(1, 'b')), d.push(record(2, 'c'))];
    await h.finish(0);
    assert.deepEqual(h.runningOffsets(), [1]);
    await h.finish(1);
    assert.deepEqual(h.runningOffsets(), [2]);
    await h.finish(2);
    await Promise.all(later);
    assert.deepEqual(
      h.started.map((r) => r.offset),
      [0n, 1n, 2n],
    );
  });

  test('the committable offset never passes an unfinished record', async () => {
    const h = controlledHandler();
    const d = new KeyedDispatcher(h.handler, { concurrency: 10 });
    const ref = { topic: 't', partition: 0 };
    for (const offset of [0, 1, 2, 3, 4]) await d.push(record(offset, `k${offset}`));
    await settle();
    assert.equal(d.committable(ref), undefined);
    await h.finish(1);
    await h.finish(2);
    assert.equal(d.committable(ref), undefined, 'offset 0 is still running');
    await h.finish(0);
    assert.equal(d.committable(ref), 3n);
    await h.finish(4);
    assert.equal(d.committable(ref), 3n, 'offset 3 is still running');
    await h.finish(3);
    assert.equal(d.committable(ref), 5n);
  });

  test('tracks partitions independently and follows gaps in offsets', async () => {
    const h = controlledHandler();
    const d = new KeyedDispatcher(h.handler, { concurrency: 10 });
    await d.push(record(10, 'a', 0));
    await d.push(record(14, 'b', 0));
    await d.push(record(3, 'a', 1));
    await settle();
    await h.finish(14, 0);
    await h.finish(3, 1);
    assert.equal(d.committable({ topic: 't', partition: 0 }), undefined);
    assert.equal(d.committable({ topic: 't', partition: 1 }), 4n);
    await h.finish(10, 0);
    assert.equal(d.committable({ topic: 't', partition: 0 }), 15n);
    assert.equal(d.position({ topic: 't', partition: 0 }), 15n);
  });

  test('the same key in two partitions is two independent lanes', async () => {
    const h = controlledHandler();
    const d = new KeyedDispatcher(h.handler, { concurrency: 10 });
    await d.push(record(0, 'a', 0));
    await d.push(record(0, 'a', 1));
    await settle();
    assert.equal(h.running.size, 2);
  });

  test('ignores a record at or below the last offset pushed for its partition', async () => {
    const h = controlledHandler();
    const d = new KeyedDispatcher(h.handler, { concurrency: 10 });
    await d.push(record(0, 'a'));
    await d.push(record(1, 'b'));
    await d.push(record(1, 'b'));
    await d.push(record(0, 'a'));
    await settle();
    assert.equal(h.started.length, 2);
  });

  test('a handler error stops dispatch and nothing from the failed record on becomes committable', async () => {
    const h = controlledHandler();
    const d = new KeyedDispatcher(h.handler, { concurrency: 10 });
    const ref = { topic: 't', partition: 0 };
    await d.push(record(0, 'a'));
    await d.push(record(1, 'b'));
    await d.push(record(2, 'b')); // waits behind 1
    await d.push(record(3, 'c'));
    await d.push(record(0, 'a', 1));
    await settle();
    await h.finish(0);
    assert.equal(d.committable(ref), 1n);

    const boom = new Error('boom');
    await h.fail(1, boom);
    assert.equal(d.failed, true);
    assert.equal(await d.failure, boom);
    await assert.rejects(d.push(record(4, 'd')), /boom/);

    await h.finish(3);
    await h.finish(0, 1);
    await d.drain();
    assert.ok(!h.started.some((r) => r.offset === 2n && r.partition === 0), 'record queued behind the failed key ran');
    assert.equal(d.committable(ref), 1n, 'committable passed the failed record');
    assert.equal(d.committable({ topic: 't', partition: 1 }), 1n, 'other partitions still commit finished records');
  });

  test('a push waiting for capacity is refused when a handler fails', async () => {
    const h = controlledHandler();
    const d = new KeyedDispatcher(h.handler, { concurrency: 1 });
    await d.push(record(0, 'a'));
    const waiting = d.push(record(1, 'b')).then(
      () => 'accepted',
      (error: Error) => error.message,
    );
    await h.fail(0, new Error('boom'));
    assert.equal(await waiting, 'boom');
    assert.equal(h.started.length, 1);
  });

  test('drain waits for in-flight records of the given partitions only', async () => {
    const h = controlledHandler();
    const d = new KeyedDispatcher(h.handler, { concurrency: 10 });
    await d.push(record(0, 'a', 0));
    await d.push(record(1, 'a', 0));
    await d.push(record(0, 'b', 1));
    let drained0 = false;
    const drain0 = d.drain([{ topic: 't', partition: 0 }]).then(() => (drained0 = true));
    await h.finish(0, 0);
    assert.equal(drained0, false, 'drain resolved while offset 1 waited behind its key');
    await h.finish(1, 0);
    await drain0;
    assert.equal(h.running.size, 1, 'partition 1 is still in flight');

    let drainedAll = false;
    const drainAll = d.drain().then(() => (drainedAll = true));
    await settle();
    assert.equal(drainedAll, false);
    await h.finish(0, 1);
    await drainAll;
  });

  test('drop forgets a partition: queued records do not run and tracking starts afresh', async () => {
    const h = controlledHandler();
    const d = new KeyedDispatcher(h.handler, { concurrency: 10 });
    const ref = { topic: 't', partition: 0 };
    await d.push(record(0, 'a'));
    await d.push(record(1, 'a'));
    d.drop([ref]);
    assert.equal(d.committable(ref), undefined);
    assert.equal(d.position(ref), undefined);
    await h.finish(0);
    assert.deepEqual(
      h.started.map((r) => r.offset),
      [0n],
      'a record queued in a dropped partition ran',
    );
    assert.equal(d.committable(ref), undefined, 'a finished record of a dropped partition was counted');
    await d.push(record(0, 'a'));
    await settle();
    assert.equal(h.started.length, 2, 'the partition can be pushed again from an earlier offset');
  });

  test("abandon tells a partition's running handlers by their signal and drops its queued records; a handler that then throws stops nothing, and nothing of it is committable", async () => {
    const signals = new Map<string, AbortSignal>();
    const h = controlledHandler();
    const d = new KeyedDispatcher(
      (r, signal) => {
        signals.set(`${r.partition}/${r.offset}`, signal);
        return h.handler(r);
      },
      { concurrency: 10 },
    );
    const given = { topic: 't', partition: 0 };
    const kept = { topic: 't', partition: 1 };
    await d.push(record(0, 'a'));
    await d.push(record(1, 'a')); // queued behind 0
    await d.push(record(2, 'b'));
    await d.push(record(0, 'a', 1));
    await settle();
    await h.finish(2);

    d.abandon([given]);
    assert.equal(signals.get('0/0')?.aborted, true);
    assert.equal(signals.get('0/2')?.aborted, true, 'one signal per partition');
    assert.equal(signals.get('1/0')?.aborted, false, "another partition's");
    let drained = false;
    const draining = d.drain([given]).then(() => (drained = true));
    await settle();
    assert.equal(drained, false, 'drain waits for the record still running');
    await h.fail(0, new Error('stopped retrying: its partition was given up'));
    await draining;
    assert.equal(d.failed, false, 'an abandoned record that throws is no handler failure');
    assert.deepEqual(
      h.started.filter((r) => r.partition === 0).map((r) => r.offset),
      [0n, 2n],
      'a queued record of an abandoned partition ran',
    );
    assert.equal(d.committable(given), undefined);

    // The other partition is untouched.
    await h.finish(0, 1);
    assert.equal(d.committable(kept), 1n);
    d.drop([given]);
    await d.push(record(0, 'a'));
    await settle();
    assert.equal(h.started.at(-1)?.offset, 0n, 'the partition can be pushed again once dropped');
  });

  test('random keys and completion order: per-key order holds and commits never pass open records', async () => {
    for (let round = 0; round < 20; round++) {
      const h = controlledHandler();
      const d = new KeyedDispatcher(h.handler, { concurrency: 1 + (round % 5) });
      const ref = { topic: 't', partition: 0 };
      const keys = ['a', 'b', 'c', 'd'];
      const total = 40;
      const finished = new Set<number>();
      const pushing = (async () => {
        for (let offset = 0; offset < total; offset++)
          await d.push(record(offset, keys[Math.floor(Math.random() * keys.length)]!));
      })();
      while (finished.size < total) {
        await settle();
        const candidates = h.runningOffsets();
        assert.ok(candidates.length > 0, 'nothing runs although records remain');
        const byKey = new Map<string, number>();
        for (const offset of candidates) {
          const key = h.started.find((r) => r.offset === BigInt(offset))!.key;
          assert.ok(!byKey.has(key), `two records of key ${key} run at once`);
          byKey.set(key, offset);
        }
        const pick = candidates[Math.floor(Math.random() * candidates.length)]!;
        await h.finish(pick);
        finished.add(pick);
        const committable = d.committable(ref);
        let expected = 0;
        while (finished.has(expected)) expected++;
        assert.equal(committable, expected === 0 ? undefined : BigInt(expected));
      }
      await pushing;
      for (const key of keys) {
        const offsets = h.started.filter((r) => r.key === key).map((r) => r.offset);
        assert.deepEqual(
          offsets,
          [...offsets].sort((x, y) => (x < y ? -1 : 1)),
          `key ${key} out of order`,
        );
      }
      assert.equal(d.committable(ref), BigInt(total));
    }
  });
});
