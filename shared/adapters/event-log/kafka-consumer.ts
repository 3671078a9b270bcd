/**
 * One member of a Kafka consumer group (kafkajs, `eachBatch`, no auto-commit). Each batch is
 * pushed into the keyed dispatcher; the batch handler then waits until that partition's records
 * are finished and commits, so by the time kafkajs rejoins the group in a rebalance nothing of
 * this member is in flight and its progress is committed. All the while a batch handler is open,
 * a timer heartbeats for it (`batch-heartbeat.ts`).
 *
 * Except a partition whose records are not finished after `holdAfterMs` (one of them retried in
 * place, say): kafkajs fetches from a broker again only once every batch of its last fetch has
 * returned (its fetcher awaits the worker queue), so a batch that waited for such a record would
 * hold every partition the member reads from that broker. The partition is *held* instead: paused
 * in kafkajs (a paused partition is left out of fetch requests and of their answers) and its batch
 * handler returns, so the member's other partitions are fetched and handled meanwhile. Its records
 * stay in the dispatcher, which finishes them in order (per key) as before; their offsets were
 * resolved, so kafkajs will not fetch them again, and the committed offset is still the
 * dispatcher's, never past an unfinished record. Once they are all finished the partition's
 * progress is committed and it is resumed: no later record of it is fetched before. kafkajs keeps
 * a pause across a rejoin but not across the restart of its consumer after a crash, so every join
 * pauses the held partitions the member still owns again. A held partition that is revoked is given
 * up at once: its unfinished records are abandoned (a record retried in place stops, uncommitted)
 * for the next owner to take up from the committed offset (`release`). A rebalance no longer waits
 * for a held partition's records either, only for the others' batches: up to `holdAfterMs`.
 *
 * kafkajs has no pre-revoke hook: after each join, revoked = previous assignment − new one and
 * assigned = new − previous, then `onRevoked` / `onAssigned` run (before any record of the new
 * assignment is handled). A handler error stops the member without throwing into kafkajs (which
 * would retry the batch).
 */
import type kafkajs from 'kafkajs';
import type { ConsumeOptions, Consumer, ConsumerStatus, PartitionRef } from '../../ports/event-log.ts';
import { EventLogUnavailableError } from '../../ports/event-log.ts';
import { keepHeartbeating } from './batch-heartbeat.ts';
import { ConsumerStatusTracker } from './consumer-status.ts';
import { KeyedDispatcher, partitionKey } from './keyed-dispatcher.ts';
import { messageToRecord } from './kafka-read.ts';

/** Group timing of Kafka consumers. */
export interface KafkaConsumerSettings {
  /** Broker drops a member silent this long; default 10000. */
  sessionTimeoutMs: number;
  /** default 500: how quickly members notice a rebalance. */
  heartbeatIntervalMs: number;
  /** How long the broker waits for members to rejoin; default 30000. */
  rebalanceTimeoutMs: number;
  /** Longest wait of an empty fetch; default 500. */
  maxWaitTimeMs: number;
  /** Partitions whose batches are handled at once; default 8. */
  partitionsConsumedConcurrently: number;
  /** Commit at least this often while a long batch finishes; default 1000. */
  commitIntervalMs: number;
  /**
   * A batch whose records are not all finished after this long returns and its partition is held
   * (paused until they are), so that the member's other partitions are fetched; default 1000.
   */
  holdAfterMs: number;
}

type EachBatch = kafkajs.EachBatchPayload;

/** Resolves `true` when `promise` settles first, `false` after `ms`; never leaves a timer behind. */
const settlesWithin = (promise: Promise<unknown>, ms: number): Promise<boolean> => {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    promise.then(() => true),
    new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms))),
  ]).finally(() => clearTimeout(timer));
};

export class KafkaConsumer implements Consumer {
  readonly done: Promise<void>;
  private readonly dispatcher: KeyedDispatcher;
  private owned = new Map<string, PartitionRef>();
  private readonly committed = new Map<string, bigint>();
  /** Partitions paused until the records of their last batch are finished. */
  private readonly held = new Map<string, PartitionRef>();
  /** onRevoked / onAssigned of the latest join; batches wait for it. */
  private callbacks: Promise<void> = Promise.resolve();
  private failure: { error: unknown } | undefined;
  private stopping: Promise<void> | undefined;
  private settle: { resolve: () => void; reject: (error: unknown) => void } = { resolve: () => {}, reject: () => {} };
  private readonly tracker: ConsumerStatusTracker;

  private constructor(
    private readonly consumer: kafkajs.Consumer,
    private readonly options: ConsumeOptions,
    private readonly settings: KafkaConsumerSettings,
    private readonly toEventLogError: (error: unknown) => unknown,
  ) {
    this.done = new Promise((resolve, reject) => (this.settle = { resolve, reject }));
    this.done.catch(() => undefined);
    this.tracker = new ConsumerStatusTracker(options.log, { groupId: options.groupId, topics: options.topics });
    this.dispatcher = new KeyedDispatcher(options.handler, { concurrency: options.concurrency ?? 64 });
    void this.dispatcher.failure.then((error) => this.fail(error));
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      this.tracker.running();
      this.joined(payload.memberAssignment);
    });
    consumer.on(consumer.events.FETCH, () => this.tracker.running());
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      // kafkajs restarts the member after a retriable crash (it rejoins); anything else ends it.
      if (payload.restart) this.tracker.retrying(payload.error);
      else this.fail(this.toEventLogError(payload.error));
    });
  }

  /** Joins the group and starts consuming; resolves after the first join. */
  static async start(
    kafka: kafkajs.Kafka,
    options: ConsumeOptions,
    settings: KafkaConsumerSettings,
    retry: kafkajs.RetryOptions,
    toEventLogError: (error: unknown) => unknown,
  ): Promise<KafkaConsumer> {
    const consumer = kafka.consumer({
      groupId: options.groupId,
      sessionTimeout: settings.sessionTimeoutMs,
      heartbeatInterval: settings.heartbeatIntervalMs,
      rebalanceTimeout: settings.rebalanceTimeoutMs,
      maxWaitTimeInMs: settings.maxWaitTimeMs,
      allowAutoTopicCreation: false,
      // Transient failures restart the member (kafkajs rejoins); anything else ends it.
      retry: {
        ...retry,
        restartOnFailure: async (error) => toEventLogError(error) instanceof EventLogUnavailableError,
      },
    });
    const member = new KafkaConsumer(consumer, options, settings, toEventLogError);
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: options.topics, fromBeginning: options.fromBeginning ?? true });
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: settings.partitionsConsumedConcurrently,
        eachBatch: (payload) => member.eachBatch(payload),
      });
    } catch (error) {
      await consumer.disconnect().catch(() => undefined);
      throw toEventLogError(error);
    }
    return member;
  }

  assignment(): PartitionRef[] {
    return [...this.owned.values()].map((ref) => ({ ...ref }));
  }

  status(): ConsumerStatus {
    return this.tracker.snapshot(this.owned.size);
  }

  async stop(): Promise<void> {
    await this.shutdown();
  }

  // kafkajs hands these as free functions and documents destructuring them.
  /* eslint-disable @typescript-eslint/unbound-method */
  private async eachBatch({
    batch,
    resolveOffset,
    heartbeat,
    isRunning,
    isStale,
    commitOffsetsIfNecessary,
  }: EachBatch): Promise<void> {
    /* eslint-enable @typescript-eslint/unbound-method */
    // Whatever this batch waits for below, the member keeps heartbeating until it returns.
    const heartbeats = keepHeartbeating(heartbeat, this.settings.heartbeatIntervalMs);
    try {
      await this.callbacks;
      if (this.halted()) return;
      const ref = { topic: batch.topic, partition: batch.partition };
      if (this.held.has(partitionKey(ref))) {
        // Fetched while it is held (kafkajs lost its pause): none of it is taken, nor resolved, so
        // kafkajs fetches the same records again once the partition is resumed.
        this.pause(ref);
        return;
      }
      for (const message of batch.messages) {
        // A heartbeat error is usually a rebalance: push no more, finish and commit, then let kafkajs rejoin.
        if (!isRunning() || isStale() || this.halted() || heartbeats.interrupted) break;
        const accepted = await this.dispatcher.push(messageToRecord(batch.topic, batch.partition, message)).then(
          () => true,
          () => false,
        );
        if (!accepted) break;
        resolveOffset(message.offset);
      }
      // One drain for the whole wait: each drain() is a waiter that every settled record wakes until
      // the partition is idle, so a new one per poll would pile up while a record retries in place.
      const drained = this.dispatcher.drain([ref]);
      const commit = () =>
        this.commit(ref, (offset) =>
          commitOffsetsIfNecessary({
            topics: [{ topic: ref.topic, partitions: [{ partition: ref.partition, offset }] }],
          }),
        );
      // While the member stops, nothing more is fetched: the batch waits for its records and commits.
      const holdAt = Date.now() + this.settings.holdAfterMs;
      for (;;) {
        const left = holdAt - Date.now();
        if (left <= 0 && !this.halted()) {
          this.hold(ref, drained);
          break;
        }
        const waitMs = left > 0 ? Math.min(left, this.settings.commitIntervalMs) : this.settings.commitIntervalMs;
        if (await settlesWithin(drained, waitMs)) {
          await commit();
          break;
        }
        await commit();
      }
    } finally {
      heartbeats.stop();
    }
    // Rethrown as kafkajs threw it, so it can rejoin the group.
    if (heartbeats.interrupted) throw heartbeats.interrupted.error;
  }

  /**
   * Pauses the partition until the records already pushed for it are finished, then commits its
   * progress and resumes it; meanwhile its progress is committed every `commitIntervalMs`. Only
   * this member's own records are waited for here: a revoke waits for them too (`release`).
   */
  private hold(ref: PartitionRef, drained: Promise<void>): void {
    const key = partitionKey(ref);
    this.held.set(key, ref);
    this.pause(ref);
    void (async () => {
      while (!(await settlesWithin(drained, this.settings.commitIntervalMs))) await this.commitHeld(ref);
      await this.commitHeld(ref);
      this.held.delete(key);
      // Resumed even when no longer owned: kafkajs keeps a pause across rejoins, and a partition
      // assigned again later must not stay paused.
      if (!this.halted()) this.resume(ref);
    })();
  }

  /**
   * Commits a held partition's progress outside any batch handler, through the consumer (whatever
   * consumer group kafkajs runs now); only while the member owns the partition and is not stopping.
   */
  private async commitHeld(ref: PartitionRef): Promise<void> {
    if (this.halted() || !this.owned.has(partitionKey(ref))) return;
    await this.commitThroughConsumer(ref);
  }

  private commitThroughConsumer(ref: PartitionRef): Promise<void> {
    return this.commit(ref, (offset) =>
      this.consumer.commitOffsets([{ topic: ref.topic, partition: ref.partition, offset }]),
    );
  }

  private pause(ref: PartitionRef): void {
    try {
      this.consumer.pause([{ topic: ref.topic, partitions: [ref.partition] }]);
    } catch (error) {
      // Only between a crash and kafkajs's restart (no consumer group): the next join pauses it.
      this.options.log?.warn({ groupId: this.options.groupId, ...ref, err: error }, 'could not pause a held partition');
    }
  }

  private resume(ref: PartitionRef): void {
    try {
      this.consumer.resume([{ topic: ref.topic, partitions: [ref.partition] }]);
    } catch {
      // No consumer group (between a crash and kafkajs's restart): the new one has no pause to lift.
    }
  }

  /** Commits the partition's committable offset; a refused commit (fenced by a rebalance) is left for the next owner. */
  private async commit(ref: PartitionRef, send: (offset: string) => Promise<void>): Promise<void> {
    const offset = this.dispatcher.committable(ref);
    const last = this.committed.get(partitionKey(ref));
    if (offset === undefined || (last !== undefined && offset <= last)) return;
    try {
      await send(offset.toString());
      this.committed.set(partitionKey(ref), offset);
    } catch (error) {
      // Not committed: those records are redelivered to the partition's next owner (at least
      // once). Usually a rebalance fenced the commit; anything else is worth a line.
      this.options.log?.warn(
        { groupId: this.options.groupId, ...ref, offset: offset.toString(), err: error },
        'offset commit refused; records after it will be redelivered',
      );
    }
  }

  private joined(memberAssignment: kafkajs.IMemberAssignment): void {
    const next = new Map<string, PartitionRef>();
    for (const [topic, partitions] of Object.entries(memberAssignment)) {
      for (const partition of partitions) next.set(partitionKey({ topic, partition }), { topic, partition });
    }
    const revoked = [...this.owned].filter(([key]) => !next.has(key)).map(([, ref]) => ref);
    const assigned = [...next].filter(([key]) => !this.owned.has(key)).map(([, ref]) => ref);
    this.owned = next;
    // Called as kafkajs joins, before it fetches: a held partition the member keeps stays paused,
    // whether kafkajs kept its pause (a rejoin) or not (a new consumer group after a crash).
    for (const [key, ref] of this.held) if (next.has(key)) this.pause(ref);
    this.callbacks = this.callbacks
      .then(async () => {
        if (revoked.length > 0) await this.release(revoked);
        if (assigned.length > 0) await this.options.onAssigned?.(assigned.map((ref) => ({ ...ref })));
      })
      .catch((error: unknown) => this.fail(error));
  }

  /**
   * Gives partitions up: records of theirs still unfinished (a held partition's) are abandoned, so a
   * record retried in place stops at its next pause and goes uncommitted to the next owner, instead
   * of keeping this member's every batch waiting for the revoke until it is set aside.
   */
  private async release(refs: PartitionRef[]): Promise<void> {
    const held = refs.filter((ref) => this.held.has(partitionKey(ref)));
    if (held.length > 0)
      this.options.log?.info(
        { groupId: this.options.groupId, partitions: held },
        'held partitions revoked: their unfinished records are left to their next owner',
      );
    this.dispatcher.abandon(refs);
    await this.dispatcher.drain(refs);
    this.dispatcher.drop(refs);
    for (const ref of refs) this.committed.delete(partitionKey(ref));
    await this.options.onRevoked?.(refs.map((ref) => ({ ...ref })));
  }

  private halted(): boolean {
    return this.failure !== undefined || this.stopping !== undefined;
  }

  private fail(error: unknown): void {
    if (this.failure === undefined) this.failure = { error };
    // Not awaited: a batch handler may call this, and stopping waits for batch handlers.
    setImmediate(() => void this.shutdown());
  }

  /**
   * Commits what held partitions finished, leaves the group (kafkajs waits for running batches,
   * which finish and commit), then revokes. Records still unfinished (a held partition's) are
   * abandoned first, as at a revoke: one retried in place stops at its next pause instead of
   * keeping the stop waiting for it.
   */
  private shutdown(): Promise<void> {
    this.stopping ??= (async () => {
      let problem: unknown;
      for (const [key, ref] of this.held) if (this.owned.has(key)) await this.commitThroughConsumer(ref);
      await this.consumer.disconnect().catch((error: unknown) => (problem ??= this.toEventLogError(error)));
      this.dispatcher.abandon([...this.owned.values()]);
      await this.dispatcher.drain();
      await this.callbacks;
      const refs = [...this.owned.values()];
      this.owned = new Map();
      if (refs.length > 0) await this.release(refs).catch((error: unknown) => (problem ??= error));
      if (this.failure) {
        this.tracker.failed(this.failure.error);
        this.settle.reject(this.failure.error);
      } else if (problem !== undefined && (problem as { retriable?: unknown }).retriable !== true) {
        this.tracker.failed(problem);
        this.settle.reject(problem);
      } else {
        this.tracker.stopped();
        this.settle.resolve();
      }
    })();
    return this.stopping.then(() => undefined);
  }
}
