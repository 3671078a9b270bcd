/**
 * Reads records of a Kafka topic without a consumer group of the caller's: a short-lived consumer
 * in a throw-away group seeks each wanted partition and collects until the high watermark (as
 * seen when the read began) or the limit, then leaves and deletes its group.
 */
import { randomUUID } from 'node:crypto';
import type kafkajs from 'kafkajs';
import type { LogRecord, ReadTopicOptions, RecordPosition } from '../../ports/event-log.ts';
import { EventLogUnavailableError, READ_MAX_BYTES } from '../../ports/event-log.ts';

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

/** The bytes of a fetched message's key, value and headers, as a read counts them (ReadTopicOptions.maxBytes). */
const messageBytes = (message: kafkajs.KafkaMessage): number => {
  let bytes = (message.key?.length ?? 0) + (message.value?.length ?? 0);
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    const first = Array.isArray(value) ? value[0] : value;
    bytes += Buffer.byteLength(name) + (first === undefined ? 0 : Buffer.byteLength(first));
  }
  return bytes;
};

/**
 * Broker answers that a partition's leader moved or is not elected yet: right after a topic is
 * made, or while a broker restarts. kafkajs's `fetchTopicOffsets` gives up on them at once (it
 * retries only an unknown topic), with the stale leaders still in its metadata.
 */
const LEADER_MOVED = new Set([
  'NOT_LEADER_FOR_PARTITION',
  'LEADER_NOT_AVAILABLE',
  'REPLICA_NOT_AVAILABLE',
  'UNKNOWN_LEADER_EPOCH',
  'FENCED_LEADER_EPOCH',
]);

/**
 * `admin.fetchTopicOffsets(topic)`, asked again after a fresh read of the topic's metadata while a
 * partition's leader has moved (`retry.retries` times, `retry`'s back-off between); any other
 * failure, and the last one, is passed on.
 */
export const fetchTopicOffsets = async (
  admin: kafkajs.Admin,
  topic: string,
  retry: kafkajs.RetryOptions,
): Promise<Array<kafkajs.SeekEntry & { high: string; low: string }>> => {
  const retries = retry.retries ?? 5;
  let wait = retry.initialRetryTime ?? 300;
  for (let attempt = 0; ; attempt++) {
    try {
      return await admin.fetchTopicOffsets(topic);
    } catch (error) {
      const type = String((error as { type?: unknown }).type);
      if (!LEADER_MOVED.has(type) || attempt >= retries) throw error;
      await new Promise((resolve) => setTimeout(resolve, wait));
      wait = Math.min(wait * (retry.multiplier ?? 2), retry.maxRetryTime ?? 30_000);
      // The one admin call that re-reads the cluster's metadata (leaders included) before it asks:
      // `fetchTopicMetadata` answers from a broker without replacing what the admin client holds.
      await admin.listGroups().catch(() => undefined);
    }
  }
};

/** Records of `topic` in (partition, offset) order; `admin` must be connected. */
export const readTopic = async (
  kafka: kafkajs.Kafka,
  admin: kafkajs.Admin,
  topic: string,
  options: ReadTopicOptions,
  retry: kafkajs.RetryOptions,
): Promise<LogRecord[]> => {
  const limit = options.limit ?? 100;
  const maxBytes = options.maxBytes ?? READ_MAX_BYTES;
  const from = options.fromOffset ?? 0n;
  const ranges = new Map<number, Range>();
  for (const p of await fetchTopicOffsets(admin, topic, retry)) {
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
  const byPosition = (a: RecordPosition, b: RecordPosition) =>
    a.partition - b.partition || (a.offset < b.offset ? -1 : a.offset > b.offset ? 1 : 0);
  const kept: (LogRecord & { bytes: number })[] = [];
  const seen = new Set<string>();
  let keptBytes = 0;
  const pending = new Set(ranges.keys());
  /**
   * Past the byte bound, the last records in (partition, offset) order go (one is always kept),
   * and nothing after the last one kept is read: what is kept stays the first records of the
   * topic's order that fit, though partitions are fetched side by side.
   */
  const trim = () => {
    kept.sort(byPosition);
    while (keptBytes > maxBytes && kept.length > 1) keptBytes -= kept.pop()!.bytes;
    const last = kept.at(-1)!;
    for (const range of ranges.values()) {
      if (range.partition < last.partition) continue;
      if (range.partition === last.partition) range.stop = last.offset + 1n;
      pending.delete(range.partition);
    }
  };
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
          if (offset < range.start || offset >= range.stop || seen.has(`${batch.partition}/${offset}`)) continue;
          seen.add(`${batch.partition}/${offset}`);
          const bytes = messageBytes(message);
          kept.push({ ...messageToRecord(topic, batch.partition, message), bytes });
          keptBytes += bytes;
          if (keptBytes > maxBytes) {
            trim();
            if (!pending.has(batch.partition)) break;
          }
        }
        if (pending.has(batch.partition) && BigInt(batch.lastOffset()) >= range.stop - 1n)
          pending.delete(batch.partition);
        if (pending.size === 0) finished();
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
  return kept
    .sort(byPosition)
    .slice(0, limit)
    .map(({ bytes: _bytes, ...record }) => record);
};
