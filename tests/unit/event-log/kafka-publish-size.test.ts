/**
 * The Kafka event log against a broker that refuses record batches over a topic's size limit
 * (MESSAGE_TOO_LARGE). kafkajs puts one partition's records of a send into one batch, so records
 * that each fit were refused together: the call-events relay's publish of 500 events failed whole,
 * at every restart, and calls.events.v1 stopped for every team. Over fake kafkajs clients whose
 * producer refuses any request with a partition's batch over `LIMIT` bytes, as a broker does.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import kafkajs from 'kafkajs';
import { KafkaEventLog, TOPIC_MAX_MESSAGE_BYTES } from '../../../shared/adapters/event-log/kafka-event-log.ts';
import { recordBytes, recordBytesAtMost } from '../../../shared/adapters/event-log/kafka-request-size.ts';
import { partitionForKey } from '../../../shared/adapters/event-log/partitioner.ts';
import { createPersonalData } from '../../../shared/adapters/crypto/personal-data.ts';
import { newDataKey } from '../../../shared/adapters/crypto/aes-gcm.ts';
import { toRecord } from '../../../shared/cloudevents.ts';
import { ceSequence } from '../../../services/projections/call-events-relay.ts';
import { TRANSCRIPT_MAX_BYTES } from '../../../shared/domain/submission/truncate-utf8.ts';
import { SEGMENT_LIMITS, segmentsFromText } from '../../../shared/domain/transcript/transcript-segments.ts';
import { type OutgoingRecord, RecordRefusedError } from '../../../shared/ports/event-log.ts';

const TOPIC = 'calls.events.v1';
const PARTITIONS = 3;
/** The fake topic's `max.message.bytes`. */
const LIMIT = 1000;

const fakeAdmin = {
  listTopics: async () => [TOPIC],
  fetchTopicMetadata: async () => ({
    topics: [{ name: TOPIC, partitions: Array.from({ length: PARTITIONS }, (_, partitionId) => ({ partitionId })) }],
  }),
  disconnect: async () => undefined,
} as unknown as kafkajs.Admin;

const messageBytes = (m: kafkajs.Message) =>
  recordBytes({
    key: String(m.key),
    value: String(m.value),
    headers: Object.fromEntries(Object.entries(m.headers ?? {}).map(([k, v]) => [k, String(v)])),
  });

/** A broker of one topic: a request with a partition's batch over `LIMIT` is refused whole, as MESSAGE_TOO_LARGE. */
const fakeBroker = () => {
  const partitions: kafkajs.Message[][] = Array.from({ length: PARTITIONS }, () => []);
  const requests: Array<{ records: number; largestBatch: number; refused: boolean }> = [];
  const producer = {
    connect: async () => undefined,
    disconnect: async () => undefined,
    sendBatch: async ({ topicMessages }: kafkajs.ProducerBatch): Promise<kafkajs.RecordMetadata[]> => {
      const batches = new Map<number, kafkajs.Message[]>();
      for (const { messages } of topicMessages ?? [])
        for (const m of messages) batches.set(m.partition!, [...(batches.get(m.partition!) ?? []), m]);
      const sizes = [...batches.values()].map((batch) => batch.reduce((sum, m) => sum + messageBytes(m), 0));
      const largestBatch = Math.max(...sizes);
      const refused = largestBatch > LIMIT;
      requests.push({ records: [...batches.values()].flat().length, largestBatch, refused });
      if (refused)
        throw new kafkajs.KafkaJSProtocolError(
          Object.assign(
            new Error('The request included a message larger than the max message size the server will accept'),
            { type: 'MESSAGE_TOO_LARGE', code: 10, retriable: false },
          ),
        );
      return [...batches].map(([partition, batch]) => {
        const baseOffset = partitions[partition]!.length;
        partitions[partition]!.push(...batch);
        return { topicName: TOPIC, partition, errorCode: 0, baseOffset: String(baseOffset) };
      });
    },
  } as unknown as kafkajs.Producer;
  return { producer, partitions, requests };
};

const open = (broker: ReturnType<typeof fakeBroker>, options: { maxRequestBytes?: number } = {}) =>
  new KafkaEventLog({} as kafkajs.Kafka, fakeAdmin, broker.producer, () => broker.producer, {
    brokers: ['unused:9092'],
    ...options,
  });

/** `count` records of ~300 bytes, their keys taking turns: three or four of a key fill a batch. */
const records = (count: number, keys: number, tag = ''): OutgoingRecord[] =>
  Array.from({ length: count }, (_, i) => ({
    key: `call-${i % keys}`,
    value: `${tag}${i}:${'x'.repeat(250)}`,
    headers: { ce_id: `${tag}${i}` },
  }));

/** The values of each key as the broker holds them, in log order. */
const byKey = (partitions: kafkajs.Message[][]) => {
  const keys = new Map<string, string[]>();
  for (const partition of partitions)
    for (const m of partition) keys.set(String(m.key), [...(keys.get(String(m.key)) ?? []), String(m.value)]);
  return keys;
};

test('one publish whose records of one key come to more than the topic takes is written whole, each key in order', async () => {
  const broker = fakeBroker();
  const log = open(broker);
  const sent = records(30, 4);
  const positions = await log.publish(TOPIC, sent);

  assert.equal(broker.partitions.flat().length, sent.length, 'a record is missing or written twice');
  const expected = new Map<string, string[]>();
  for (const r of sent) expected.set(r.key, [...(expected.get(r.key) ?? []), r.value]);
  assert.deepEqual(byKey(broker.partitions), expected);
  for (const [i, position] of positions.entries()) {
    assert.equal(position.partition, partitionForKey(sent[i]!.key, PARTITIONS));
    assert.equal(String(broker.partitions[position.partition]![Number(position.offset)]?.value), sent[i]!.value);
  }
});

test('requests are cut to maxRequestBytes before they are sent: none is refused', async () => {
  const broker = fakeBroker();
  const log = open(broker, { maxRequestBytes: LIMIT });
  await log.publish(TOPIC, records(30, 4));
  assert.equal(broker.partitions.flat().length, 30);
  assert.deepEqual(
    broker.requests.filter((r) => r.refused),
    [],
  );
});

test('a record too large on its own fails its publish alone; the publishes beside it are written', async () => {
  const broker = fakeBroker();
  const log = open(broker);
  const huge = { key: 'call-huge', value: 'h'.repeat(LIMIT) };
  // In one turn: one produce batch.
  const outcomes = await Promise.allSettled([
    log.publish(TOPIC, records(6, 2, 'a')),
    log.publish(TOPIC, [{ key: 'call-0', value: 'before' }, huge, { key: 'call-0', value: 'after' }]),
    log.publish(TOPIC, records(6, 2, 'b')),
  ]);
  assert.deepEqual(
    outcomes.map((o) => o.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  const refusal = (outcomes[1] as PromiseRejectedResult).reason as RecordRefusedError;
  assert.ok(refusal instanceof RecordRefusedError, String(refusal));
  assert.equal((refusal.cause as { type?: string }).type, 'MESSAGE_TOO_LARGE');
  const values = broker.partitions.flat().map((m) => String(m.value));
  assert.equal(values.filter((v) => /^[ab]\d+:/.test(v)).length, 12);
  assert.ok(!values.includes(huge.value));
  // The refused publish stops at its refused record: what came after it in the publish is not sent.
  assert.ok(!values.includes('after'), 'a record after the refused one was written');
});

test('a non-retriable answer not about the records (UNKNOWN_SERVER_ERROR) is passed on as it is, never as a refusal of the records, and the request is not cut in halves', async () => {
  const broker = fakeBroker();
  const serverError = new kafkajs.KafkaJSProtocolError(
    Object.assign(new Error('The server experienced an unexpected error when processing the request'), {
      type: 'UNKNOWN',
      code: -1,
      retriable: false,
    }),
  );
  let requests = 0;
  broker.producer.sendBatch = async () => {
    requests++;
    throw serverError;
  };
  const log = open(broker);
  const error = await log.publish(TOPIC, records(6, 2)).then(
    () => assert.fail('published'),
    (e: unknown) => e,
  );
  assert.ok(!(error instanceof RecordRefusedError), String(error));
  assert.equal(error, serverError);
  assert.equal(requests, 1);
});

test("the largest valid call's largest record fits in a topic this log creates", async () => {
  // TranscriptRecorded of a 512,000-byte inline transcript of characters JSON escapes to 6 bytes,
  // in as many lines as make segments (each adds its fields), sealed as the relay publishes it.
  const lines = SEGMENT_LIMITS.maxSegments;
  const perLine = Math.floor(TRANSCRIPT_MAX_BYTES / lines) - 1;
  let text = Array.from({ length: lines }, () => '\u0001'.repeat(perLine)).join('\n');
  text += '\u0001'.repeat(TRANSCRIPT_MAX_BYTES - Buffer.byteLength(text));
  const segments = segmentsFromText(text);
  assert.equal(segments.length, lines);
  const key = newDataKey();
  const personalData = createPersonalData({
    obtain: async () => key,
    find: async () => key,
    destroyed: async () => false,
    destroy: async () => undefined,
    close: async () => undefined,
  });
  const callId = '0193a1b2-0000-7000-8000-000000000101';
  const data = await personalData.seal(callId, 'TranscriptRecorded', {
    source: 'inline',
    text,
    truncated: true,
    durationSeconds: 1e6,
    engine: null,
    segments: segments.map((s) => ({ ...s })),
    at: new Date().toISOString(),
  });
  const record = toRecord({
    id: '0193a1b2-0000-7000-8000-0000000000ff',
    type: 'call.transcript.recorded',
    source: '/calls',
    subject: callId,
    time: new Date().toISOString(),
    data,
    extensions: {
      sequence: ceSequence(3),
      teamid: '0193a1b2-0000-7000-8000-0000000000aa',
      traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`,
    },
  });
  const bytes = recordBytes(record);
  assert.ok(bytes > 9_000_000, `the worst case is smaller than thought: ${bytes} bytes`);
  // One record in a batch: the batch's own header (61 bytes) on top.
  assert.ok(bytes + 61 < TOPIC_MAX_MESSAGE_BYTES, `${bytes} bytes do not fit in ${TOPIC_MAX_MESSAGE_BYTES}`);
});

test('the size counted without reading the text is never below the measured one, whatever the text', () => {
  for (const text of [
    'plain ascii',
    'é'.repeat(100),
    '€'.repeat(100),
    '😀'.repeat(100),
    '\ud800'.repeat(100),
    '\u0000\u0001',
  ]) {
    const record: OutgoingRecord = { key: text, value: text.repeat(3), headers: { [`h-${text}`]: text } };
    assert.ok(recordBytesAtMost(record) >= recordBytes(record), JSON.stringify(text.slice(0, 4)));
  }
});
