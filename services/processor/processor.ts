/**
 * The call processor: consumes `calls.submitted.v1`, stores each call in its own stream, and runs
 * one actor per call through the pipeline. The offset of a record is committed once its call is
 * in the event store; the rest is driven from the aggregate, so a long transcription never holds a
 * partition back. A call belongs to the processor that owns its partition of the topic.
 */
import type { Logger } from 'pino';
import { partitionForKey } from '../../shared/adapters/event-log/partitioner.ts';
import { callDecider } from '../../shared/domain/call/call-decider.ts';
import { callStreamId } from '../../shared/domain/call/call-submitted.ts';
import type { Analyser } from '../../shared/ports/analyser.ts';
import type { AudioSource } from '../../shared/ports/audio-source.ts';
import type { Consumer, EventLog, LogRecord, PartitionRef } from '../../shared/ports/event-log.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import type { Transcriber } from '../../shared/ports/transcriber.ts';
import { TOPICS, type Topics } from '../../shared/topics.ts';
import { AggregateRepository } from '../runtime/aggregate-repository.ts';
import { ActorSystem } from './actors.ts';
import { createCallPipeline } from './call-pipeline.ts';
import { parseCallSubmitted } from './call-submitted-record.ts';
import { Deadlines } from './deadlines.ts';
import { OpenCalls } from './open-calls.ts';
import { DEFAULT_RETRY, type RetryPolicy } from './retry.ts';
import { Semaphore } from './semaphore.ts';

export interface ProcessorOptions {
  eventStore: EventStore;
  eventLog: EventLog;
  audio: AudioSource;
  transcriber: Transcriber;
  analyser: Analyser;
  logger: Logger;
  processingTimeoutMs: number;
  /** Partitions of calls.submitted.v1, to know which calls a member owns. */
  topicPartitions: number;
  /** Calls worked on at once; default 16. */
  concurrency?: number;
  /** Transcriptions at once; default 1 (the local engine is CPU-bound). */
  transcriptionConcurrency?: number;
  retry?: RetryPolicy;
  groupId?: string;
  /** Topic names; default without prefix. */
  topics?: Topics;
  now?: () => Date;
}

export interface Processor {
  /** Calls this member has actors for right now. */
  readonly activeCalls: number;
  stop(): Promise<void>;
}

export const PROCESSOR_GROUP = 'call-processor';

export const startProcessor = async (options: ProcessorOptions): Promise<Processor> => {
  const log = options.logger.child({ component: 'processor' });
  const topics = options.topics ?? TOPICS;
  const transcriptions = new Semaphore(options.transcriptionConcurrency ?? 1);
  const pipeline = createCallPipeline({
    store: options.eventStore,
    audio: options.audio,
    transcriber: options.transcriber,
    analyser: options.analyser,
    logger: log,
    processingTimeoutMs: options.processingTimeoutMs,
    retry: options.retry ?? DEFAULT_RETRY,
    transcriptionSlot: (work) => transcriptions.run(work),
    now: options.now,
  });
  const calls = new AggregateRepository(options.eventStore, callDecider, callStreamId);
  const actors = new ActorSystem((context) => pipeline.run(context), options.concurrency ?? 16, (callId, error) => log.error({ callId, err: error }, 'call actor failed'));

  const owned = new Set<number>();
  const owns = (callId: string) => owned.has(partitionForKey(callId, options.topicPartitions));

  const deadlines = new Deadlines((callId) => {
    pipeline
      .timeOut(callId)
      .then(async (state) => {
        if (state.status === 'failed') {
          log.warn({ callId }, 'call timed out');
          await actors.stop(callId, 'processing timeout');
        }
      })
      .catch((error: unknown) => {
        log.error({ callId, err: error }, 'timeout could not be recorded; retrying in 5 s');
        setTimeout(() => deadlines.arm(callId, new Date().toISOString()), 5000).unref();
      });
  });
  const deadlineOf = (call: { submittedAt: string; deadline?: string }) =>
    call.deadline ?? new Date(Date.parse(call.submittedAt) + options.processingTimeoutMs).toISOString();

  const openCalls = new OpenCalls((call, change) => {
    if (change === 'closed') return deadlines.disarm(call.callId);
    if (owns(call.callId)) deadlines.arm(call.callId, deadlineOf(call));
  });
  await openCalls.start(options.eventStore);

  const deadLetter = async (record: LogRecord, reason: string) => {
    log.warn({ topic: record.topic, partition: record.partition, offset: record.offset.toString(), reason }, 'record dead-lettered');
    await options.eventLog.publish(topics.deadLetter, [
      {
        key: record.key,
        value: record.value,
        headers: {
          ...record.headers,
          dlq_reason: reason,
          dlq_source_topic: record.topic,
          dlq_source_partition: String(record.partition),
          dlq_source_offset: record.offset.toString(),
        },
      },
    ]);
  };

  let warnedPartitions = false;
  const intake = async (record: LogRecord) => {
    const parsed = parseCallSubmitted(record);
    if (!parsed.ok) return deadLetter(record, parsed.reason);
    // Appending with "no stream" makes a redelivered record harmless.
    await calls.handle(parsed.data.callId, { type: 'SubmitCall', data: parsed.data }, { teamId: parsed.data.teamId });
    if (partitionForKey(parsed.data.callId, options.topicPartitions) !== record.partition && !warnedPartitions) {
      warnedPartitions = true;
      log.error({ topicPartitions: options.topicPartitions, partition: record.partition }, `${topics.callsSubmitted} has another partition count than TOPIC_PARTITIONS: calls may not be resumed after a restart`);
    }
    actors.wake(parsed.data.callId);
  };

  const inPartitions = (partitions: PartitionRef[]) => {
    const set = new Set(partitions.filter((p) => p.topic === topics.callsSubmitted).map((p) => p.partition));
    return (callId: string) => set.has(partitionForKey(callId, options.topicPartitions));
  };

  const consumer: Consumer = await options.eventLog.consume({
    groupId: options.groupId ?? PROCESSOR_GROUP,
    topics: [topics.callsSubmitted],
    handler: intake,
    onAssigned: async (partitions) => {
      for (const p of partitions) if (p.topic === topics.callsSubmitted) owned.add(p.partition);
      await openCalls.caughtUp();
      const mine = openCalls.all().filter((call) => inPartitions(partitions)(call.callId));
      log.info({ partitions: partitions.map((p) => p.partition), resuming: mine.length }, 'partitions assigned');
      for (const call of mine) {
        deadlines.arm(call.callId, deadlineOf(call));
        actors.wake(call.callId);
      }
    },
    onRevoked: async (partitions) => {
      const theirs = inPartitions(partitions);
      for (const p of partitions) if (p.topic === topics.callsSubmitted) owned.delete(p.partition);
      deadlines.disarmAll(theirs);
      await actors.stopAll(theirs, 'partition revoked');
      log.info({ partitions: partitions.map((p) => p.partition) }, 'partitions revoked');
    },
  });

  return {
    get activeCalls() {
      return actors.size;
    },
    async stop() {
      await consumer.stop();
      deadlines.disarmAll();
      await actors.stopAll(() => true, 'shutting down');
      await openCalls.stop();
    },
  };
};
