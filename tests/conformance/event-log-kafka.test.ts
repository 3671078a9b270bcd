import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import kafkajs from 'kafkajs';
import { createKafkaEventLog, TOPIC_MAX_MESSAGE_BYTES } from '../../shared/adapters/event-log/kafka-event-log.ts';
import { partitionForKey } from '../../shared/adapters/event-log/partitioner.ts';
import { EventLogUnavailableError, RecordRefusedError } from '../../shared/ports/event-log.ts';
import { backend } from '../support/backends.ts';
import { eventLogConformance } from './event-log.ts';

const b = await backend('kafka');

eventLogConformance(
  'kafka',
  async () => ({
    log: await createKafkaEventLog({ brokers: b.url!.split(','), clientId: 'event-log-conformance' }),
    topicPrefix: 'conformance-',
  }),
  { skip: b.skip, deliveryTimeoutMs: 30_000, rebalanceTimeoutMs: 30_000 },
);

describe('Kafka event log: a topic that keeps its records', { skip: b.skip }, () => {
  test('is made with retention.ms=-1, whatever the broker retains; another topic keeps the broker default', async () => {
    const log = await createKafkaEventLog({
      brokers: b.url!.split(','),
      clientId: 'event-log-kept',
      logLevel: 'nothing',
    });
    const kafka = new kafkajs.Kafka({ brokers: b.url!.split(','), logLevel: kafkajs.logLevel.NOTHING });
    const admin = kafka.admin();
    try {
      const kept = `kept-${randomUUID()}`;
      const plain = `plain-${randomUUID()}`;
      await log.ensureTopics([
        { name: kept, partitions: 1, keepRecords: true },
        { name: plain, partitions: 1 },
      ]);
      await admin.connect();
      const { resources } = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [kept, plain].map((name) => ({
          type: kafkajs.ConfigResourceTypes.TOPIC,
          name,
          configNames: ['retention.ms'],
        })),
      });
      const retention = (name: string) =>
        resources.find((r) => r.resourceName === name)?.configEntries.find((e) => e.configName === 'retention.ms');
      assert.equal(retention(kept)?.configValue, '-1');
      assert.equal(retention(kept)?.isDefault, false);
      assert.notEqual(retention(plain)?.configValue, '-1');

      // A topic made before with a retention is not changed (its settings are the operator's), but
      // the start says so, with the command that mends it.
      const warnings: string[] = [];
      const write = process.stderr.write.bind(process.stderr);
      process.stderr.write = (chunk: string | Uint8Array, ...rest: never[]) => {
        if (String(chunk).includes(plain)) warnings.push(String(chunk));
        return write(chunk, ...rest);
      };
      try {
        await log.ensureTopics([{ name: plain, partitions: 1, keepRecords: true }]);
      } finally {
        process.stderr.write = write;
      }
      assert.equal(warnings.length, 1, warnings.join(''));
      assert.match(warnings[0]!, /deletes its records after retention\.ms=\d+.*--add-config retention\.ms=-1/);
    } finally {
      await admin.disconnect();
      await log.close();
    }
  });
});

describe('Kafka event log: one record too large for the topic', { skip: b.skip }, () => {
  test(
    'fails alone: the records published with it in the same produce request are written',
    { timeout: 60_000 },
    async () => {
      const log = await createKafkaEventLog({
        brokers: b.url!.split(','),
        clientId: 'event-log-too-large',
        logLevel: 'nothing',
      });
      try {
        const topic = `too-large-${randomUUID()}`;
        await log.ensureTopics([{ name: topic, partitions: 1 }]);
        // Published in one turn, so they share one produce batch; the topic takes at most 16 MB.
        const outcomes = await Promise.allSettled([
          log.publish(topic, [{ key: 'a', value: 'a' }]),
          log.publish(topic, [{ key: 'huge', value: 'x'.repeat(TOPIC_MAX_MESSAGE_BYTES + 1024 * 1024) }]),
          log.publish(topic, [{ key: 'b', value: 'b' }]),
        ]);
        assert.deepEqual(
          outcomes.map((o) => o.status),
          ['fulfilled', 'rejected', 'fulfilled'],
        );
        // The one error a caller may leave records out for: the broker refuses them for what they are.
        const refusal = (outcomes[1] as PromiseRejectedResult).reason as unknown;
        assert.ok(refusal instanceof RecordRefusedError, String(refusal));
        const stored = await log.read(topic, { limit: 10 });
        assert.deepEqual(stored.map((r) => r.key).sort(), ['a', 'b']);
      } finally {
        await log.close();
      }
    },
  );
});

describe('Kafka event log: records of one partition together larger than the topic takes', { skip: b.skip }, () => {
  test(
    'one publish of them is written whole, in order: the relay’s batch of one call’s big records is not refused',
    { timeout: 120_000 },
    async () => {
      const log = await createKafkaEventLog({
        brokers: b.url!.split(','),
        clientId: 'event-log-split',
        logLevel: 'nothing',
      });
      try {
        const topic = `split-${randomUUID()}`;
        await log.ensureTopics([{ name: topic, partitions: 1 }]);
        // Three records of one key of 7 MB each: 21 MB in one partition, over the topic's 16 MB.
        const values = ['a', 'b', 'c'].map((c) => c.repeat(7 * 1024 * 1024));
        assert.ok(values.length * values[0]!.length > TOPIC_MAX_MESSAGE_BYTES);
        const positions = await log.publish(
          topic,
          values.map((value) => ({ key: 'call-1', value })),
        );
        assert.deepEqual(
          positions.map((p) => p.offset),
          [0n, 1n, 2n],
        );
        // 21 MB is over a read's default bound (16 MiB), which holds the first two.
        assert.deepEqual(
          (await log.read(topic, { limit: 10 })).map((r) => r.value[0]),
          ['a', 'b'],
        );
        const stored = await log.read(topic, { limit: 10, maxBytes: 32 * 1024 * 1024 });
        assert.deepEqual(
          stored.map((r) => r.value[0]),
          ['a', 'b', 'c'],
        );
        assert.ok(stored.every((r, i) => r.value === values[i]));
      } finally {
        await log.close();
      }
    },
  );
});

describe('Kafka event log: a request of several partitions, one partition’s batch refused', { skip: b.skip }, () => {
  // The broker writes the other partitions' batches; kafkajs rolls back their sequence numbers all
  // the same. Sent again as it was, in halves, the broker answered OUT_OF_ORDER_SEQUENCE_NUMBER:
  // every publish of the request failed, outcome unknown, again at every retry, duplicating the
  // written records each time.
  test(
    'fails only the publish of the refused record; the others are written, and the log goes on',
    { timeout: 60_000 },
    async () => {
      const log = await createKafkaEventLog({
        brokers: b.url!.split(','),
        clientId: 'event-log-partition-refused',
        logLevel: 'nothing',
        topicDefaults: { configEntries: [{ name: 'max.message.bytes', value: '2000' }] },
      });
      try {
        const topic = `partition-refused-${randomUUID()}`;
        await log.ensureTopics([{ name: topic, partitions: 3 }]);
        // Read once and kept: the publishes below then reach the producer in the same turn.
        await log.partitionCount(topic);
        const keyOn = (partition: number) => {
          for (let n = 0; ; n++)
            if (partitionForKey(`call-${partition}-${n}`, 3) === partition) return `call-${partition}-${n}`;
        };
        const [a, c, huge] = [keyOn(0), keyOn(1), keyOn(2)];
        const record = (key: string, id: string, size = 200) => ({
          key,
          value: `${id}:${'x'.repeat(size)}`,
          headers: { ce_id: id },
        });
        // In one turn: one produce request of three partitions, the third's batch over 2000 bytes.
        const outcomes = await Promise.allSettled([
          // Halved across partitions, the first half would hold a0 and a1 but not a2: not the batch
          // the broker wrote, so not taken for a duplicate of it.
          log.publish(topic, [record(a, 'a0'), record(c, 'c0'), record(a, 'a1'), record(a, 'a2')]),
          log.publish(topic, [record(huge, 'huge', 3000)]),
          log.publish(topic, [record(c, 'c1')]),
        ]);
        assert.deepEqual(
          outcomes.map((o) => o.status),
          ['fulfilled', 'rejected', 'fulfilled'],
          outcomes.map((o) => (o.status === 'rejected' ? String(o.reason) : 'written')).join('; '),
        );
        assert.ok((outcomes[1] as PromiseRejectedResult).reason instanceof RecordRefusedError);
        // The producer's sequence numbers are right again: a partition written before takes more.
        await log.publish(topic, [record(a, 'a3'), record(c, 'c2')]);

        const stored = await log.read(topic, { limit: 100 });
        const ids = (partition: number) => stored.filter((r) => r.partition === partition).map((r) => r.headers.ce_id!);
        // Written again after the refusal (the request had written them): duplicates of one id,
        // which a consumer drops; deduplicated, each key's records are in their order.
        const firstSeen = (list: string[]) => list.filter((id, i) => list.indexOf(id) === i);
        assert.deepEqual(firstSeen(ids(0)), ['a0', 'a1', 'a2', 'a3']);
        assert.deepEqual(firstSeen(ids(1)), ['c0', 'c1', 'c2']);
        assert.deepEqual(ids(2), []);
        // The last copies are in order too: the resend is in order.
        const lastSeen = (list: string[]) => list.filter((id, i) => list.lastIndexOf(id) === i);
        assert.deepEqual(lastSeen(ids(0)), ['a0', 'a1', 'a2', 'a3']);
        assert.deepEqual(lastSeen(ids(1)), ['c0', 'c1', 'c2']);
      } finally {
        await log.close();
      }
    },
  );
});

describe('Kafka event log: no broker', () => {
  // The timeout is the bound the adapter promises: bounded retries, not kafkajs's minutes.
  test('opening the log fails with EventLogUnavailableError within seconds', { timeout: 15_000 }, async () => {
    await assert.rejects(
      createKafkaEventLog({ brokers: ['127.0.0.1:1'], logLevel: 'nothing' }),
      (error) => error instanceof EventLogUnavailableError && error.retriable,
    );
  });
});
