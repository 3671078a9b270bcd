/**
 * One suite for every `EventLog` adapter. Each test uses fresh topics and groups and polls for
 * outcomes with a deadline. The factory is called once per log instance a test needs (a test with
 * two members may open two): every instance must reach the same storage / cluster.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test, type TestContext } from 'node:test';
import { partitionForKey } from '../../shared/adapters/event-log/partitioner.ts';
import type { EventLog, PartitionRef } from '../../shared/ports/event-log.ts';
import { UnknownTopicError } from '../../shared/ports/event-log.ts';
import { eventually, openSession, published, recorder, type EventLogUnderTest } from './event-log-support.ts';

export type { EventLogUnderTest };

/** Where adapters legitimately differ. */
export interface EventLogConformanceOptions {
  /** Skip the whole suite, with this reason (a backend is missing). */
  skip?: string;
  /** Deadline for records to arrive and offsets to be committed; default 15 s. */
  deliveryTimeoutMs?: number;
  /** Deadline for a consumer group to (re)balance; Kafka's protocol is slower. Default 15 s. */
  rebalanceTimeoutMs?: number;
}

const PARTITIONS = 4;

export const eventLogConformance = (
  name: string,
  factory: () => Promise<EventLogUnderTest>,
  options: EventLogConformanceOptions = {},
): void => {
  const delivery = options.deliveryTimeoutMs ?? 15_000;
  const rebalance = options.rebalanceTimeoutMs ?? 15_000;
  const testTimeout = 4 * (delivery + rebalance);

  const session = (t: TestContext) => openSession(t, factory, PARTITIONS);

  describe(`EventLog conformance: ${name}`, { skip: options.skip, timeout: 10 * testTimeout }, () => {
    test(
      'publish resolves with each record’s position, and read returns the record there',
      { timeout: testTimeout },
      async (t) => {
        const s = await session(t);
        const topic = await s.topic(3);
        const records = [
          { key: 'call-1', value: '{"n":1}', headers: { 'trace-id': 'abc' } },
          { key: 'call-2', value: '{"n":2}' },
          { key: 'call-1', value: '{"n":3}' },
        ];
        const positions = await s.log.publish(topic, records);
        assert.equal(positions.length, 3);
        for (const [i, position] of positions.entries()) {
          assert.equal(position.topic, topic);
          assert.equal(position.partition, partitionForKey(records[i]!.key, 3));
          const [stored] = await s.log.read(topic, {
            partition: position.partition,
            fromOffset: position.offset,
            limit: 1,
          });
          assert.ok(stored, `nothing at ${position.partition}/${position.offset}`);
          assert.equal(stored.offset, position.offset);
          assert.equal(stored.key, records[i]!.key);
          assert.equal(stored.value, records[i]!.value);
          assert.deepEqual(stored.headers, records[i]!.headers ?? {});
          assert.ok(stored.timestamp instanceof Date && !Number.isNaN(stored.timestamp.getTime()));
        }
        assert.ok(positions[2]!.offset > positions[0]!.offset, 'a later record of the same key got an earlier offset');
      },
    );

    test(
      'a 9.5 MB record (the largest valid call’s largest is about 9.3 MB) is published, read and consumed whole',
      { timeout: testTimeout },
      async (t) => {
        const s = await session(t);
        const topic = await s.topic(1);
        const value = JSON.stringify({ transcript: '\u0001'.repeat(1_550_000) + 'é'.repeat(100_000) });
        assert.ok(Buffer.byteLength(value) > 9_300_000);
        const [position] = await s.log.publish(
          topic,
          [
            { key: 'big', value },
            { key: 'small', value: '{}' },
          ].slice(0, 1),
        );
        const [stored] = await s.log.read(topic, {
          partition: position!.partition,
          fromOffset: position!.offset,
          limit: 1,
        });
        assert.equal(stored?.value, value);
        await s.log.publish(topic, [{ key: 'small', value: '{}' }]);
        const seen = recorder();
        await s.consume(s.log, { groupId: s.group(), topics: [topic], handler: async (record) => seen.add(record) });
        await eventually(() => seen.count() >= 2, 'the big record and the one after it consumed', delivery);
        assert.equal(seen.valuesOf('big')[0], value);
      },
    );

    test(
      'same key → the murmur2 partition, in publish order; concurrent publishes get distinct positions',
      { timeout: testTimeout },
      async (t) => {
        const s = await session(t);
        const topic = await s.topic();
        const keys = ['alpha', 'bravo', 'charlie', 'delta', 'echo'];
        for (let round = 0; round < 4; round++) {
          await s.log.publish(
            topic,
            keys.map((key) => ({ key, value: `${key}-${round}` })),
          );
        }
        const concurrent = await Promise.all(
          Array.from({ length: 20 }, (_, i) => s.log.publish(topic, [{ key: `c-${i % 7}`, value: `c-${i}` }])),
        );
        const positions = concurrent.flat();
        assert.equal(
          new Set(positions.map((p) => `${p.partition}/${p.offset}`)).size,
          positions.length,
          'two records share a position',
        );

        const stored = await s.log.read(topic, { limit: 1000 });
        assert.equal(stored.length, keys.length * 4 + 20);
        for (const record of stored)
          assert.equal(record.partition, partitionForKey(record.key, PARTITIONS), `key ${record.key}`);
        for (const key of keys) {
          assert.deepEqual(
            stored.filter((r) => r.key === key).map((r) => r.value),
            [0, 1, 2, 3].map((round) => `${key}-${round}`),
          );
        }
        for (const [i, position] of positions.entries()) {
          const found = stored.find((r) => r.partition === position.partition && r.offset === position.offset);
          assert.equal(found?.value, `c-${i}`);
        }
      },
    );

    test(
      'records with many keys are handled concurrently while each key keeps its order',
      { timeout: testTimeout },
      async (t) => {
        const s = await session(t);
        const topic = await s.topic();
        const sent = await published(s.log, topic, 200, 20);
        const inFlight = new Map<string, number>();
        let running = 0;
        let mostRunning = 0;
        const overlaps: string[] = [];
        const seen = recorder();
        await s.consume(s.log, {
          groupId: s.group(),
          topics: [topic],
          concurrency: 16,
          handler: async (record) => {
            if ((inFlight.get(record.key) ?? 0) > 0) overlaps.push(record.key);
            inFlight.set(record.key, (inFlight.get(record.key) ?? 0) + 1);
            mostRunning = Math.max(mostRunning, ++running);
            await new Promise((resolve) => setTimeout(resolve, 2));
            running--;
            inFlight.set(record.key, inFlight.get(record.key)! - 1);
            seen.add(record);
          },
        });
        await eventually(
          () => seen.count() >= sent.positions.length,
          `all ${sent.positions.length} records handled (got ${seen.count()})`,
          delivery,
        );
        assert.deepEqual(overlaps, [], 'two records of one key ran at once');
        assert.ok(mostRunning > 1, 'records of different keys never ran concurrently');
        for (const [key, values] of sent.byKey) assert.deepEqual(seen.valuesOf(key), values, `order of key ${key}`);
      },
    );

    test(
      'no record is lost across a consumer restart, and the committed offsets are honoured',
      { timeout: testTimeout },
      async (t) => {
        const s = await session(t);
        const topic = await s.topic();
        const group = s.group();
        const first = await published(s.log, topic, 120, 12);
        const seenA = recorder();
        // Slow enough that it is stopped mid-stream.
        const a = await s.consume(s.log, {
          groupId: group,
          topics: [topic],
          concurrency: 2,
          handler: async (r) => {
            await new Promise((resolve) => setTimeout(resolve, 5));
            seenA.add(r);
          },
        });
        await eventually(() => seenA.count() >= 30, 'the first member handled some records', delivery);
        await a.stop();
        await a.done;

        const committed = new Map<number, bigint | undefined>();
        for (let p = 0; p < PARTITIONS; p++) committed.set(p, await s.log.committedOffset(group, topic, p));
        for (const record of seenA.all()) {
          const c = committed.get(record.partition);
          assert.ok(
            c !== undefined && record.offset < c,
            `handled ${record.partition}/${record.offset} but committed ${c}: stop() must commit what it finished`,
          );
        }

        const second = await published(s.log, topic, 60, 12, 'second');
        const seenB = recorder();
        await s.consume(s.log, { groupId: group, topics: [topic], handler: async (r) => void seenB.add(r) });
        const everything = [...first.positions, ...second.positions];
        await eventually(
          () => everything.every((p) => seenA.has(p) || seenB.has(p)),
          'every record handled by one of the members',
          delivery,
        );
        for (const record of seenB.all()) {
          const c = committed.get(record.partition) ?? 0n;
          assert.ok(
            record.offset >= c,
            `${record.partition}/${record.offset} redelivered below the committed offset ${c}`,
          );
        }
      },
    );

    test(
      'a record whose handler throws is not committed and goes, with what follows it, to the next member',
      { timeout: testTimeout },
      async (t) => {
        const s = await session(t);
        const topic = await s.topic();
        const group = s.group();
        const sent = await published(s.log, topic, 40, 4);
        const poisoned = sent.positions[17]!;
        const boom = new Error('handler failed');
        const seenA = recorder();
        const a = await s.consume(s.log, {
          groupId: group,
          topics: [topic],
          handler: async (r) => {
            if (r.partition === poisoned.partition && r.offset === poisoned.offset) throw boom;
            seenA.add(r);
          },
        });
        await assert.rejects(a.done, (error) => error === boom);
        const committed = await s.log.committedOffset(group, topic, poisoned.partition);
        assert.ok(
          committed === undefined || committed <= poisoned.offset,
          `committed ${committed} passes the failed offset ${poisoned.offset}`,
        );

        const seenB = recorder();
        await s.consume(s.log, { groupId: group, topics: [topic], handler: async (r) => void seenB.add(r) });
        await eventually(() => seenB.has(poisoned), 'the failed record redelivered to the next member', delivery);
        const after = sent.positions.filter((p) => p.partition === poisoned.partition && p.offset > poisoned.offset);
        await eventually(
          () => after.every((p) => seenB.has(p)),
          'records after the failed one delivered to the next member',
          delivery,
        );
        await eventually(() => sent.positions.every((p) => seenA.has(p) || seenB.has(p)), 'nothing lost', delivery);
      },
    );

    test(
      'two members split the partitions, each record goes to one of them, and the survivor takes over',
      { timeout: testTimeout },
      async (t) => {
        const s = await session(t);
        const other = await s.open();
        const topic = await s.topic();
        const group = s.group();
        const members = [0, 1].map(() => ({
          seen: recorder(),
          assigned: [] as PartitionRef[][],
          revoked: [] as PartitionRef[][],
        }));
        const start = (log: EventLog, i: 0 | 1) =>
          s.consume(log, {
            groupId: group,
            topics: [topic],
            handler: async (r) => void members[i]!.seen.add(r),
            onAssigned: (p) => void members[i]!.assigned.push(p),
            onRevoked: (p) => void members[i]!.revoked.push(p),
          });
        const a = await start(s.log, 0);
        const b = await start(other, 1);
        const settled = () => {
          const [x, y] = [a.assignment(), b.assignment()];
          const keys = [...x, ...y].map((r) => `${r.topic}/${r.partition}`);
          return x.length > 0 && y.length > 0 && keys.length === PARTITIONS && new Set(keys).size === PARTITIONS;
        };
        await eventually(settled, 'the partitions split between both members', rebalance);
        await eventually(
          () => members.every((m) => m.assigned.length > 0),
          'onAssigned called on both members',
          rebalance,
        );

        const sent = await published(s.log, topic, 100, 50);
        await eventually(
          () => sent.positions.every((p) => members[0]!.seen.has(p) || members[1]!.seen.has(p)),
          'every record handled',
          delivery,
        );
        assert.ok(members[0]!.seen.count() > 0 && members[1]!.seen.count() > 0, 'one member got no records');
        const twice = sent.positions.filter((p) => members[0]!.seen.has(p) && members[1]!.seen.has(p));
        assert.deepEqual(twice, [], 'records handled by both members after the assignment settled');

        const left = a.assignment();
        await a.stop();
        assert.ok(
          left.every((ref) =>
            members[0]!.revoked.flat().some((r) => r.topic === ref.topic && r.partition === ref.partition),
          ),
          'the stopped member did not report its partitions revoked',
        );
        await eventually(() => b.assignment().length === PARTITIONS, 'the survivor owns every partition', rebalance);
        assert.ok(
          left.every((ref) =>
            members[1]!.assigned.flat().some((r) => r.topic === ref.topic && r.partition === ref.partition),
          ),
          'the survivor was not told it was assigned the partitions it took over',
        );
        const more = await published(s.log, topic, 40, 40, 'after');
        await eventually(
          () => more.positions.every((p) => members[1]!.seen.has(p)),
          'the survivor handles every new record',
          delivery,
        );
      },
    );

    test(
      'a partition given up while its record is still being retried goes to the new member, which handles that record',
      { timeout: testTimeout },
      async (t) => {
        const s = await session(t);
        const other = await s.open();
        const topic = await s.topic();
        const group = s.group();
        // One record per partition that member A never finishes: its handler retries in place
        // until the partition is given up (its signal aborted).
        const keys = Array.from({ length: PARTITIONS }, (_, partition) => {
          for (let i = 0; ; i++) if (partitionForKey(`stuck-${i}`, PARTITIONS) === partition) return `stuck-${i}`;
        });
        const abandoned = recorder();
        const a = await s.consume(s.log, {
          groupId: group,
          topics: [topic],
          handler: (record, signal) =>
            new Promise<void>((_resolve, reject) =>
              signal.addEventListener('abort', () => {
                abandoned.add(record);
                reject(signal.reason as Error);
              }),
            ),
        });
        await eventually(() => a.assignment().length === PARTITIONS, 'member A owns every partition', rebalance);
        const sent = await s.log.publish(
          topic,
          keys.map((key) => ({ key, value: key })),
        );
        await new Promise((resolve) => setTimeout(resolve, 1_500));
        const seen = recorder();
        const b = await s.consume(other, {
          groupId: group,
          topics: [topic],
          handler: async (record) => void seen.add(record),
        });
        // A gives B its share though those records are unfinished: it does not wait for them.
        await eventually(() => b.assignment().length > 0, 'member B is given partitions', rebalance);
        const moved = sent.filter((p) => b.assignment().some((ref) => ref.partition === p.partition));
        await eventually(
          () => moved.every((p) => seen.has(p)),
          'member B handles the records A gave up unfinished',
          delivery,
        );
        assert.ok(
          moved.every((p) => abandoned.has(p)),
          'member A stopped retrying the records of the partitions it gave up',
        );
      },
    );

    test(
      'read filters by partition and offset and honours the limit; committedOffset is empty for a new group',
      { timeout: testTimeout },
      async (t) => {
        const s = await session(t);
        const topic = await s.topic(2);
        const sent = await published(s.log, topic, 30, 6);
        const partition = sent.positions[0]!.partition;
        const inPartition = sent.positions
          .filter((p) => p.partition === partition)
          .sort((x, y) => (x.offset < y.offset ? -1 : 1));
        const read = await s.log.read(topic, { partition, fromOffset: inPartition[2]!.offset, limit: 3 });
        assert.deepEqual(
          read.map((r) => [r.partition, r.offset]),
          inPartition.slice(2, 5).map((p) => [p.partition, p.offset]),
        );
        assert.equal((await s.log.read(topic, { limit: 1000 })).length, 30);
        assert.deepEqual(await s.log.read(topic, { partition, fromOffset: 10_000n }), []);
        assert.equal(await s.log.committedOffset(s.group(), topic, partition), undefined);
      },
    );

    test(
      'read holds no more records than fit in its byte bound (always one at least), a run from the start of each partition',
      { timeout: testTimeout },
      async (t) => {
        const s = await session(t);
        const topic = await s.topic(2);
        // Records of about 100 kB each, over both partitions, one é (two bytes) in each.
        const value = (i: number) => `${i}-é-${'x'.repeat(100_000)}`;
        for (let i = 0; i < 8; i += 4)
          await s.log.publish(
            topic,
            Array.from({ length: 4 }, (_, j) => ({ key: `k-${i + j}`, value: value(i + j) })),
          );
        const all = await s.log.read(topic, { limit: 1000 });
        assert.equal(all.length, 8, 'the default bound (16 MiB) holds every record');
        const bounded = await s.log.read(topic, { limit: 1000, maxBytes: 350_000 });
        assert.deepEqual(
          bounded.map((r) => [r.partition, r.offset, r.value]),
          all.slice(0, 3).map((r) => [r.partition, r.offset, r.value]),
          'three records of about 100,005 bytes fit in 350,000 bytes, the fourth does not',
        );
        const one = await s.log.read(topic, { limit: 1000, maxBytes: 10 });
        assert.deepEqual(
          one.map((r) => [r.partition, r.offset]),
          all.slice(0, 1).map((r) => [r.partition, r.offset]),
          'a record larger than the bound is read alone',
        );
        // Paging on from the last record read reads the rest of its partition.
        const last = bounded.at(-1)!;
        const rest = await s.log.read(topic, { partition: last.partition, fromOffset: last.offset + 1n, limit: 1000 });
        assert.deepEqual(
          rest.map((r) => r.offset),
          all.filter((r) => r.partition === last.partition && r.offset > last.offset).map((r) => r.offset),
        );
      },
    );

    test(
      'committedOffset reports the next offset once a member has handled a partition',
      { timeout: testTimeout },
      async (t) => {
        const s = await session(t);
        const topic = await s.topic(2);
        const group = s.group();
        const sent = await published(s.log, topic, 20, 5);
        const seen = recorder();
        const consumer = await s.consume(s.log, {
          groupId: group,
          topics: [topic],
          handler: async (r) => void seen.add(r),
        });
        await eventually(() => seen.count() >= 20, 'all records handled', delivery);
        const ends = new Map<number, bigint>();
        for (const p of sent.positions)
          ends.set(p.partition, (ends.get(p.partition) ?? 0n) > p.offset + 1n ? ends.get(p.partition)! : p.offset + 1n);
        for (const [partition, end] of ends) {
          await eventually(
            async () => (await s.log.committedOffset(group, topic, partition)) === end,
            `partition ${partition} committed up to ${end}`,
            delivery,
          );
        }
        await consumer.stop();
      },
    );

    test(
      'endOffsets gives the next offset of every partition, 0 for an empty one',
      { timeout: testTimeout },
      async (t) => {
        const s = await session(t);
        const topic = await s.topic(3);
        assert.deepEqual(
          await s.log.endOffsets(topic),
          [0, 1, 2].map((partition) => ({ partition, offset: 0n })),
        );
        const sent = await published(s.log, topic, 12, 4);
        const expected = [0, 1, 2].map((partition) => ({
          partition,
          offset: BigInt(sent.positions.filter((p) => p.partition === partition).length),
        }));
        assert.deepEqual(await s.log.endOffsets(topic), expected);
        await assert.rejects(
          s.log.endOffsets(`missing-${randomUUID()}`),
          (error) => error instanceof UnknownTopicError,
        );
      },
    );

    test('an unknown topic is refused with UnknownTopicError', { timeout: testTimeout }, async (t) => {
      const s = await session(t);
      const missing = `missing-${randomUUID()}`;
      const isUnknown = (error: unknown) =>
        error instanceof UnknownTopicError && error.code === 'UNKNOWN_TOPIC' && error.topic === missing;
      await assert.rejects(s.log.publish(missing, [{ key: 'k', value: 'v' }]), isUnknown);
      await assert.rejects(s.log.read(missing), isUnknown);
      await assert.rejects(
        s.log.consume({ groupId: s.group(), topics: [missing], handler: async () => {} }),
        isUnknown,
      );
    });

    test('ensureTopics leaves an existing topic as it is', { timeout: testTimeout }, async (t) => {
      const s = await session(t);
      const topic = await s.topic(2);
      await s.log.ensureTopics([{ name: topic, partitions: 8 }]);
      const positions = await s.log.publish(
        topic,
        Array.from({ length: 40 }, (_, i) => ({ key: `k${i}`, value: 'v' })),
      );
      for (const [i, p] of positions.entries())
        assert.equal(p.partition, partitionForKey(`k${i}`, 2), 'partition chosen from a changed partition count');
    });

    test(
      'partitionCount is the count the topic was made with, not one asked for since; an unknown topic is refused',
      { timeout: testTimeout },
      async (t) => {
        const s = await session(t);
        const topic = await s.topic(2);
        await s.log.ensureTopics([{ name: topic, partitions: 8 }]);
        assert.equal(await s.log.partitionCount(topic), 2);
        // Another process sees the same count.
        assert.equal(await (await s.open()).partitionCount(topic), 2);
        await assert.rejects(
          s.log.partitionCount(`missing-${randomUUID()}`),
          (error) => error instanceof UnknownTopicError,
        );
      },
    );
  });
};
