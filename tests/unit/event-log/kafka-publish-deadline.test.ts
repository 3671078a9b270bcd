/**
 * The Kafka event log's publish deadline against a producer being replaced: a publish told
 * "nothing was sent" when its deadline passed must never be sent afterwards, even when the new
 * producer connects late. Over fake kafkajs clients, so the timing is the test's to decide.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type * as kafkajs from 'kafkajs';
import { KafkaEventLog } from '../../../shared/adapters/event-log/kafka-event-log.ts';
import { EventLogUnavailableError } from '../../../shared/ports/event-log.ts';
import { deferred } from '../../support/deferred.ts';

const TOPIC = 'calls.submitted.v1';

const fakeAdmin = {
  listTopics: async () => [TOPIC],
  fetchTopicMetadata: async () => ({ topics: [{ name: TOPIC, partitions: [{ partitionId: 0 }] }] }),
  disconnect: async () => undefined,
} as unknown as kafkajs.Admin;

/** A producer whose `sendBatch` answers `answer` and records what it was sent. */
const fakeProducer = (
  answer: () => Promise<kafkajs.RecordMetadata[]>,
  connect: () => Promise<void> = async () => undefined,
) => {
  const sent: string[] = [];
  const producer = {
    connect,
    disconnect: async () => undefined,
    sendBatch: async ({ topicMessages }: kafkajs.ProducerBatch) => {
      for (const { messages } of topicMessages ?? []) sent.push(...messages.map((m) => String(m.key)));
      return answer();
    },
  } as unknown as kafkajs.Producer;
  return { producer, sent };
};

test('a publish whose deadline passes while a refused producer is replaced is never sent', async () => {
  // The broker refuses the first producer's sequence state: the next send replaces it.
  const refusing = fakeProducer(async () => {
    throw Object.assign(new Error('The broker received an out of order sequence number'), {
      type: 'OUT_OF_ORDER_SEQUENCE_NUMBER',
    });
  });
  const connected = deferred();
  const replacement = fakeProducer(
    async () => [{ topicName: TOPIC, partition: 0, errorCode: 0, baseOffset: '7' }],
    () => connected.promise,
  );
  const log = new KafkaEventLog({} as kafkajs.Kafka, fakeAdmin, refusing.producer, () => replacement.producer, {
    brokers: ['unused:9092'],
    publishTimeoutMs: 50,
  });
  const record = (key: string) => ({ key, value: `{"call":"${key}"}` });

  await assert.rejects(log.publish(TOPIC, [record('first')]), EventLogUnavailableError);
  assert.deepEqual(refusing.sent, ['first']);

  // The new producer connects only after this publish's deadline: its caller hears "nothing was sent".
  const second = log.publish(TOPIC, [record('second')]);
  await assert.rejects(second, (error: unknown) => {
    assert.ok(error instanceof EventLogUnavailableError);
    assert.equal(error.outcomeUnknown, false, error.message);
    assert.match(error.message, /nothing was sent/);
    return true;
  });
  connected.resolve();
  // The publish after it goes out on the new producer; the abandoned one never does.
  assert.deepEqual(await log.publish(TOPIC, [record('third')]), [{ topic: TOPIC, partition: 0, offset: 7n }]);
  assert.deepEqual(replacement.sent, ['third']);
});

test('the deadline is how long Kafka stays silent: a publish in many requests, each answered in time, succeeds', async () => {
  // Each request is answered in 20 ms, under the 60 ms deadline; the whole publish takes six.
  let offset = 0;
  const slow = fakeProducer(async () => {
    await new Promise((resolve) => setTimeout(resolve, 20));
    const baseOffset = String(offset);
    offset += 1;
    return [{ topicName: TOPIC, partition: 0, errorCode: 0, baseOffset }];
  });
  const log = new KafkaEventLog({} as kafkajs.Kafka, fakeAdmin, slow.producer, () => slow.producer, {
    brokers: ['unused:9092'],
    publishTimeoutMs: 60,
    // One record per request: each record is about 1 KB.
    maxRequestBytes: 1500,
  });
  const records = Array.from({ length: 6 }, (_, i) => ({ key: `k${i}`, value: 'x'.repeat(1000) }));
  const positions = await log.publish(TOPIC, records);
  assert.deepEqual(
    positions.map((p) => p.offset),
    [0n, 1n, 2n, 3n, 4n, 5n],
  );
  assert.equal(slow.sent.length, 6, 'six requests of one record');

  // A broker that stops answering still fails the publish at the deadline, saying it may be written.
  const silent = fakeProducer(() => new Promise(() => {}));
  const hung = new KafkaEventLog({} as kafkajs.Kafka, fakeAdmin, silent.producer, () => silent.producer, {
    brokers: ['unused:9092'],
    publishTimeoutMs: 60,
  });
  await assert.rejects(hung.publish(TOPIC, [{ key: 'k', value: 'v' }]), (error: unknown) => {
    assert.ok(error instanceof EventLogUnavailableError);
    assert.equal(error.outcomeUnknown, true, error.message);
    return true;
  });
});
