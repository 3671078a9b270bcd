import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { createKafkaEventLog } from '../../shared/adapters/event-log/kafka-event-log.ts';
import { EventLogUnavailableError } from '../../shared/ports/event-log.ts';
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
        // Published in one turn, so they share one produce request; the topic takes at most 8 MB.
        const outcomes = await Promise.allSettled([
          log.publish(topic, [{ key: 'a', value: 'a' }]),
          log.publish(topic, [{ key: 'huge', value: 'x'.repeat(9 * 1024 * 1024) }]),
          log.publish(topic, [{ key: 'b', value: 'b' }]),
        ]);
        assert.deepEqual(
          outcomes.map((o) => o.status),
          ['fulfilled', 'rejected', 'fulfilled'],
        );
        const stored = await log.read(topic, { limit: 10 });
        assert.deepEqual(stored.map((r) => r.key).sort(), ['a', 'b']);
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
