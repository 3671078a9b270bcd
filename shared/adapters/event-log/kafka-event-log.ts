/**
 * The event log on Apache Kafka through kafkajs: an idempotent producer (acks=all, one request in
 * flight, partitions chosen with Kafka's murmur2 so they match the SQL log), consumers in
 * `kafka-consumer.ts`, inspection reads in `kafka-read.ts`. kafkajs errors become the port's
 * errors here and nowhere else. Retries are bounded: a dead broker fails a call in seconds, and a
 * publish has a deadline (`publishTimeoutMs`), so a hung broker fails it too. A publish that
 * fails after its records were sent may have been written: its error says `outcomeUnknown`. A
 * producer whose sequence state the broker refuses (out of order sequence, unknown producer id,
 * old epoch: kafkajs does not recover from these by itself) is replaced by a new one.
 */
import kafkajs from 'kafkajs';
import type {
  Consumer,
  ConsumeOptions,
  EventLog,
  LogRecord,
  OutgoingRecord,
  ReadTopicOptions,
  RecordPosition,
  TopicSpec,
} from '../../ports/event-log.ts';
import { EventLogUnavailableError, UnknownTopicError } from '../../ports/event-log.ts';
import { GroupCommit } from '../group-commit.ts';
import { KafkaConsumer, type KafkaConsumerSettings } from './kafka-consumer.ts';
import { fixKafkajsRequestQueue } from './kafkajs-request-queue.ts';
import { readTopic } from './kafka-read.ts';
import { partitionForKey } from './partitioner.ts';

export interface KafkaEventLogOptions {
  /** `host:port` of one or more brokers. */
  brokers: string[];
  /** Client id sent to the brokers; default `call-ingestion`. */
  clientId?: string;
  /** Settings for topics `ensureTopics` creates. */
  topicDefaults?: {
    /** Default -1: the broker's `default.replication.factor`. */
    replicationFactor?: number;
    configEntries?: Array<{ name: string; value: string }>;
  };
  /** Consumer group timing; see `KafkaConsumerSettings`. */
  consumer?: Partial<KafkaConsumerSettings>;
  /**
   * kafkajs's own log lines (JSON on stderr); default `'error'`. The protocol errors kafkajs logs
   * for responses it handles itself (a rebalance in progress, a coordinator still loading) count as
   * debug.
   */
  logLevel?: 'nothing' | 'error' | 'warn' | 'info' | 'debug';
  /** Publishes arriving within this window share a produce request; default 0 (the next turn). */
  publishWindowMs?: number;
  /**
   * A publish not confirmed by the broker within this time fails with `EventLogUnavailableError`:
   * `outcomeUnknown` if its records were already sent, otherwise they are never sent. Default 10 s.
   */
  publishTimeoutMs?: number;
}

export const DEFAULT_PUBLISH_TIMEOUT_MS = 10_000;

/**
 * `max.message.bytes` of the topics this adapter creates. The largest valid CallSubmitted record
 * (a 512,000-byte transcript of characters JSON must escape, plus every other field at its bound)
 * is about 3.5 MB; Kafka's default of 1 MB would refuse it.
 */
export const TOPIC_MAX_MESSAGE_BYTES = 8 * 1024 * 1024;

/** About 1.5 s of back-off over 4 retries, on top of 1 s connection timeouts. */
const RETRY: kafkajs.RetryOptions = {
  initialRetryTime: 100,
  maxRetryTime: 1000,
  retries: 4,
  factor: 0.2,
  multiplier: 2,
};

const LOG_LEVELS = {
  nothing: kafkajs.logLevel.NOTHING,
  error: kafkajs.logLevel.ERROR,
  warn: kafkajs.logLevel.WARN,
  info: kafkajs.logLevel.INFO,
  debug: kafkajs.logLevel.DEBUG,
} as const;

// By name: kafkajs exports only some of its error classes at run time.
/** kafkajs log entries as JSON lines on stderr, without the noise of handled protocol errors. */
const logCreator: kafkajs.logCreator =
  (configured) =>
  ({ namespace, label, log }) => {
    if (namespace === 'Connection' && log.message.startsWith('Response') && configured < kafkajs.logLevel.DEBUG) return;
    process.stderr.write(`${JSON.stringify({ level: label, logger: 'kafkajs', namespace, ...log })}\n`);
  };

const CONNECTION_ERRORS = new Set([
  'KafkaJSConnectionError',
  'KafkaJSConnectionClosedError',
  'KafkaJSRequestTimeoutError',
  'KafkaJSBrokerNotFound',
  'KafkaJSNumberOfRetriesExceeded',
  'KafkaJSTimeout',
  'KafkaJSLockTimeout',
  'KafkaJSGroupCoordinatorNotFound',
  'KafkaJSMetadataNotLoaded',
  'KafkaJSTopicMetadataNotLoaded',
  'KafkaJSNoBrokerAvailableError',
]);
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'EHOSTUNREACH',
]);

/** The error and what caused it (`cause`, kafkajs's `originalError`), outermost first. */
const causes = (error: unknown): unknown[] => {
  const chain: unknown[] = [];
  let e = error as { cause?: unknown; originalError?: unknown } | null | undefined;
  while (e !== undefined && e !== null && chain.length < 10) {
    chain.push(e);
    e = (e.cause ?? e.originalError) as typeof e;
  }
  return chain;
};

/**
 * kafkajs errors → port errors: an unknown topic → `UnknownTopicError`; connection failures,
 * timeouts and exhausted retries of transient errors → `EventLogUnavailableError`.
 */
const toEventLogError = (error: unknown, topic?: string): unknown => {
  if (error instanceof EventLogUnavailableError || error instanceof UnknownTopicError) return error;
  const chain = causes(error);
  if (topic !== undefined && chain.some((e) => (e as { type?: unknown }).type === 'UNKNOWN_TOPIC_OR_PARTITION'))
    return new UnknownTopicError(topic);
  const transient =
    chain.some(
      (e) => CONNECTION_ERRORS.has((e as Error).name) || NETWORK_CODES.has((e as { code?: string }).code ?? ''),
    ) ||
    (error instanceof kafkajs.KafkaJSError && error.retriable);
  if (!transient) return error;
  return new EventLogUnavailableError(`Kafka unavailable: ${(error as Error).message}`, { cause: error });
};

interface PublishRequest {
  topic: string;
  records: OutgoingRecord[];
  partitions: number;
  /** `sent` once handed to the producer; `abandoned` if its deadline passed before that. */
  progress: { sent: boolean; abandoned: boolean };
}

/** Broker answers meaning the producer's id, epoch or sequence numbers are no longer usable. */
const BROKEN_PRODUCER_STATE = new Set([
  'OUT_OF_ORDER_SEQUENCE_NUMBER',
  'UNKNOWN_PRODUCER_ID',
  'INVALID_PRODUCER_EPOCH',
  'INVALID_PRODUCER_ID_MAPPING',
]);
const brokenProducerState = (error: unknown): boolean =>
  causes(error).some((e) => BROKEN_PRODUCER_STATE.has(String((e as { type?: unknown }).type)));

/**
 * Errors that say no broker could be reached: the connection was refused or the name unknown.
 * Alone they prove nothing: kafkajs reconnects inside its retries, and a produce sent on a
 * connection that then died surfaces as the reconnect's refusal. See `send`.
 */
const NOTHING_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH']);
const nothingSent = (error: unknown): boolean => {
  const chain = causes(error);
  const root = chain[chain.length - 1] as { code?: string; name?: string } | undefined;
  return (
    NOTHING_SENT_CODES.has(root?.code ?? '') ||
    root?.name === 'KafkaJSBrokerNotFound' ||
    root?.name === 'KafkaJSNoBrokerAvailableError'
  );
};

/** The log over connected kafkajs clients; exported for the tests of its publish path. */
export class KafkaEventLog implements EventLog {
  private readonly partitionCounts = new Map<string, number>();
  private readonly consumers = new Set<KafkaConsumer>();
  private readonly publisher: GroupCommit<PublishRequest, RecordPosition[]>;
  private readonly consumerSettings: KafkaConsumerSettings;
  private readonly publishTimeoutMs: number;
  /** Set when the broker refused the producer's sequence state; the next send replaces it. */
  private producerBroken = false;
  /** The last produce failed and none succeeded since: the log is known to be unreachable. */
  private unreachable = false;
  private closed = false;

  constructor(
    private readonly kafka: kafkajs.Kafka,
    private readonly admin: kafkajs.Admin,
    private producer: kafkajs.Producer,
    private readonly newProducer: () => kafkajs.Producer,
    private readonly options: KafkaEventLogOptions,
  ) {
    this.publishTimeoutMs = options.publishTimeoutMs ?? DEFAULT_PUBLISH_TIMEOUT_MS;
    this.publisher = new GroupCommit((items) => this.produce(items), {
      windowMs: options.publishWindowMs ?? 0,
      name: 'kafka-producer',
    });
    this.consumerSettings = {
      sessionTimeoutMs: 10_000,
      heartbeatIntervalMs: 500,
      rebalanceTimeoutMs: 30_000,
      maxWaitTimeMs: 500,
      partitionsConsumedConcurrently: 8,
      commitIntervalMs: 1000,
      ...options.consumer,
    };
  }

  async ensureTopics(topics: TopicSpec[]): Promise<void> {
    this.assertOpen();
    try {
      const existing = new Set(await this.admin.listTopics());
      const missing = topics.filter((t) => !existing.has(t.name));
      if (missing.length === 0) return;
      await this.admin.createTopics({
        waitForLeaders: true,
        topics: missing.map((t) => ({
          topic: t.name,
          numPartitions: t.partitions,
          replicationFactor: this.options.topicDefaults?.replicationFactor ?? -1,
          configEntries: this.options.topicDefaults?.configEntries ?? [
            { name: 'max.message.bytes', value: String(TOPIC_MAX_MESSAGE_BYTES) },
          ],
        })),
      });
    } catch (error) {
      throw toEventLogError(error);
    }
  }

  async publish(topic: string, records: OutgoingRecord[]): Promise<RecordPosition[]> {
    this.assertOpen();
    const partitions = await this.partitionCount(topic);
    if (records.length === 0) return [];
    const progress = { sent: false, abandoned: false };
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        progress.abandoned = !progress.sent;
        const seconds = this.publishTimeoutMs / 1000;
        reject(
          progress.sent
            ? new EventLogUnavailableError(
                `Kafka did not confirm the publish within ${seconds} s; the records may have been written`,
                { outcomeUnknown: true },
              )
            : new EventLogUnavailableError(`Kafka did not take the publish within ${seconds} s; nothing was sent`),
        );
      }, this.publishTimeoutMs);
    });
    try {
      return await Promise.race([this.publisher.submit({ topic, records, partitions, progress }), deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  async consume(options: ConsumeOptions): Promise<Consumer> {
    this.assertOpen();
    for (const topic of options.topics) await this.partitionCount(topic);
    const consumer = await KafkaConsumer.start(this.kafka, options, this.consumerSettings, RETRY, (error) =>
      toEventLogError(error),
    );
    this.consumers.add(consumer);
    void consumer.done.catch(() => undefined).then(() => this.consumers.delete(consumer));
    return consumer;
  }

  async read(topic: string, options: ReadTopicOptions = {}): Promise<LogRecord[]> {
    this.assertOpen();
    await this.partitionCount(topic);
    try {
      return await readTopic(this.kafka, this.admin, topic, options, RETRY);
    } catch (error) {
      throw toEventLogError(error, topic);
    }
  }

  async endOffsets(topic: string): Promise<{ partition: number; offset: bigint }[]> {
    this.assertOpen();
    await this.partitionCount(topic);
    try {
      const offsets = await this.admin.fetchTopicOffsets(topic);
      return offsets
        .map((p) => ({ partition: p.partition, offset: BigInt(p.high) }))
        .sort((a, b) => a.partition - b.partition);
    } catch (error) {
      throw toEventLogError(error, topic);
    }
  }

  async committedOffset(groupId: string, topic: string, partition: number): Promise<bigint | undefined> {
    this.assertOpen();
    try {
      const [offsets] = await this.admin.fetchOffsets({ groupId, topics: [topic] });
      const offset = offsets?.partitions.find((p) => p.partition === partition)?.offset;
      return offset === undefined || BigInt(offset) < 0n ? undefined : BigInt(offset);
    } catch (error) {
      throw toEventLogError(error, topic);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.allSettled([...this.consumers].map((c) => c.stop()));
    await this.publisher.drain();
    await Promise.allSettled([this.producer.disconnect(), this.admin.disconnect()]);
  }

  /** A new idempotent producer (new id, sequence numbers from 0) in place of a refused one. */
  private async replaceProducer(): Promise<void> {
    const old = this.producer;
    this.producer = this.newProducer();
    this.producerBroken = false;
    void old.disconnect().catch(() => undefined);
    try {
      await this.producer.connect();
    } catch (error) {
      this.producerBroken = true;
      throw toEventLogError(error);
    }
  }

  /** Read once per topic and kept: the count this log partitions its publishes by. */
  async partitionCount(topic: string): Promise<number> {
    const cached = this.partitionCounts.get(topic);
    if (cached !== undefined) return cached;
    try {
      // listTopics first: asking for an unknown topic's metadata makes kafkajs log an error.
      if (!(await this.admin.listTopics()).includes(topic)) throw new UnknownTopicError(topic);
      const { topics } = await this.admin.fetchTopicMetadata({ topics: [topic] });
      const count = topics[0]?.partitions.length ?? 0;
      if (count === 0) throw new UnknownTopicError(topic);
      this.partitionCounts.set(topic, count);
      return count;
    } catch (error) {
      throw toEventLogError(error, topic);
    }
  }

  /**
   * One produce request for every publish of the batch still within its deadline; one outcome per
   * publish. Partitions are chosen here (murmur2), so each record's offset is its partition's base
   * offset plus its place in that partition.
   */
  private async produce(items: PublishRequest[]): Promise<Array<RecordPosition[] | Error>> {
    if (this.producerBroken) await this.replaceProducer();
    // A publish whose deadline passed while it waited (for its turn, or for a new producer to
    // connect) is never sent: its caller was told "nothing was sent". Checked and marked sent in
    // one step, with no await between, so the deadline cannot fall between the two.
    const live = items.filter((item) => !item.progress.abandoned);
    const outcomes = new Map<PublishRequest, RecordPosition[] | Error>();
    if (live.length > 0) (await this.produceNow(live)).forEach((outcome, i) => outcomes.set(live[i]!, outcome));
    return items.map(
      (item) => outcomes.get(item) ?? new EventLogUnavailableError('publish abandoned after its deadline'),
    );
  }

  private async produceNow(items: PublishRequest[]): Promise<Array<RecordPosition[] | Error>> {
    for (const item of items) item.progress.sent = true;
    const byTopic = new Map<string, kafkajs.Message[]>();
    const placed = items.map(({ topic, records, partitions }) => {
      const messages = byTopic.get(topic) ?? [];
      byTopic.set(topic, messages);
      return records.map((record) => {
        const partition = partitionForKey(record.key, partitions);
        messages.push({
          key: record.key,
          value: record.value,
          partition,
          ...(record.headers ? { headers: record.headers } : {}),
        });
        return { topic, partition };
      });
    });
    let metadata: kafkajs.RecordMetadata[];
    const unreachableBefore = this.unreachable;
    try {
      metadata = await this.producer.sendBatch({
        acks: -1,
        topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
      });
      this.unreachable = false;
    } catch (error) {
      this.unreachable = true;
      const broken = brokenProducerState(error);
      if (broken) {
        this.producerBroken = true;
        process.stderr.write(
          `${JSON.stringify({ level: 'WARN', logger: 'event-log', message: `Kafka refused the producer's sequence state (${(error as Error).message}); replacing the producer` })}\n`,
        );
      }
      const mapped = toEventLogError(error, items.length === 1 ? items[0]!.topic : undefined);
      if (mapped instanceof UnknownTopicError) throw mapped;
      // The broker refused the records (too large, say): not written. In a request of several
      // publishes the refusal may concern one of them only: each is sent again on its own, so one
      // caller's record never fails another's.
      if (!broken && !(mapped instanceof EventLogUnavailableError)) {
        if (items.length === 1) throw mapped;
        return Promise.all(
          items.map((item) =>
            this.produce([item]).then(
              ([outcome]) => outcome!,
              (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
            ),
          ),
        );
      }
      // The log was already unreachable when this produce began, and still refuses connections:
      // nothing was sent. The first failure after a success is never taken for that, since the
      // request in flight when a broker dies may have been written.
      if (!broken && unreachableBefore && nothingSent(error)) throw mapped;
      // The request may have reached the broker before it failed: the records may be written.
      throw new EventLogUnavailableError(
        `Kafka publish failed, the records may have been written: ${(error as Error).message}`,
        { cause: error, outcomeUnknown: true },
      );
    }
    const next = new Map<string, bigint>();
    for (const m of metadata) next.set(`${m.topicName}\u0000${m.partition}`, BigInt(m.baseOffset ?? '0'));
    return placed.map((positions) =>
      positions.map(({ topic, partition }) => {
        const key = `${topic}\u0000${partition}`;
        const offset = next.get(key);
        if (offset === undefined) throw new Error(`Kafka did not report an offset for ${topic}/${partition}`);
        next.set(key, offset + 1n);
        return { topic, partition, offset };
      }),
    );
  }

  private assertOpen(): void {
    if (this.closed) throw new EventLogUnavailableError('the event log is closed');
  }
}

/**
 * Connects to Kafka (admin client and idempotent producer) and returns the event log.
 * @throws EventLogUnavailableError when no broker answers within a few seconds.
 */
export const createKafkaEventLog = async (options: KafkaEventLogOptions): Promise<EventLog> => {
  fixKafkajsRequestQueue();
  const kafka = new kafkajs.Kafka({
    clientId: options.clientId ?? 'call-ingestion',
    brokers: options.brokers,
    logLevel: LOG_LEVELS[options.logLevel ?? 'error'],
    logCreator,
    connectionTimeout: 1000,
    requestTimeout: 10_000,
    retry: RETRY,
  });
  const admin = kafka.admin({ retry: RETRY });
  const newProducer = () =>
    kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      allowAutoTopicCreation: false,
      createPartitioner: kafkajs.Partitioners.DefaultPartitioner,
      retry: RETRY,
    });
  const producer = newProducer();
  try {
    await admin.connect();
    await producer.connect();
  } catch (error) {
    await Promise.allSettled([producer.disconnect(), admin.disconnect()]);
    throw toEventLogError(error);
  }
  return new KafkaEventLog(kafka, admin, producer, newProducer, options);
};
