import assert from 'node:assert/strict';
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

describe('Kafka event log: no broker', () => {
  // The timeout is the bound the adapter promises: bounded retries, not kafkajs's minutes.
  test('opening the log fails with EventLogUnavailableError within seconds', { timeout: 15_000 }, async () => {
    await assert.rejects(
      createKafkaEventLog({ brokers: ['127.0.0.1:1'], logLevel: 'nothing' }),
      (error) => error instanceof EventLogUnavailableError && error.retriable,
    );
  });
});
