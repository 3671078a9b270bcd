/**
 * The call processor: consumes `calls.submitted.v1`, stores each call in its own stream, and runs
 * one actor per call through the pipeline. The offset of a record is committed once its call is
 * in the event store; the rest is driven from the aggregate, so a long transcription never holds a
 * partition back. A call belongs to the processor that owns its partition of the topic, computed
 * with the topic's own partition count as the log reports it (the count the records were
 * partitioned by), never a configured one: a topic created with another count would otherwise
 * leave calls that no member owns, without a deadline and never resumed.
 *
 * Nothing stops the intake for long: a record that can never be stored goes to the dead-letter
 * topic, an outage is retried in place (see `resilientHandler`), a record that keeps failing on its
 * own with an error that proves nothing (a bug) is set aside there for a redrive, and a consumer
 * that ends anyway is started again. A step that fails, for whatever reason, is the call's: its
 * actor retries it and fails the call, never holding the partition. A sweep works every open call of the partitions the consumer owns, whatever the
 * order or presence of rebalance callbacks, so no acknowledged call is left without an owner.
 */
import type { Logger } from 'pino';
import { partitionForKey } from '../../shared/adapters/event-log/partitioner.ts';
import { jitteredBackoff } from '../../shared/adapters/event-log/consumer-status.ts';
import {
  PoisonRecordError,
  resilientHandler,
  type StuckRecordBounds,
} from '../../shared/adapters/event-log/resilient-handler.ts';
import { callDecider, deadlineAt } from '../../shared/domain/call/call-decider.ts';
import { callEvents } from '../../shared/domain/call/call-catalogue.ts';
import type { Analyser } from '../../shared/ports/analyser.ts';
import type { AudioSource } from '../../shared/ports/audio-source.ts';
import type { Consumer, EventLog, LogRecord, PartitionRef } from '../../shared/ports/event-log.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import type { Transcriber } from '../../shared/ports/transcriber.ts';
import { TOPICS, topicPrefix, type Topics } from '../../shared/topics.ts';
import { AggregateRepository, BoundedStateCache } from '../runtime/aggregate-repository.ts';
import type { CallState } from '../../shared/domain/call/call-state.ts';
import type { Health } from '../runtime/health.ts';
import { ActorSystem } from './actors.ts';
import { FairQueue } from './fair-queue.ts';
import type { TeamRepository } from '../runtime/team-writer.ts';
import { createCallPipeline } from './call-pipeline.ts';
import { readCallSubmitted } from './call-submitted-record.ts';
import type { PersonalData } from '../../shared/adapters/crypto/personal-data.ts';
import { Deadlines } from './deadlines.ts';
import { OpenCalls, UnworkedCalls } from './open-calls.ts';
import { DEFAULT_RETRY, type RetryPolicy } from './retry.ts';
import { inSpan, SpanKind, traceContextFrom, traceHeaders } from '../../shared/observability/tracing.ts';
import { consumerLagGauge, openCallsGauge } from '../../shared/observability/metrics.ts';

export interface ProcessorOptions {
  eventStore: EventStore;
  eventLog: EventLog;
  audio: AudioSource;
  transcriber: Transcriber;
  analyser: Analyser;
  logger: Logger;
  processingTimeoutMs: number;
  /**
   * Processing slots: calls worked on at once; default 16. A call waiting on the network or on a
   * backoff holds none (see actors.ts). Also the number of audio downloads at once.
   */
  concurrency?: number;
  /** Transcriptions at once; default 1 (the local engine is CPU-bound). */
  transcriptionConcurrency?: number;
  /**
   * Most processing slots, downloads and transcriptions one team holds at once; default half of
   * each (at least 1). Waiting teams are served round-robin (see fair-queue.ts).
   */
  teamShare?: number;
  /** Time one call may spend downloading its audio over all attempts; default `DEFAULT_AUDIO_FETCH_BUDGET_MS`. */
  audioFetchBudgetMs?: number;
  retry?: RetryPolicy;
  groupId?: string;
  /** Topic names; default without prefix. */
  topics?: Topics;
  now?: () => Date;
  /** The process's one writer of team streams (see team-writer.ts); default a new one. */
  teams?: TeamRepository;
  /** Where the processor reports its readiness. */
  health?: Health;
  /**
   * The event store's commits reach the disk in order with the event log's (one embedded
   * database): the processor's appends need not wait for the disk (see call-pipeline.ts).
   */
  deferDurability?: boolean;
  /** How often the sweep looks for owned open calls nobody works; default 5000 ms. */
  sweepIntervalMs?: number;
  /** Opens the sealed personal fields of calls.submitted.v1 records (docs/decisions/0014-erasure-crypto-shredding.md). */
  personalData?: PersonalData;
  /** The events as stored (personal fields sealed): the open-call tracker follows them, reading no personal field. */
  storedEvents?: EventStore;
  /**
   * When a record that keeps failing with an error that proves nothing against it is set aside in
   * the dead-letter topic; default `STUCK_RECORD_AFTER` (10 attempts, a minute while others are
   * handled, ten minutes if none is). See resilient-handler.ts.
   */
  stuckRecordAfter?: Partial<StuckRecordBounds>;
}

export interface Processor {
  /** Calls this member has actors for right now. */
  readonly activeCalls: number;
  stop(): Promise<void>;
}

/** The processor's consumer group (behind TOPIC_PREFIX, as the topics). */
export const PROCESSOR_GROUP = 'call-processor';

/** Fetching one call's audio, over all attempts, gives up after 15 minutes: well inside PROCESSING_TIMEOUT_MS. */
export const DEFAULT_AUDIO_FETCH_BUDGET_MS = 15 * 60_000;

/** A timeout that could not be recorded is tried again after this long. */
const TIMEOUT_RETRY_MS = 5000;

/** A fair queue of `capacity` permits, of which one team holds at most `share` (default half). */
const fairQueue = (capacity: number, share: number | undefined) =>
  new FairQueue(capacity, Math.min(capacity, share ?? Math.ceil(capacity / 2)));

export const startProcessor = async (options: ProcessorOptions): Promise<Processor> => {
  const log = options.logger.child({ component: 'processor' });
  const topics = options.topics ?? TOPICS;
  const concurrency = options.concurrency ?? 16;
  const slots = fairQueue(concurrency, options.teamShare);
  const downloads = fairQueue(concurrency, options.teamShare);
  const transcriptions = fairQueue(options.transcriptionConcurrency ?? 1, options.teamShare);
  const swept = await Promise.all([options.audio.sweepStale?.(), options.transcriber.sweepStale?.()]).catch(
    (error: unknown) => {
      log.warn({ err: error }, 'temp files of dead processes could not be swept');
      return [];
    },
  );
  const sweptFiles = swept.reduce<number>((sum, count) => sum + (count ?? 0), 0);
  if (sweptFiles > 0) log.warn({ removed: sweptFiles }, 'removed temp audio files left by processes that died');
  const callStates = new BoundedStateCache<CallState>(1000);
  const pipeline = createCallPipeline({
    callStates,
    store: options.eventStore,
    audio: options.audio,
    transcriber: options.transcriber,
    analyser: options.analyser,
    logger: log,
    processingTimeoutMs: options.processingTimeoutMs,
    retry: options.retry ?? DEFAULT_RETRY,
    transcriptionSlot: (teamId, work, signal) => transcriptions.run(teamId, work, signal),
    downloadSlot: (teamId, work, signal) => downloads.run(teamId, work, signal),
    audioFetchBudgetMs: options.audioFetchBudgetMs ?? DEFAULT_AUDIO_FETCH_BUDGET_MS,
    teams: options.teams,
    now: options.now,
    deferDurability: options.deferDurability,
  });
  const calls = new AggregateRepository(options.eventStore, callDecider, callEvents, {
    cache: callStates,
    deferDurability: options.deferDurability,
  });
  const actors = new ActorSystem(
    (context) => pipeline.run(context),
    slots,
    (callId, error) => log.error({ callId, err: error }, 'call actor failed'),
  );

  // Read before the open calls are followed: their deadlines are armed by who owns them.
  const partitionCount = await options.eventLog.partitionCount(topics.callsSubmitted);
  const partitionOf = (callId: string) => partitionForKey(callId, partitionCount);
  const owned = new Set<number>();
  const owns = (callId: string) => owned.has(partitionOf(callId));

  const stopping = new AbortController();
  const deadlines = new Deadlines((callId) => {
    pipeline
      .timeOut(callId)
      .then(async (state) => {
        if (state.status === 'failed') {
          log.warn({ callId }, 'call timed out');
          await actors.stop(callId, 'processing timeout');
        }
      })
      .catch((error: unknown) => retryTimeOut(callId, error));
  });
  /**
   * Tries a timeout that could not be recorded again, as the call's own timer: what disarms the
   * call's deadline (a stop, a revoked partition, the call closed or erased) disarms the retry too.
   * Not for a call this processor no longer owns or that was armed again meanwhile (a retry of the
   * call: its new deadline stands), nor once it stops.
   */
  const retryTimeOut = (callId: string, error: unknown) => {
    const again =
      !stopping.signal.aborted && owns(callId) && openCalls.get(callId) !== undefined && !deadlines.has(callId);
    if (!again) return log.error({ callId, err: error }, 'timeout could not be recorded; not tried again here');
    log.error({ callId, err: error }, 'timeout could not be recorded; retrying in 5 s');
    deadlines.arm(callId, new Date(Date.now() + TIMEOUT_RETRY_MS).toISOString());
  };
  // An open call's `submittedAt` is when its clock started: the submission, or its last retry.
  const openCallDeadline = (call: { submittedAt: string; deadline?: string }) =>
    deadlineAt(call.deadline, call.submittedAt, options.processingTimeoutMs);

  const openCalls = new OpenCalls(
    (call, change) => {
      if (change === 'closed') return deadlines.disarm(call.callId);
      if (change === 'erased') {
        // An erased call stops where it is: its late results would be refused anyway.
        deadlines.disarm(call.callId);
        void actors.stop(call.callId, 'erased');
        return;
      }
      if (owns(call.callId)) deadlines.arm(call.callId, openCallDeadline(call));
      // An operator retried a failed call of ours: work it now rather than at the next sweep.
      if (change === 'reopened' && owns(call.callId)) actors.wake(call.callId, call.teamId);
    },
    {
      onUndecodable: (error) =>
        log.error(
          { err: error, streamId: error.streamId, revision: error.revision, field: error.field },
          'a call event does not decode: not folded into the open calls (the call history projection stops on it)',
        ),
      onFailed: (error, retryInMs) =>
        log.error({ err: error, retryInMs }, 'the open-calls feed failed; following it again'),
    },
  );
  await openCalls.start(options.storedEvents ?? options.eventStore);

  /**
   * The first record found on another partition than its call id gives: ownership is off (partitions
   * added since the start, or a producer partitioning otherwise), so calls may have no owner.
   */
  let misplaced: { callId: string; partition: number; expected: number; at: Date } | undefined;
  const intake = (record: LogRecord, signal: AbortSignal) =>
    inSpan(
      `process ${topics.callsSubmitted}`,
      {
        kind: SpanKind.CONSUMER,
        parent: traceContextFrom(record.headers),
        attributes: {
          'messaging.destination.name': record.topic,
          'messaging.kafka.offset': Number(record.offset),
          'call.id': record.key,
        },
      },
      () => intakeRecord(record, signal),
    );
  /** `signal`: the processor stops, or the record's partition was given up (the next owner takes it up). */
  const intakeRecord = async (record: LogRecord, signal: AbortSignal) => {
    const parsed = await readCallSubmitted(record, options.personalData);
    // The record of a call erased since: nothing to store or process. (Its data key is gone: a key
    // row lost otherwise, as from a key table restored from an older backup, looks the same; the
    // line says which call, for whoever has to tell the two apart.)
    if (!parsed.ok && 'erased' in parsed) {
      log.info(
        { callId: record.key, offset: String(record.offset) },
        'record of an erased call (no data key): skipped',
      );
      return;
    }
    if (!parsed.ok) throw new PoisonRecordError(parsed.reason);
    const expected = partitionOf(parsed.data.callId);
    if (expected !== record.partition && !misplaced) {
      misplaced = { callId: parsed.data.callId, partition: record.partition, expected, at: new Date() };
      log.error(
        { callId: parsed.data.callId, partitionCount, partition: record.partition, expected },
        `a ${topics.callsSubmitted} record is not on the partition its call id gives among the topic's ${partitionCount} partitions at start: calls may have no owner until the processors restart`,
      );
    }
    // Appending with "no stream" makes a redelivered record harmless. The record's trace context
    // goes into the call's first event, where each later step finds it.
    const metadata = { teamId: parsed.data.teamId, ...traceHeaders() };
    // A call whose every step runs here is taken to its end at intake (CallSubmitted stored with its
    // steps), in its team's turn for a processing slot; the record counts as handled once it is done.
    if (
      pipeline.runsWhollyHere(parsed.data) &&
      (await slots.run(parsed.data.teamId, () => pipeline.runAtIntake(parsed.data, metadata, signal), signal))
    )
      return;
    await calls.handle(parsed.data.callId, { type: 'SubmitCall', data: parsed.data }, metadata, { expectNew: true });
    actors.wake(parsed.data.callId, parsed.data.teamId);
  };
  const records = resilientHandler(intake, {
    deadLetter: { eventLog: options.eventLog, topic: topics.deadLetter },
    log,
    signal: stopping.signal,
    stuckAfter: options.stuckRecordAfter,
  });

  const inPartitions = (partitions: PartitionRef[]) => {
    const set = new Set(partitions.filter((p) => p.topic === topics.callsSubmitted).map((p) => p.partition));
    return (callId: string) => set.has(partitionOf(callId));
  };

  /** Arms the deadline and wakes the actor of every open call of these partitions that lacks one. */
  /** Arms the deadline of each open call `select` takes and wakes those no actor works (and `wake` takes). */
  const resume = (select: (callId: string) => boolean, wake: (callId: string) => boolean = () => true): number => {
    let woken = 0;
    for (const call of openCalls.all()) {
      if (!select(call.callId)) continue;
      if (!deadlines.has(call.callId)) deadlines.arm(call.callId, openCallDeadline(call));
      if (!actors.has(call.callId) && wake(call.callId)) {
        actors.wake(call.callId, call.teamId);
        woken++;
      }
    }
    return woken;
  };

  const groupId = options.groupId ?? `${topicPrefix(topics)}${PROCESSOR_GROUP}`;
  const consume = () =>
    options.eventLog.consume({
      groupId,
      topics: [topics.callsSubmitted],
      handler: records.handler,
      log,
      onAssigned: async (partitions) => {
        for (const p of partitions) if (p.topic === topics.callsSubmitted) owned.add(p.partition);
        await openCalls.caughtUp();
        const resuming = resume(inPartitions(partitions));
        log.info({ partitions: partitions.map((p) => p.partition), resuming }, 'partitions assigned');
      },
      onRevoked: async (partitions) => {
        const theirs = inPartitions(partitions);
        for (const p of partitions) if (p.topic === topics.callsSubmitted) owned.delete(p.partition);
        deadlines.disarmAll(theirs);
        await actors.stopAll(theirs, 'partition revoked');
        log.info({ partitions: partitions.map((p) => p.partition) }, 'partitions revoked');
      },
    });

  // A consumer that ends on an error it could not retry is started again, after a growing pause.
  let consumer: Consumer = await consume();
  let restarts = 0;
  let restartTimer: NodeJS.Timeout | undefined;
  const watch = (member: Consumer) => {
    member.done.then(
      () => undefined,
      (error: unknown) => {
        if (stopping.signal.aborted) return;
        restarts++;
        const delayMs = jitteredBackoff(restarts, 1000, 30_000);
        log.error({ err: error, restarts, retryInMs: delayMs }, 'processor consumer ended; starting it again');
        const restart = () => {
          restartTimer = undefined;
          if (stopping.signal.aborted) return;
          consume().then(
            (next) => {
              // Stopped while it started: it must not consume for a processor that has stopped.
              if (stopping.signal.aborted) return void next.stop().catch(() => undefined);
              consumer = next;
              watch(next);
            },
            (startError: unknown) => {
              log.error({ err: startError }, 'processor consumer could not start; trying again');
              restartTimer = setTimeout(restart, jitteredBackoff(++restarts, 1000, 30_000));
            },
          );
        };
        restartTimer = setTimeout(restart, delayMs);
      },
    );
  };
  watch(consumer);

  // The sweep trusts the consumer's assignment, not the callbacks that announced it.
  let withoutPartitionsSince: Date | undefined;
  const unworked = new UnworkedCalls();
  const sweep = setInterval(() => {
    const assigned = consumer.assignment().filter((p) => p.topic === topics.callsSubmitted);
    withoutPartitionsSince = assigned.length > 0 ? undefined : (withoutPartitionsSince ?? new Date());
    owned.clear();
    for (const p of assigned) owned.add(p.partition);
    const confirmed = unworked.confirm(
      openCalls
        .all()
        .map((call) => call.callId)
        .filter((callId) => owns(callId) && !actors.has(callId)),
    );
    const woken = resume(owns, (callId) => confirmed.has(callId));
    if (woken > 0) log.warn({ woken }, 'sweep found open calls no actor was working; resumed them');
  }, options.sweepIntervalMs ?? 5000);
  sweep.unref();

  /** The group's lag on calls.submitted.v1, per partition: what is on the log and not yet in a call stream. */
  const lag = async () => {
    const ends = await options.eventLog.endOffsets(topics.callsSubmitted);
    return Promise.all(
      ends.map(async ({ partition, offset }) => ({
        labels: { group: groupId, topic: topics.callsSubmitted, partition },
        value: Number(
          offset - ((await options.eventLog.committedOffset(groupId, topics.callsSubmitted, partition)) ?? 0n),
        ),
      })),
    );
  };
  const unregisterGauges = [
    openCallsGauge.register(() => [{ labels: { group: groupId }, value: openCalls.all().length }]),
    consumerLagGauge.register(lag),
  ];

  const unregister = options.health?.register('processor', () => {
    const status = consumer.status();
    const retrying = records.retrying();
    const detail = {
      consumer: status.state,
      since: status.since.toISOString(),
      partitions: status.partitions,
      activeCalls: actors.size,
      openCalls: openCalls.all().length,
      deadLettered: records.deadLettered,
    };
    if (status.state === 'failed' || status.state === 'stopped')
      return { ready: false, reason: `consumer ${status.state}${status.error ? `: ${status.error}` : ''}`, ...detail };
    if (status.state === 'retrying' && options.health!.retryingTooLong(status.since)) {
      return {
        ready: false,
        reason: `consumer retrying since ${status.since.toISOString()}: ${status.error}`,
        ...detail,
      };
    }
    const feed = openCalls.status();
    if (feed.state === 'failed' || feed.state === 'stopped')
      return { ready: false, reason: `open-calls feed ${feed.state}: ${feed.error ?? ''}`, ...detail };
    if (feed.state === 'retrying' && options.health!.retryingTooLong(feed.since)) {
      return {
        ready: false,
        reason: `open-calls feed retrying since ${feed.since.toISOString()}: ${feed.error}`,
        ...detail,
      };
    }
    if (options.health!.retryingTooLong(withoutPartitionsSince)) {
      return {
        ready: false,
        reason: `owns no partition of ${topics.callsSubmitted} since ${withoutPartitionsSince!.toISOString()} (more processors than partitions, or not in the group)`,
        ...detail,
      };
    }
    if (misplaced) {
      return {
        ready: false,
        reason: `call ${misplaced.callId} came on partition ${misplaced.partition} of ${topics.callsSubmitted}, its id gives ${misplaced.expected} of the ${partitionCount} partitions the topic had at start (since ${misplaced.at.toISOString()}): calls may have no owner until the processors restart`,
        ...detail,
      };
    }
    if (options.health!.retryingTooLong(retrying.since)) {
      return {
        ready: false,
        reason: `${retrying.count} record(s) retrying since ${retrying.since!.toISOString()}: ${retrying.lastError}`,
        ...detail,
      };
    }
    return { ready: true, ...detail };
  });

  return {
    get activeCalls() {
      return actors.size;
    },
    async stop() {
      unregister?.();
      for (const remove of unregisterGauges) remove();
      clearInterval(sweep);
      clearTimeout(restartTimer);
      stopping.abort(new Error('processor stopping'));
      await consumer.stop();
      deadlines.disarmAll();
      await actors.stopAll(() => true, 'shutting down');
      await openCalls.stop();
    },
  };
};
