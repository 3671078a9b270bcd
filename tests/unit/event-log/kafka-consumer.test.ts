/**
 * The Kafka consumer's batch handler over a fake kafkajs consumer, on mocked time: kafkajs has no
 * background heartbeat, so a member stays in its group only while its open batches call
 * `heartbeat()`; a batch whose records take longer than `holdAfterMs` returns and its partition is
 * held (paused, then committed and resumed once they are finished) so that kafkajs fetches the
 * member's other partitions meanwhile; and a held partition keeps one drain waiter, not one per poll.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, mock, test } from 'node:test';
import type * as kafkajs from 'kafkajs';
import { KafkaConsumer, type KafkaConsumerSettings } from '../../../shared/adapters/event-log/kafka-consumer.ts';
import { KeyedDispatcher } from '../../../shared/adapters/event-log/keyed-dispatcher.ts';
import type { ConsumeOptions, LogRecord } from '../../../shared/ports/event-log.ts';
import { deferred, settled } from '../../support/deferred.ts';

const TOPIC = 'calls.submitted.v1';
const INTERVAL_MS = 500;

const settings: KafkaConsumerSettings = {
  sessionTimeoutMs: 10_000,
  heartbeatIntervalMs: INTERVAL_MS,
  rebalanceTimeoutMs: 30_000,
  maxWaitTimeMs: 500,
  partitionsConsumedConcurrently: 8,
  commitIntervalMs: 1000,
  holdAfterMs: 1000,
};

const rebalancing = () =>
  Object.assign(new Error('The group is rebalancing, so a rejoin is needed'), { type: 'REBALANCE_IN_PROGRESS' });

/** A kafkajs client whose consumer hands its batch handler and group events to the test. */
const fakeKafka = () => {
  const listeners = new Map<string, (event: { payload: unknown }) => void>();
  let eachBatch: ((payload: kafkajs.EachBatchPayload) => Promise<void>) | undefined;
  /** What the member asked of kafkajs outside its batch handlers, in order. */
  const calls: string[] = [];
  const paused = new Set<number>();
  const consumer = {
    events: { GROUP_JOIN: 'consumer.group_join', FETCH: 'consumer.fetch', CRASH: 'consumer.crash' },
    on: (event: string, listener: (event: { payload: unknown }) => void) => listeners.set(event, listener),
    connect: async () => undefined,
    subscribe: async () => undefined,
    run: async (config: kafkajs.ConsumerRunConfig) => {
      eachBatch = config.eachBatch;
    },
    disconnect: async () => undefined,
    pause: (topics: kafkajs.TopicPartitions[]) => {
      for (const p of topics.flatMap((t) => t.partitions)) {
        paused.add(p);
        calls.push(`pause ${p}`);
      }
    },
    resume: (topics: kafkajs.TopicPartitions[]) => {
      for (const p of topics.flatMap((t) => t.partitions)) {
        paused.delete(p);
        calls.push(`resume ${p}`);
      }
    },
    commitOffsets: async (offsets: kafkajs.TopicPartitionOffsetAndMetadata[]) => {
      for (const { partition, offset } of offsets) calls.push(`commit ${partition}@${offset}`);
    },
  };
  return {
    kafka: { consumer: () => consumer } as unknown as kafkajs.Kafka,
    calls,
    paused,
    join: (memberAssignment: kafkajs.IMemberAssignment) =>
      listeners.get(consumer.events.GROUP_JOIN)?.({ payload: { memberAssignment } }),
    eachBatch: (payload: kafkajs.EachBatchPayload) => {
      assert.ok(eachBatch, 'the consumer is not running');
      return eachBatch(payload);
    },
  };
};

/** A batch of `offsets` on `partition` whose `heartbeat` answers `beat` and counts its calls. */
const batchOf = (partition: number, offsets: number[], beat: () => Promise<void> = async () => undefined) => {
  const calls = { heartbeats: 0, commits: 0, resolved: [] as string[] };
  const payload = {
    batch: {
      topic: TOPIC,
      partition,
      messages: offsets.map((offset) => ({
        offset: String(offset),
        key: Buffer.from(`call-${offset % 3}`),
        value: Buffer.from('{}'),
        headers: {},
        timestamp: '0',
        attributes: 0,
      })),
    },
    resolveOffset: (offset: string) => calls.resolved.push(offset),
    heartbeat: () => {
      calls.heartbeats++;
      return beat();
    },
    isRunning: () => true,
    isStale: () => false,
    commitOffsetsIfNecessary: async () => {
      calls.commits++;
    },
  } as unknown as kafkajs.EachBatchPayload;
  return { payload, calls };
};

/** A record handler whose records finish only when the test says so. */
const heldHandler = () => {
  const held = new Map<string, () => void>();
  return {
    handler: (record: LogRecord) =>
      new Promise<void>((resolve) => held.set(`${record.partition}/${record.offset}`, resolve)),
    releaseAll: () => {
      for (const resolve of held.values()) resolve();
      held.clear();
    },
  };
};

/**
 * A record handler that finishes every record at once but the one at `partition`/`offset`, which
 * waits for `release()`, or, as a handler retrying in place does, throws once its signal says its
 * partition was given up.
 */
const oneStuck = (partition: number, offset: number) => {
  const stuck = deferred();
  const handled: string[] = [];
  return {
    handler: async (record: LogRecord, signal: AbortSignal) => {
      if (record.partition === partition && record.offset === BigInt(offset)) {
        const givenUp = new Promise<never>((_, reject) =>
          signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true }),
        );
        await Promise.race([stuck.promise, givenUp]);
      }
      handled.push(`${record.partition}/${record.offset}`);
    },
    handled,
    release: () => stuck.resolve(),
  };
};

const start = (kafka: kafkajs.Kafka, options: Partial<ConsumeOptions> & Pick<ConsumeOptions, 'handler'>) =>
  KafkaConsumer.start(kafka, { groupId: 'processor', topics: [TOPIC], ...options }, settings, {}, (error) => error);

/** Moves mocked time on one heartbeat interval at a time, letting promise chains run in between. */
const advance = async (intervals: number) => {
  for (let i = 0; i < intervals; i++) {
    mock.timers.tick(INTERVAL_MS);
    await settled();
  }
};

describe('KafkaConsumer batch handler', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout', 'setInterval', 'Date'] }));
  afterEach(() => mock.timers.reset());

  test('a batch waiting for a full dispatcher keeps heartbeating, through a rebalance error, and stops when it returns', async () => {
    const fake = fakeKafka();
    const records = heldHandler();
    const member = await start(fake.kafka, { handler: records.handler, concurrency: 1 });
    let answer: () => Promise<void> = async () => undefined;
    const { payload, calls } = batchOf(0, [0, 1, 2], () => answer());
    // Record 0 holds the only slot (a backend outage): the batch waits to push record 1.
    const batch = fake.eachBatch(payload);
    const outcome = batch.then(
      () => undefined,
      (error: unknown) => error,
    );

    await advance(20); // 10 s: the session timeout
    assert.ok(calls.heartbeats >= 10, `${calls.heartbeats} heartbeats in 20 intervals while push waited`);
    assert.ok(calls.heartbeats <= 20, `${calls.heartbeats} heartbeats in 20 intervals: more than one per interval`);

    // A rebalance starts: every heartbeat is now answered with it, and the member keeps sending
    // them while it finishes its records (up to the rebalance timeout), so it is not dropped.
    answer = async () => {
      throw rebalancing();
    };
    const before = calls.heartbeats;
    await advance(40); // 20 s
    assert.ok(calls.heartbeats - before >= 20, `${calls.heartbeats - before} heartbeats in 40 intervals of rebalance`);

    records.releaseAll();
    await settled(3);
    records.releaseAll();
    await advance(2);
    const error = await outcome;
    assert.equal((error as { type?: string } | undefined)?.type, 'REBALANCE_IN_PROGRESS', 'kafkajs is told to rejoin');

    const after = calls.heartbeats;
    await advance(20);
    assert.equal(calls.heartbeats, after, 'no heartbeat once the batch returned');
    await member.stop();
  });

  test('a batch waiting for the assign callback keeps heartbeating', async () => {
    const fake = fakeKafka();
    const assigned = deferred();
    const member = await start(fake.kafka, { handler: async () => undefined, onAssigned: () => assigned.promise });
    fake.join({ [TOPIC]: [0] });
    const { payload, calls } = batchOf(0, [0]);
    const batch = fake.eachBatch(payload);

    await advance(20);
    assert.ok(calls.heartbeats >= 10, `${calls.heartbeats} heartbeats in 20 intervals while onAssigned ran`);

    assigned.resolve();
    await advance(2);
    await batch;
    assert.equal(calls.commits, 1, 'the batch went on once the callback finished');
    await member.stop();
  });

  test('a partition held by a record retried for a long time keeps one drain waiter, however long it is held', async (t) => {
    let live = 0;
    const drain = KeyedDispatcher.prototype.drain; // eslint-disable-line @typescript-eslint/unbound-method
    t.mock.method(
      KeyedDispatcher.prototype,
      'drain',
      function (this: KeyedDispatcher, ...args: Parameters<typeof drain>) {
        live++;
        return drain.apply(this, args).finally(() => live--);
      },
    );
    const fake = fakeKafka();
    const records = heldHandler();
    const member = await start(fake.kafka, { handler: records.handler });
    fake.join({ [TOPIC]: [0] });
    const { payload } = batchOf(0, [0]);
    const batch = fake.eachBatch(payload);

    await advance(200); // 100 s with record 0 retrying in place
    await batch;
    assert.equal(live, 1, `${live} drain waiters for one held partition`);

    records.releaseAll();
    await advance(2);
    assert.equal(live, 0);
    await member.stop();
  });

  test("a batch whose record is not finished after holdAfterMs returns, its partition paused: the member's other partitions are handled meanwhile; once it is finished its progress is committed and it is resumed", async () => {
    const fake = fakeKafka();
    const records = oneStuck(0, 1);
    const member = await start(fake.kafka, { handler: records.handler });
    fake.join({ [TOPIC]: [0, 1] });

    const held = batchOf(0, [0, 1, 2]);
    const batch = fake.eachBatch(held.payload);
    await settled();
    await advance(1);
    assert.deepEqual(fake.calls, [], 'not held before holdAfterMs');
    await advance(1);
    await batch;
    assert.deepEqual([...fake.paused], [0]);
    assert.deepEqual(held.calls.resolved, ['0', '1', '2'], 'its records were taken: kafkajs must not fetch them again');
    assert.deepEqual(records.handled, ['0/0', '0/2'], 'the records of other keys in the batch ran');

    // kafkajs fetches again: the other partition's batch is handled and committed as usual.
    const other = batchOf(1, [0, 1]);
    await fake.eachBatch(other.payload);
    assert.deepEqual(records.handled, ['0/0', '0/2', '1/0', '1/1']);
    assert.equal(other.calls.commits, 1);

    // What is finished was committed (offset 0, by the batch before it returned), never past the
    // unfinished record, however long it is held.
    assert.equal(held.calls.commits, 1);
    await advance(20);
    assert.deepEqual(fake.calls, ['pause 0']);

    records.release();
    await advance(2);
    assert.deepEqual(fake.calls.slice(-2), ['commit 0@3', 'resume 0']);
    assert.deepEqual([...fake.paused], []);
    await member.stop();
  });

  test('a held partition stays paused through a join that keeps it; revoked, its unfinished record is given up at once (left to the next owner, uncommitted) and it is resumed so that a later assignment is fetched', async () => {
    const fake = fakeKafka();
    const records = oneStuck(0, 0);
    const revoked: number[] = [];
    const member = await start(fake.kafka, {
      handler: records.handler,
      onRevoked: (partitions) => void revoked.push(...partitions.map((p) => p.partition)),
    });
    fake.join({ [TOPIC]: [0, 1] });
    const batch = fake.eachBatch(batchOf(0, [0]).payload);
    await settled();
    await advance(2);
    await batch;
    assert.deepEqual(fake.calls, ['pause 0']);

    // A new consumer group after a crash forgets pauses: the join pauses it again.
    fake.paused.clear();
    fake.join({ [TOPIC]: [0, 1] });
    assert.deepEqual([...fake.paused], [0]);

    fake.join({ [TOPIC]: [1] });
    await settled(3);
    assert.deepEqual(revoked, [0], 'revoked at once, not once the record retried in place is done');
    assert.deepEqual(records.handled, []);
    await advance(2);
    assert.deepEqual(fake.calls.at(-1), 'resume 0');
    assert.ok(!fake.calls.some((c) => c.startsWith('commit 0@')), 'nothing committed for a partition given up');

    // The member goes on with what it owns.
    const other = batchOf(1, [0]);
    await fake.eachBatch(other.payload);
    assert.deepEqual(records.handled, ['1/0']);
    assert.equal(other.calls.commits, 1);
    await member.stop();
    await member.done;
  });

  test('a batch of a held partition (fetched after kafkajs lost its pause) is left alone: nothing taken or resolved, the partition paused again', async () => {
    const fake = fakeKafka();
    const records = oneStuck(0, 0);
    const member = await start(fake.kafka, { handler: records.handler });
    fake.join({ [TOPIC]: [0] });
    const first = fake.eachBatch(batchOf(0, [0]).payload);
    await settled();
    await advance(2);
    await first;
    fake.paused.clear();

    const again = batchOf(0, [0, 1, 2]);
    await fake.eachBatch(again.payload);
    assert.deepEqual(again.calls.resolved, []);
    assert.deepEqual([...fake.paused], [0]);
    records.release();
    await advance(2);
    assert.deepEqual(records.handled, ['0/0'], 'no later record of the partition ran');
    await member.stop();
  });
});
