/**
 * The ingress and the call processor running in the test process on real backends, with fresh
 * topic names, plus helpers to wait for a call's outcome in the event store.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Logger, pino } from 'pino';
import { createConversationAnalyser } from '../../shared/adapters/analysis/conversation-analyser.ts';
import { createHttpAudioSource } from '../../shared/adapters/audio/http-audio-source.ts';
import { selectTranscriber } from '../../shared/adapters/transcription/select-transcriber.ts';
import type { CallEvent } from '../../shared/domain/call/call-events.ts';
import type { Analyser } from '../../shared/ports/analyser.ts';
import type { AudioSource } from '../../shared/ports/audio-source.ts';
import type { EventLog } from '../../shared/ports/event-log.ts';
import type { EventStore, RecordedEvent } from '../../shared/ports/event-store.ts';
import type { Transcriber } from '../../shared/ports/transcriber.ts';
import { allTopics, type Topics, topicNames } from '../../shared/topics.ts';
import { type Processor, type ProcessorOptions, startProcessor } from '../../services/processor/processor.ts';
import type { RetryPolicy } from '../../services/processor/retry.ts';
import type { WebhookDeliveryOptions } from '../../services/projections/webhook-delivery.ts';
import { type Projections, startProjections } from '../../services/projections/projections.ts';
import { Health } from '../../services/runtime/health.ts';
import type { ReadModels } from '../../shared/ports/read-models.ts';
import type { PersonalData } from '../../shared/adapters/crypto/personal-data.ts';
import { eventually } from './eventually.ts';
import { createHarness, type Harness } from './ingress-harness.ts';

export const PARTITIONS = 3;

export interface StepOverrides {
  audio?: AudioSource;
  transcriber?: Transcriber;
  analyser?: Analyser;
  processingTimeoutMs?: number;
  retry?: RetryPolicy;
  /** How often the processor's sweep looks for open calls no actor works (the processor's default otherwise). */
  sweepIntervalMs?: number;
  /** Where the processor logs (silent otherwise). */
  logger?: Logger;
}

export interface PipelineOptions {
  retryThresholdMs?: number;
  /** The webhook worker's options (allowPrivate is on unless said otherwise). */
  webhookDelivery?: WebhookDeliveryOptions;
  /** Seal personal fields under data keys and serve erasure, as the service does. */
  erasure?: boolean;
  /** The ingress's clock (retention is measured with it). */
  now?: () => Date;
  /** The store and the log are one embedded database, wired as `npm start` does (decision 0015). */
  sharedDatabase?: boolean;
  /** Where the projections (the webhook delivery worker among them) log (silent otherwise). */
  projectionsLogger?: Logger;
  /** When the processor sets aside a record that keeps failing with a bug (default the service's). */
  stuckRecordAfter?: ProcessorOptions['stuckRecordAfter'];
}

export interface PipelineHarness extends Harness {
  topics: Topics;
  /** The processor's consumer group. */
  groupId: string;
  /** What GET /readyz reports on (processor, projections, team directory). */
  health: Health;
  /** Running when the backends include read models. */
  projections?: Projections;
  processor: Processor;
  /** Starts another processor (after `stopProcessor`, or as a second member). */
  startProcessor(overrides?: StepOverrides): Promise<Processor>;
  stopProcessor(): Promise<void>;
  /** The call's events once `done(events)` holds (default: the call finished). */
  callEvents(callId: string, done?: (events: RecordedEvent[]) => boolean, timeoutMs?: number): Promise<RecordedEvent[]>;
}

export const finished = (events: RecordedEvent[]) =>
  events.some((e) => e.type === 'CallCompleted' || e.type === 'CallFailed');
export const eventData = <T extends CallEvent['type']>(events: RecordedEvent[], type: T) =>
  events.find((e) => e.type === type)?.data as Extract<CallEvent, { type: T }>['data'] | undefined;

export const localSteps = (overrides: StepOverrides = {}) => ({
  audio:
    overrides.audio ?? createHttpAudioSource({ maxBytes: 50 * 1024 * 1024, timeoutMs: 30_000, allowPrivate: true }),
  transcriber: overrides.transcriber ?? selectTranscriber({}),
  analyser: overrides.analyser ?? createConversationAnalyser(),
});

export const createPipelineHarness = async (
  backends: {
    eventStore: EventStore;
    eventLog: EventLog;
    readModels?: ReadModels;
    personalData?: PersonalData;
    storedEvents?: EventStore;
  },
  overrides: StepOverrides = {},
  options: PipelineOptions = {},
): Promise<PipelineHarness> => {
  const topics = topicNames(`t${randomUUID().slice(0, 8)}.`);
  await backends.eventLog.ensureTopics(allTopics(topics).map((name) => ({ name, partitions: PARTITIONS })));
  const health = new Health(options.retryThresholdMs);
  const harness = await createHarness({
    ...backends,
    topics,
    health,
    now: options.now,
    publishCoversStore: options.sharedDatabase,
  });
  const projections = backends.readModels
    ? startProjections({
        eventStore: backends.eventStore,
        eventLog: backends.eventLog,
        readModels: backends.readModels,
        topics,
        logger: options.projectionsLogger ?? pino({ level: 'silent' }),
        health,
        personalData: backends.personalData,
        storedEvents: backends.storedEvents,
        // Receivers in tests listen on loopback.
        webhookDelivery: { allowPrivate: true, ...options.webhookDelivery },
      })
    : undefined;
  const groupId = `processor-${randomUUID()}`;
  const start = (o: StepOverrides = overrides) =>
    startProcessor({
      eventStore: backends.eventStore,
      eventLog: backends.eventLog,
      ...localSteps(o),
      logger: o.logger ?? pino({ level: 'silent' }),
      processingTimeoutMs: o.processingTimeoutMs ?? 60_000,
      sweepIntervalMs: o.sweepIntervalMs,
      retry: o.retry ?? { maxAttempts: 3, baseDelayMs: 20, maxDelayMs: 200 },
      topics,
      groupId,
      health,
      personalData: backends.personalData,
      deferDurability: options.sharedDatabase,
      stuckRecordAfter: options.stuckRecordAfter,
    });
  let processor: Processor | undefined = await start();
  return {
    ...harness,
    topics,
    groupId,
    health,
    projections,
    get processor() {
      return processor!;
    },
    async startProcessor(o) {
      processor = await start(o ?? overrides);
      return processor;
    },
    async stopProcessor() {
      await processor?.stop();
      processor = undefined;
    },
    callEvents(callId, done = finished, timeoutMs = 20_000) {
      return eventually(
        async () => {
          const events = await backends.eventStore.readStream(`call-${callId}`);
          if (!done(events))
            throw new Error(`call ${callId} not there yet: ${events.map((e) => e.type).join(', ') || 'no events'}`);
          return events;
        },
        { timeoutMs, intervalMs: 20 },
      );
    },
    async close() {
      await processor?.stop();
      await projections?.stop();
      await harness.close();
    },
  };
};

/** A recording server on loopback: serves `body` with `contentType`, optionally after a delay. */
export const audioServer = async (options: { body: Buffer; contentType?: string; delayMs?: number }) => {
  let hits = 0;
  const server: Server = createServer((request, response) => {
    hits++;
    const send = () => {
      response.writeHead(200, {
        'content-type': options.contentType ?? 'audio/wav',
        'content-length': options.body.length,
      });
      response.end(options.body);
    };
    if (options.delayMs) {
      const timer = setTimeout(send, options.delayMs);
      response.on('close', () => clearTimeout(timer)); // the client went away
    } else send();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/recording.wav`,
    get hits() {
      return hits;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
};
