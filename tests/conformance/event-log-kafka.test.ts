import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { createKafkaEventLog, TOPIC_MAX_MESSAGE_BYTES } from '../../shared/adapters/event-log/kafka-event-log.ts';
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
        const stored = await log.read(topic, { limit: 10 });
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

describe('Kafka event log: no broker', () => {
  // The timeout is the bound the adapter promises: bounded retries, not kafkajs's minutes.
  test('opening the log fails with EventLogUnavailableError within seconds', { timeout: 15_000 }, async () => {
    await assert.rejects(
      createKafkaEventLog({ brokers: ['127.0.0.1:1'], logLevel: 'nothing' }),
      (error) => error instanceof EventLogUnavailableError && error.retriable,
    );
  });
});
