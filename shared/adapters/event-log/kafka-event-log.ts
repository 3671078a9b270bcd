/**
 * The event log on Apache Kafka through kafkajs: an idempotent producer (acks=all, one request in
 * flight, partitions chosen with Kafka's murmur2 so they match the SQL log), consumers in
 * `kafka-consumer.ts`, inspection reads in `kafka-read.ts`. kafkajs errors become the port's
 * errors here and nowhere else. Retries are bounded: a dead broker fails a call in seconds, and a
 * publish has a deadline (`publishTimeoutMs`), so a hung broker fails it too. A publish that
 * fails after its records were sent may have been written: its error says `outcomeUnknown`. A
 * producer whose sequence state the broker refuses (out of order sequence, unknown producer id,
 * old epoch: kafkajs does not recover from these by itself) is replaced by a new one.
 *
 * Size: the broker refuses a partition's record batch over the topic's `max.message.bytes` whole,
 * and kafkajs makes one batch of a partition's records in a send, so records that each fit can be
 * refused together (the call-events relay's 500 events of one publish, again at each retry: the
 * topic would stop). So records go out in produce requests of at most `maxRequestBytes`, one after
 * another (a key's records keep their order), and a request the broker refuses is sent again in
 * halves, down to single records: only a record refused on its own fails, and only its publish. A
 * refused request of several partitions is sent again one partition per request, by a new producer
 * (see `produceNow`'s `send`).
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
import { EventLogUnavailableError, RecordRefusedError, UnknownTopicError } from '../../ports/event-log.ts';
import { GroupCommit } from '../group-commit.ts';
import { KafkaConsumer, type KafkaConsumerSettings } from './kafka-consumer.ts';
import { fixKafkajsRequestQueue } from './kafkajs-request-queue.ts';
import { fetchTopicOffsets, readTopic } from './kafka-read.ts';
import { recordBytes, recordBytesAtMost, runsOf } from './kafka-request-size.ts';
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
  /**
   * Most bytes of records in one produce request (a record larger than that goes alone); default
   * `DEFAULT_MAX_REQUEST_BYTES`.
   */
  maxRequestBytes?: number;
}

export const DEFAULT_PUBLISH_TIMEOUT_MS = 10_000;

/**
 * `max.message.bytes` of the topics this adapter creates: the largest record batch, and so the
 * largest record, a topic takes. The largest valid call's largest record is its
 * TranscriptRecorded on calls.events.v1: a 512,000-byte inline transcript of characters JSON
 * escapes to 6 bytes (U+0001 → `\u0001`) in 20,000 lines holds 3 MB of text and 3.9 MB of
 * segments, 7 MB of JSON that sealing (base64) makes about 9.3 MB. Kafka's default of 1 MB, and
 * the 8 MB topics had before, would refuse it. The broker's own `message.max.bytes` does not
 * matter for these topics (the topic's setting overrides it), nor do the consumers' fetch sizes
 * (a batch larger than them is still returned whole when it is the first one).
 */
export const TOPIC_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

/**
 * Bytes of records per produce request: Kafka's own producer default (`max.request.size`), under
 * every topic's limit, even a topic made with the broker's defaults or with the 8 MB limit topics
 * had before, so only a record larger than that is sent alone.
 */
export const DEFAULT_MAX_REQUEST_BYTES = 1024 * 1024;

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
 * Broker answers about the records themselves, the same at every try: a batch over the topic's
 * `max.message.bytes` or the segment size, a record the broker's validation rejects (compaction
 * without a key, say). kafkajs marks other answers non-retriable too (UNKNOWN_SERVER_ERROR, which is
 * often transient; authorization and SASL failures, which an operator fixes): those are about the
 * log, and are never taken for a refusal of the records.
 */
const RECORD_REFUSALS = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_RECORD']);

/**
 * kafkajs errors → port errors: an unknown topic → `UnknownTopicError`; records the broker refuses
 * for what they are → `RecordRefusedError`; connection failures, timeouts and exhausted retries of
 * transient errors → `EventLogUnavailableError`. Anything else is passed on as it is.
 */
const toEventLogError = (error: unknown, topic?: string): unknown => {
  if (
    error instanceof EventLogUnavailableError ||
    error instanceof UnknownTopicError ||
    error instanceof RecordRefusedError
  )
    return error;
  const chain = causes(error);
  if (topic !== undefined && chain.some((e) => (e as { type?: unknown }).type === 'UNKNOWN_TOPIC_OR_PARTITION'))
    return new UnknownTopicError(topic);
  if (chain.some((e) => RECORD_REFUSALS.has(String((e as { type?: unknown }).type))))
    return new RecordRefusedError(`Kafka refused the records: ${(error as Error).message}`, { cause: error });
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
  /**
   * `sent` once handed to the producer; `abandoned` if its deadline passed before that; `heard`
   * restarts its deadline when Kafka answered one of the requests its batch is sent in.
   */
  progress: { sent: boolean; abandoned: boolean; heard: () => void };
}

/** One record of a publish on its way, with where it goes and its size in a batch. */
interface Placed {
  item: PublishRequest;
  /** Its place among the publish's records. */
  index: number;
  topic: string;
  partition: number;
  message: kafkajs.Message;
  record: OutgoingRecord;
}

/** The topic and partition a record goes to, as one key (a broker accepts or refuses each one's batch whole). */
const partitionKey = (r: Placed): string => `${r.topic}\u0000${r.partition}`;

/** A request that failed in a way that ends the whole batch: the log is unreachable, or the producer unusable. */
class ProduceOutage extends Error {
  constructor(
    cause: unknown,
    /** The publishes with records in the failed request. */
    readonly sentIn: ReadonlySet<PublishRequest>,
    /** What those publishes are told. */
    readonly outcome: EventLogUnavailableError,
  ) {
    super(outcome.message, { cause });
  }
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
  private readonly maxRequestBytes: number;
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
    this.maxRequestBytes = options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
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
      holdAfterMs: 1000,
      ...options.consumer,
    };
  }

  async ensureTopics(topics: TopicSpec[]): Promise<void> {
    this.assertOpen();
    try {
      const existing = new Set(await this.admin.listTopics());
      // Best effort: a cluster that does not let this client read topic settings still starts.
      await this.warnOfRetention(topics.filter((t) => t.keepRecords && existing.has(t.name))).catch(() => undefined);
      const missing = topics.filter((t) => !existing.has(t.name));
      if (missing.length === 0) return;
      await this.admin.createTopics({
        waitForLeaders: true,
        topics: missing.map((t) => ({
          topic: t.name,
          numPartitions: t.partitions,
          replicationFactor: this.options.topicDefaults?.replicationFactor ?? -1,
          configEntries: [
            ...(this.options.topicDefaults?.configEntries ?? [
              { name: 'max.message.bytes', value: String(TOPIC_MAX_MESSAGE_BYTES) },
            ]),
            // Kept until an operator removes them, whatever the broker's retention.
            ...(t.keepRecords ? [{ name: 'retention.ms', value: '-1' }] : []),
          ],
        })),
      });
    } catch (error) {
      throw toEventLogError(error);
    }
  }

  /**
   * Says so (a warning on stderr, with the command that mends it) when a topic that should keep its
   * records was made before with a retention: its records would be deleted by age. The topic's
   * settings are the operator's, so they are not changed here.
   */
  private async warnOfRetention(kept: TopicSpec[]): Promise<void> {
    if (kept.length === 0) return;
    const { resources } = await this.admin.describeConfigs({
      includeSynonyms: false,
      resources: kept.map((t) => ({
        type: kafkajs.ConfigResourceTypes.TOPIC,
        name: t.name,
        configNames: ['retention.ms'],
      })),
    });
    for (const resource of resources) {
      const retention = resource.configEntries.find((e) => e.configName === 'retention.ms')?.configValue;
      if (retention === undefined || retention === '-1') continue;
      process.stderr.write(
        `${JSON.stringify({
          level: 'WARN',
          logger: 'event-log',
          topic: resource.resourceName,
          retentionMs: retention,
          message: `topic ${resource.resourceName} deletes its records after retention.ms=${retention}, but its records are kept until an operator removes them (dead letters wait for a redrive); set it with: kafka-configs.sh --bootstrap-server <broker> --alter --entity-type topics --entity-name ${resource.resourceName} --add-config retention.ms=-1`,
        })}\n`,
      );
    }
  }

  async publish(topic: string, records: OutgoingRecord[]): Promise<RecordPosition[]> {
    this.assertOpen();
    const partitions = await this.partitionCount(topic);
    if (records.length === 0) return [];
    const progress = { sent: false, abandoned: false, heard: () => {} };
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    // The deadline is how long Kafka may stay silent, not how long a whole publish may take: a
    // publish of many megabytes goes in many requests, one after the other (`produceNow`), and
    // each answer restarts it. A hung broker still fails the publish within the deadline.
    const deadline = new Promise<never>((_, reject) => {
      const arm = () => {
        clearTimeout(timer);
        if (settled) return;
        timer = setTimeout(() => {
          settled = true;
          progress.abandoned = !progress.sent;
          const seconds = this.publishTimeoutMs / 1000;
          reject(
            progress.sent
              ? new EventLogUnavailableError(
                  `Kafka did not confirm the publish: no answer for ${seconds} s; the records may have been written`,
                  { outcomeUnknown: true },
                )
              : new EventLogUnavailableError(`Kafka did not take the publish within ${seconds} s; nothing was sent`),
          );
        }, this.publishTimeoutMs);
      };
      progress.heard = arm;
      arm();
    });
    try {
      return await Promise.race([this.publisher.submit({ topic, records, partitions, progress }), deadline]);
    } finally {
      settled = true;
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
      const offsets = await fetchTopicOffsets(this.admin, topic, RETRY);
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
   * Produces every publish of the batch still within its deadline; one outcome per publish.
   * Partitions are chosen here (murmur2), so each record's offset is its partition's base offset in
   * its request plus its place in that partition there.
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

  /**
   * The records of every publish, in order, in requests of at most `maxRequestBytes`, each sent
   * once the one before it was confirmed. A publish fails when one of its records is refused on its
   * own (its later records are then not sent), or when a request fails because the log is
   * unreachable (then so does every publish not yet written whole).
   */
  private async produceNow(items: PublishRequest[]): Promise<Array<RecordPosition[] | Error>> {
    for (const item of items) item.progress.sent = true;
    const positions = new Map(items.map((item) => [item, new Array<RecordPosition>(item.records.length)]));
    const failed = new Map<PublishRequest, Error>();
    /** How many records of each publish are written. */
    const written = new Map<PublishRequest, number>();
    const placed = items.flatMap((item) =>
      item.records.map((record, index): Placed => {
        const partition = partitionForKey(record.key, item.partitions);
        return {
          item,
          index,
          topic: item.topic,
          partition,
          message: {
            key: record.key,
            value: record.value,
            partition,
            ...(record.headers ? { headers: record.headers } : {}),
          },
          record,
        };
      }),
    );
    const pending = (records: Placed[]) => records.filter((r) => !failed.has(r.item));

    /** Publishes with records in a refused request of several partitions: some may be written. */
    const maybeWritten = new Set<PublishRequest>();

    /**
     * Sends `records`; a request refused for its records is sent again in halves, one after the
     * other, to find the record refused alone. Any other refusal (unknown topic, not authorized, a
     * server error) fails every publish in the request: halves would not help.
     *
     * A refused request of several partitions is never halved across them. The broker refuses a
     * partition's batch whole but writes the other partitions' batches; kafkajs raises the first
     * partition error and rolls back the sequence numbers of every partition of the request, the
     * written ones too, so the next request to those would be answered OUT_OF_ORDER_SEQUENCE_NUMBER
     * (a producer taken for broken, the publish retried whole, forever, its written records
     * duplicated each time). So the producer is replaced first (`sendRequest`: a new id, fresh
     * sequence numbers), then each partition's records go again in requests of that partition
     * alone, halved within it, where kafkajs's rollback is right. The records the refused request
     * did write are written again: consumers deduplicate them by `ce_id`. A key's records are in one
     * partition, sent in their order, so each key keeps its order.
     */
    const send = async (records: Placed[]): Promise<void> => {
      if (records.length === 0) return;
      const refused = await this.sendRequest(records, positions, written, maybeWritten);
      // Kafka answered: every publish of the batch, written or waiting for its request, has its
      // deadline restarted (a batch's later publishes wait for the requests before theirs).
      for (const item of items) item.progress.heard();
      if (refused === undefined) return;
      if (records.length === 1 || !(refused instanceof RecordRefusedError)) {
        for (const r of records) failed.set(r.item, refused);
        return;
      }
      const byPartition = new Map<string, Placed[]>();
      for (const r of records) {
        const key = partitionKey(r);
        const partition = byPartition.get(key);
        if (partition) partition.push(r);
        else byPartition.set(key, [r]);
      }
      if (byPartition.size > 1) {
        for (const r of records) maybeWritten.add(r.item);
        for (const partition of byPartition.values()) await send(pending(partition));
        return;
      }
      const half = Math.ceil(records.length / 2);
      await send(records.slice(0, half));
      await send(pending(records.slice(half)));
    };

    try {
      // Measured only when the records may not fit one request: most batches are far below it.
      let atMost = 0;
      for (const r of placed) atMost += recordBytesAtMost(r.record);
      const runs =
        atMost <= this.maxRequestBytes ? [placed] : runsOf(placed, (r) => recordBytes(r.record), this.maxRequestBytes);
      for (const run of runs) await send(pending(run));
    } catch (error) {
      if (!(error instanceof ProduceOutage)) throw error;
      // Every publish not yet written whole fails with the outage, told whether it may be written.
      const { cause, sentIn, outcome } = error;
      const reason = (cause as Error).message;
      const outcomeOf = (item: PublishRequest): Error => {
        if (sentIn.has(item) && outcome.outcomeUnknown) return outcome;
        if (written.has(item) || maybeWritten.has(item))
          return new EventLogUnavailableError(`Kafka publish failed part way, its first records written: ${reason}`, {
            cause,
            outcomeUnknown: true,
          });
        if (sentIn.has(item)) return outcome;
        return new EventLogUnavailableError(`Kafka publish not sent, a request before it failed: ${reason}`, { cause });
      };
      for (const item of items)
        if (!failed.has(item) && written.get(item) !== item.records.length) failed.set(item, outcomeOf(item));
    }
    return items.map((item) => failed.get(item) ?? positions.get(item)!);
  }

  /**
   * One produce request of `records`. Resolves with nothing once they are written (their positions
   * filled in), or with the error the broker refused them with (nothing of a one-partition request
   * is written then): `RecordRefusedError` when it refused the records themselves. Throws
   * `ProduceOutage` when the log is unreachable or the producer unusable. After a refusal of a
   * request of several partitions the producer's sequence numbers are wrong (see `send`): it is
   * replaced before the next request.
   */
  private async sendRequest(
    records: Placed[],
    positions: Map<PublishRequest, RecordPosition[]>,
    written: Map<PublishRequest, number>,
    maybeWritten: ReadonlySet<PublishRequest>,
  ): Promise<Error | undefined> {
    if (this.producerBroken) {
      try {
        await this.replaceProducer();
      } catch (error) {
        const sentIn = new Set(records.filter((r) => maybeWritten.has(r.item)).map((r) => r.item));
        throw new ProduceOutage(
          error,
          sentIn,
          new EventLogUnavailableError(
            `Kafka publish failed, the records may have been written: no new producer: ${(error as Error).message}`,
            { cause: error, outcomeUnknown: true },
          ),
        );
      }
    }
    const byTopic = new Map<string, kafkajs.Message[]>();
    for (const r of records) {
      const messages = byTopic.get(r.topic) ?? [];
      byTopic.set(r.topic, messages);
      messages.push(r.message);
    }
    let metadata: kafkajs.RecordMetadata[];
    const unreachableBefore = this.unreachable;
    try {
      metadata = await this.producer.sendBatch({
        acks: -1,
        topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })),
      });
      this.unreachable = false;
    } catch (error) {
      const broken = brokenProducerState(error);
      if (broken) {
        this.producerBroken = true;
        process.stderr.write(
          `${JSON.stringify({ level: 'WARN', logger: 'event-log', message: `Kafka refused the producer's sequence state (${(error as Error).message}); replacing the producer` })}\n`,
        );
      }
      const mapped = toEventLogError(error, byTopic.size === 1 ? records[0]!.topic : undefined);
      // The broker answered, refusing the records (too large, say) or the request (not authorized,
      // a server error): not written.
      const refused = mapped instanceof UnknownTopicError || (!broken && !(mapped instanceof EventLogUnavailableError));
      this.unreachable = !refused;
      // kafkajs rolled back the sequence numbers of every partition of the request, the written ones too.
      if (refused && new Set(records.map(partitionKey)).size > 1) this.producerBroken = true;
      if (refused) return mapped instanceof Error ? mapped : new Error(String(mapped));
      const sentIn = new Set(records.map((r) => r.item));
      // The log was already unreachable when this request began, and still refuses connections:
      // nothing was sent. The first failure after a success is never taken for that, since the
      // request in flight when a broker dies may have been written.
      if (!broken && unreachableBefore && nothingSent(error))
        throw new ProduceOutage(error, sentIn, mapped as EventLogUnavailableError);
      // The request may have reached the broker before it failed: the records may be written.
      throw new ProduceOutage(
        error,
        sentIn,
        new EventLogUnavailableError(
          `Kafka publish failed, the records may have been written: ${(error as Error).message}`,
          { cause: error, outcomeUnknown: true },
        ),
      );
    }
    const next = new Map<string, bigint>();
    for (const m of metadata) next.set(`${m.topicName}\u0000${m.partition}`, BigInt(m.baseOffset ?? '0'));
    for (const { item, index, topic, partition } of records) {
      const key = `${topic}\u0000${partition}`;
      const offset = next.get(key);
      if (offset === undefined) throw new Error(`Kafka did not report an offset for ${topic}/${partition}`);
      next.set(key, offset + 1n);
      positions.get(item)![index] = { topic, partition, offset };
      written.set(item, (written.get(item) ?? 0) + 1);
    }
    return undefined;
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
