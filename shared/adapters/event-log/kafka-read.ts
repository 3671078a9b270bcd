/**
 * Reads records of a Kafka topic without a consumer group of the caller's: a short-lived consumer
 * in a throw-away group seeks each wanted partition and collects until the high watermark (as
 * seen when the read began) or the limit, then leaves and deletes its group.
 */
import { randomUUID } from 'node:crypto';
import type kafkajs from 'kafkajs';
import type { LogRecord, ReadTopicOptions } from '../../ports/event-log.ts';
import { EventLogUnavailableError } from '../../ports/event-log.ts';

interface Range {
  partition: number;
  start: bigint;
  /** Exclusive. */
  stop: bigint;
}

const READ_TIMEOUT_MS = 15_000;

/** A fetched kafkajs message as a port record (UTF-8 key, value and headers). */
export const messageToRecord = (topic: string, partition: number, message: kafkajs.KafkaMessage): LogRecord => ({
  topic,
  partition,
  offset: BigInt(message.offset),
  key: message.key?.toString('utf8') ?? '',
  value: message.value?.toString('utf8') ?? '',
  headers: Object.fromEntries(
    Object.entries(message.headers ?? {}).flatMap(([name, value]) => {
      const first = Array.isArray(value) ? value[0] : value;
      return first === undefined ? [] : [[name, first.toString()]];
    }),
  ),
  timestamp: new Date(Number(message.timestamp)),
});

/** Records of `topic` in (partition, offset) order; `admin` must be connected. */
export const readTopic = async (
  kafka: kafkajs.Kafka,
  admin: kafkajs.Admin,
  topic: string,
  options: ReadTopicOptions,
  retry: kafkajs.RetryOptions,
): Promise<LogRecord[]> => {
  const limit = options.limit ?? 100;
  const from = options.fromOffset ?? 0n;
  const ranges = new Map<number, Range>();
  for (const p of await admin.fetchTopicOffsets(topic)) {
    if (options.partition !== undefined && p.partition !== options.partition) continue;
    const start = from > BigInt(p.low) ? from : BigInt(p.low);
    const high = BigInt(p.high);
    const stop = start + BigInt(limit) < high ? start + BigInt(limit) : high;
    if (start < stop) ranges.set(p.partition, { partition: p.partition, start, stop });
  }
  if (ranges.size === 0 || limit <= 0) return [];

  const groupId = `event-log-read-${randomUUID()}`;
  const consumer = kafka.consumer({
    groupId,
    maxWaitTimeInMs: 100,
    allowAutoTopicCreation: false,
    retry: { ...retry, restartOnFailure: async () => false },
  });
  const records: LogRecord[] = [];
  const pending = new Set(ranges.keys());
  let finished: () => void = () => {};
  const complete = new Promise<void>((resolve) => (finished = resolve));
  let timer: NodeJS.Timeout | undefined;
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        const range = ranges.get(batch.partition);
        if (!range || !pending.has(batch.partition)) return;
        for (const message of batch.messages) {
          const offset = BigInt(message.offset);
          if (offset >= range.start && offset < range.stop)
            records.push(messageToRecord(topic, batch.partition, message));
        }
        if (BigInt(batch.lastOffset()) >= range.stop - 1n) {
          pending.delete(batch.partition);
          if (pending.size === 0) finished();
        }
      },
    });
    for (const range of ranges.values())
      consumer.seek({ topic, partition: range.partition, offset: range.start.toString() });
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new EventLogUnavailableError(`reading ${topic} took longer than ${READ_TIMEOUT_MS} ms`)),
        READ_TIMEOUT_MS,
      );
    });
    await Promise.race([complete, timeout]);
  } finally {
    clearTimeout(timer);
    await consumer.disconnect().catch(() => undefined);
    await admin.deleteGroups([groupId]).catch(() => undefined);
  }
  const seen = new Set<string>();
  return records
    .filter((r) => {
      const key = `${r.partition}/${r.offset}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    })
    .sort((a, b) => a.partition - b.partition || (a.offset < b.offset ? -1 : a.offset > b.offset ? 1 : 0))
    .slice(0, limit);
};
