/**
 * One member of a consumer group on the SQL event log. A single loop checks membership (taking and
 * giving up partition leases), polls the owned partitions for new records and hands them to the
 * keyed dispatcher, and commits what the dispatcher reports committable. Heartbeats run on their
 * own timer so a long drain does not cost the member its leases.
 *
 * A poll fetches up to `fetchLimit` records of a partition in one query (and at most
 * FETCH_MAX_BYTES of them, at least one), whatever the dispatcher
 * can take at that moment, and keeps what it cannot hand over yet in the partition's buffer: the
 * next polls hand it over as records settle, without a query. Only records handed to the
 * dispatcher count, so concurrency still bounds the work in flight, the loop never waits on a full
 * dispatcher (rebalances and commits go on), and a buffered record is never committed: a revoked
 * or lost partition's buffer goes with it.
 */
import { randomUUID } from 'node:crypto';
import type { ConsumeOptions, Consumer, ConsumerStatus, LogRecord, PartitionRef } from '../../ports/event-log.ts';
import { isRetriableError } from '../../ports/unavailable.ts';
import { ConsumerStatusTracker, jitteredBackoff } from './consumer-status.ts';
import { KeyedDispatcher, partitionKey } from './keyed-dispatcher.ts';
import { RECORD_COLUMNS, rowToRecord, toBigInt, type RecordRow, type SqlDriver } from './sql-driver.ts';
import { fairShare, SqlGroupMembership } from './sql-group-membership.ts';
import { Wakeup } from './wakeup.ts';

/**
 * Most record text one fetch of a partition buffers (at least one record): a record may hold a
 * whole sealed 500 KB transcript, about 0.7 MB, and `fetchLimit` of those per partition would not
 * fit the service's heap.
 */
export const FETCH_MAX_BYTES = 4 * 1024 * 1024;

/** Timing of SQL consumers; see `SqlEventLogOptions`. */
export interface SqlConsumerTiming {
  pollIntervalMs: number;
  sessionTimeoutMs: number;
  rebalanceIntervalMs: number;
  commitIntervalMs: number;
  fetchLimit: number;
}

/** What a consumer needs from the log that created it. */
export interface SqlConsumerHost {
  driver: SqlDriver;
  timing: SqlConsumerTiming;
  /** Partition count of a topic; throws `UnknownTopicError`. */
  partitionCount(topic: string): Promise<number>;
  /** Tells the group's other local members that membership changed. */
  groupChanged(groupId: string, from: SqlConsumer): void;
  stopped(consumer: SqlConsumer): void;
}

interface Owned {
  ref: PartitionRef;
  /** Next offset to fetch. */
  position: bigint;
  /** Last offset stored as committed. */
  committed: bigint | undefined;
  /** Fetched records, in offset order, ending before `position`; those from `handed` on are not yet handed to the dispatcher. */
  fetched: LogRecord[];
  handed: number;
}

export class SqlConsumer implements Consumer {
  readonly groupId: string;
  readonly topics: string[];
  private finished: Promise<void> = Promise.resolve();
  private readonly memberId = randomUUID();
  private readonly membership: SqlGroupMembership;
  private readonly dispatcher: KeyedDispatcher;
  private readonly owned = new Map<string, Owned>();
  private readonly wakeup = new Wakeup();
  private stopping = false;
  private rebalanceDue = true;
  private starved = false;
  private rotation = 0;
  private heartbeatTimer: NodeJS.Timeout | undefined;
  private heartbeating: Promise<void> = Promise.resolve();
  private readonly tracker: ConsumerStatusTracker;

  private constructor(
    private readonly host: SqlConsumerHost,
    private readonly options: ConsumeOptions,
  ) {
    this.groupId = options.groupId;
    this.topics = [...new Set(options.topics)];
    this.tracker = new ConsumerStatusTracker(options.log, {
      groupId: this.groupId,
      memberId: this.memberId,
      topics: this.topics,
    });
    this.membership = new SqlGroupMembership(host.driver, {
      groupId: this.groupId,
      memberId: this.memberId,
      topics: this.topics,
      sessionTimeoutMs: host.timing.sessionTimeoutMs,
    });
    this.dispatcher = new KeyedDispatcher(options.handler, {
      concurrency: options.concurrency ?? 64,
      onSettled: () => {
        if (!this.starved) return;
        this.starved = false;
        this.wakeup.wake();
      },
    });
    void this.dispatcher.failure.then(() => this.wakeup.wake());
  }

  /** Registers a member of the group and starts its loop. */
  static async start(host: SqlConsumerHost, options: ConsumeOptions): Promise<SqlConsumer> {
    for (const topic of options.topics) await host.partitionCount(topic);
    const consumer = new SqlConsumer(host, options);
    await consumer.membership.heartbeat();
    let loopError: unknown;
    consumer.finished = consumer
      .run()
      .catch((error: unknown) => (loopError = error))
      .then(() => consumer.shutdown(loopError));
    consumer.finished.catch(() => undefined);
    return consumer;
  }

  get done(): Promise<void> {
    return this.finished;
  }

  assignment(): PartitionRef[] {
    return [...this.owned.values()].map((o) => ({ ...o.ref }));
  }

  status(): ConsumerStatus {
    return this.tracker.snapshot(this.owned.size);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.wakeup.wake();
    await this.done.catch(() => undefined);
  }

  /** New records were published to `topic` in this process. */
  recordsArrived(topic: string): void {
    if (this.topics.includes(topic)) this.wakeup.wake();
  }

  /** Another local member joined or left the group. */
  membershipChanged(): void {
    this.rebalanceDue = true;
    this.wakeup.wake();
  }

  private async run(): Promise<void> {
    this.host.groupChanged(this.groupId, this);
    this.scheduleHeartbeat();
    const { timing } = this.host;
    let nextRebalance = 0;
    let nextCommit = Date.now() + timing.commitIntervalMs;
    let failures = 0;
    while (!this.stopping && !this.dispatcher.failed) {
      let delayMs = timing.pollIntervalMs;
      try {
        const now = Date.now();
        if (this.rebalanceDue || now >= nextRebalance) {
          this.rebalanceDue = false;
          nextRebalance = now + timing.rebalanceIntervalMs;
          await this.rebalance();
        }
        await this.poll();
        if (now >= nextCommit) {
          nextCommit = now + timing.commitIntervalMs;
          await this.commit([...this.owned.values()]);
        }
        failures = 0;
        this.tracker.running();
      } catch (error) {
        if (this.dispatcher.failed) break;
        if (!isRetriableError(error)) throw error;
        // The database is unreachable: keep the partitions (their leases outlive a short outage),
        // say so once, and back off instead of hammering it.
        this.tracker.retrying(error);
        delayMs = Math.max(timing.pollIntervalMs, jitteredBackoff(++failures, 100, 5000));
        this.rebalanceDue = true;
      }
      await this.wakeup.sleep(delayMs);
    }
  }

  private scheduleHeartbeat(): void {
    const interval = Math.max(50, Math.floor(this.host.timing.sessionTimeoutMs / 3));
    this.heartbeatTimer = setTimeout(() => {
      this.heartbeating = this.membership
        .heartbeat()
        .catch((error: unknown) => {
          // A missed heartbeat only shortens the leases' margin; the loop renews them on rebalance.
          if (isRetriableError(error)) this.tracker.retrying(error);
          else this.options.log?.error({ groupId: this.groupId, err: error }, 'consumer heartbeat failed');
        })
        .finally(() => {
          if (this.heartbeatTimer) this.scheduleHeartbeat();
        });
    }, interval);
  }

  private async rebalance(): Promise<void> {
    const members = await this.membership.liveMembers();
    if (!members.some((m) => m.memberId === this.memberId)) {
      // Our session lapsed (a stalled event loop): renew it before counting ourselves in.
      await this.membership.heartbeat();
      members.push({ memberId: this.memberId, topics: this.topics });
    }
    const counts = new Map<string, number>();
    for (const topic of this.topics) counts.set(topic, await this.host.partitionCount(topic));
    const desired = new Map(fairShare(members, this.memberId, counts).map((ref) => [partitionKey(ref), ref]));

    const held = new Set((await this.membership.heldLeases()).map(partitionKey));
    const lost = [...this.owned.values()].filter((o) => !held.has(partitionKey(o.ref)));
    if (lost.length > 0) await this.revoke(lost, false);

    const excess = [...this.owned.values()].filter((o) => !desired.has(partitionKey(o.ref)));
    if (excess.length > 0) {
      await this.revoke(excess, true);
      await this.membership.release(excess.map((o) => o.ref));
      this.host.groupChanged(this.groupId, this);
    }

    const wanted = [...desired.values()].filter((ref) => !this.owned.has(partitionKey(ref)));
    if (wanted.length > 0) await this.assign(await this.membership.acquire(wanted));
  }

  private async assign(refs: PartitionRef[]): Promise<void> {
    if (refs.length === 0) return;
    for (const ref of refs) {
      const committed = await this.membership.committedOffset(ref);
      const position = committed ?? (this.options.fromBeginning === false ? await this.endOffset(ref) : 0n);
      this.owned.set(partitionKey(ref), { ref, position, committed, fetched: [], handed: 0 });
    }
    await this.options.onAssigned?.(refs.map((ref) => ({ ...ref })));
  }

  /**
   * Stops fetching the partitions, commits what of them finished, calls onRevoked. Records of
   * theirs still unfinished are abandoned (as the Kafka consumer does): a record retried in place
   * stops at its next pause and goes uncommitted to the next owner, instead of keeping this
   * member's loop, and so all its partitions, waiting until it is set aside.
   */
  private async revoke(entries: Owned[], commit: boolean): Promise<void> {
    for (const entry of entries) this.owned.delete(partitionKey(entry.ref));
    const refs = entries.map((o) => o.ref);
    this.dispatcher.abandon(refs);
    await this.dispatcher.drain(refs);
    if (commit) await this.commit(entries);
    this.dispatcher.drop(refs);
    await this.options.onRevoked?.(refs.map((ref) => ({ ...ref })));
  }

  private async endOffset(ref: PartitionRef): Promise<bigint> {
    const [row] = await this.host.driver.query<{ next_offset: unknown }>(
      'SELECT next_offset FROM log_partitions WHERE topic = ? AND partition = ?',
      [ref.topic, ref.partition],
    );
    return row ? toBigInt(row.next_offset) : 0n;
  }

  /** Hands over what is buffered, then fetches the partitions once nothing is; stops when the dispatcher is full. */
  private async poll(): Promise<void> {
    const entries = [...this.owned.values()];
    if (entries.length === 0) return;
    const start = this.rotation++ % entries.length;
    const rotated = [...entries.slice(start), ...entries.slice(0, start)];
    for (const entry of rotated) if (!(await this.handOver(entry))) return;
    const ends = new Map<string, bigint>();
    for (const topic of new Set(rotated.map((o) => o.ref.topic))) {
      const rows = await this.host.driver.query<{ partition: number; next_offset: unknown }>(
        'SELECT partition, next_offset FROM log_partitions WHERE topic = ?',
        [topic],
      );
      for (const row of rows)
        ends.set(partitionKey({ topic, partition: Number(row.partition) }), toBigInt(row.next_offset));
    }
    for (const entry of rotated) {
      const end = ends.get(partitionKey(entry.ref)) ?? 0n;
      if (entry.position >= end) continue;
      if (this.dispatcher.capacity === 0) {
        this.starved = true;
        return;
      }
      // The page's sizes are summed over the page alone (its LIMIT inside), not the whole backlog.
      const rows = await this.host.driver.query<RecordRow>(
        `SELECT ${RECORD_COLUMNS} FROM (
           SELECT ${RECORD_COLUMNS},
                  row_number() OVER (ORDER BY record_offset) AS fetch_index,
                  sum(octet_length(value) + octet_length(headers)) OVER (ORDER BY record_offset) AS fetch_bytes
             FROM (SELECT ${RECORD_COLUMNS} FROM log_records
                    WHERE topic = ? AND partition = ? AND record_offset >= ? AND record_offset < ?
                    ORDER BY record_offset LIMIT ?) AS page
         ) AS sized
         WHERE fetch_index = 1 OR fetch_bytes <= ?
         ORDER BY record_offset`,
        [entry.ref.topic, entry.ref.partition, entry.position, end, this.host.timing.fetchLimit, FETCH_MAX_BYTES],
      );
      // Nothing else runs this loop meanwhile (a rebalance included), so the partition is still ours.
      entry.fetched = rows.map((row) => rowToRecord(entry.ref.topic, row));
      entry.handed = 0;
      if (entry.fetched.length > 0) entry.position = entry.fetched[entry.fetched.length - 1]!.offset + 1n;
      if (!(await this.handOver(entry))) return;
      // More behind the page (a full page, or one its byte budget ended): poll again at once
      // instead of after the interval.
      if (rows.length > 0 && entry.position < end) this.wakeup.wake();
    }
  }

  /** Hands the partition's buffered records to the dispatcher while it has room; false (starved) when some are left. */
  private async handOver(entry: Owned): Promise<boolean> {
    while (entry.handed < entry.fetched.length) {
      if (this.dispatcher.capacity === 0) {
        this.starved = true;
        return false;
      }
      await this.dispatcher.push(entry.fetched[entry.handed++]!);
    }
    entry.fetched = [];
    entry.handed = 0;
    return true;
  }

  private async commit(entries: Owned[]): Promise<void> {
    const due = entries
      .map((entry) => ({ entry, offset: this.dispatcher.committable(entry.ref) }))
      .filter(
        (c): c is { entry: Owned; offset: bigint } =>
          c.offset !== undefined && (c.entry.committed === undefined || c.offset > c.entry.committed),
      );
    if (due.length === 0) return;
    const refused = new Set(
      (await this.membership.commit(due.map((c) => ({ ref: c.entry.ref, offset: c.offset })))).map(partitionKey),
    );
    for (const { entry, offset } of due) if (!refused.has(partitionKey(entry.ref))) entry.committed = offset;
    if (refused.size > 0) this.rebalanceDue = true;
  }

  /**
   * Finishes the records running (one retried in place stops at its next pause, as at a revoke;
   * those waiting behind them are left to the next owner), commits, gives every partition up and
   * leaves the group.
   */
  private async shutdown(loopError: unknown): Promise<void> {
    const problems: unknown[] = [];
    const attempt = async (step: () => Promise<unknown>) => {
      try {
        await step();
      } catch (error) {
        problems.push(error);
      }
    };
    const entries = [...this.owned.values()];
    this.owned.clear();
    this.dispatcher.abandon(entries.map((entry) => entry.ref));
    await this.dispatcher.drain();
    await attempt(() => this.commit(entries));
    if (entries.length > 0) await attempt(async () => this.options.onRevoked?.(entries.map((o) => ({ ...o.ref }))));
    // Heartbeats went on while draining; one landing after leave() would register us again.
    clearTimeout(this.heartbeatTimer);
    this.heartbeatTimer = undefined;
    await this.heartbeating;
    await attempt(() => this.membership.leave());
    this.host.groupChanged(this.groupId, this);
    this.host.stopped(this);
    const fatal = this.dispatcher.failed
      ? this.dispatcher.error
      : loopError !== undefined
        ? loopError
        : problems.find((p) => !isRetriableError(p));
    if (fatal === undefined || (this.stopping && this.dispatcher.failed)) {
      this.tracker.stopped();
    } else {
      this.tracker.failed(fatal);
    }
    if (this.dispatcher.failed) throw this.dispatcher.error;
    // Rethrown as they were caught: whatever the handler or the loop threw is what `done` reports.
    /* eslint-disable @typescript-eslint/only-throw-error */
    if (loopError !== undefined) throw loopError;
    if (fatal !== undefined) throw fatal;
    /* eslint-enable @typescript-eslint/only-throw-error */
  }
}
