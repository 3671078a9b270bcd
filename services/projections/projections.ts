/**
 * The projections: call history, deal records and webhooks (each writes its checkpoint in the same
 * transaction as its rows; the webhook projection's rows are its delivery outbox, see
 * docs/decisions/0012-webhook-outbox.md), the deal.outcome.updated publisher (reads the outbox the
 * deal projection writes, so a message goes out only after its deal record exists), the webhook
 * delivery worker, and the call-events relay. Each follows the event store's global feed; outages
 * are retried in place, a failure is restarted from its checkpoint, and an event a projection
 * cannot take, proven bad by its failure, stops that projection until an operator skips it; one
 * that keeps failing there with an error that proves nothing leaves it stuck on the event, retrying,
 * until it passes or an operator skips it (see supervised.ts,
 * docs/decisions/0025-what-blames-the-data.md and docs/decisions/0027-stuck-on-an-event.md).
 */
import type { Logger } from 'pino';
import { toRecord } from '../../shared/cloudevents.ts';
import type { EventLog } from '../../shared/ports/event-log.ts';
import type { EventStore, RecordedEvent, Subscription, SubscriptionStatus } from '../../shared/ports/event-store.ts';
import type { PersonalData } from '../../shared/adapters/crypto/personal-data.ts';
import { startErasedKeyShredder } from './erased-key-shredder.ts';
import type { ProjectionWriter, ReadModels } from '../../shared/ports/read-models.ts';
import type { Topics } from '../../shared/topics.ts';
import { EventDataAtFaultError, isDataAtFault } from '../../shared/ports/data-at-fault.ts';
import { isBackendUnavailable } from '../../shared/ports/unavailable.ts';
import type { ComponentReport, Health } from '../runtime/health.ts';
import { CALL_EVENTS_RELAY, startCallEventsRelay } from './call-events-relay.ts';
import { dealOutcomesLeftOut, projectionBatchEvents, projectionLagGauge } from '../../shared/observability/metrics.ts';
import { publishOrLeaveOut } from './publish-or-leave-out.ts';
import { inSpansPerItem } from '../../shared/observability/tracing.ts';
import { type SkippableProjection, skippedPositions } from './skipped-events.ts';
import { recordStopped, recordStuck } from './projection-status.ts';
import { ProjectionEventError, type Supervised, supervised, UnexplainedEventError } from './supervised.ts';
import { OutboxLoop } from './outbox-loop.ts';
import { dealWriteState } from './deal-write.ts';
import { WebhookDeliveryWorker, type WebhookDeliveryOptions } from './webhook-delivery.ts';
import { webhookNotifications } from './webhook-notifications.ts';
import type { WebhookStore } from '../../shared/ports/webhook-store.ts';
import { webhookEvents, webhookIdOfStream } from '../../shared/domain/webhook/webhook-catalogue.ts';
import { callEvents } from '../../shared/domain/call/call-catalogue.ts';
import { DEAL_OUTCOME_UPDATED_TYPE } from '../../shared/domain/call/deal-record.ts';

export const DEAL_OUTCOME_UPDATED = DEAL_OUTCOME_UPDATED_TYPE;

export interface ProjectionsOptions {
  eventStore: EventStore;
  eventLog: EventLog;
  readModels: ReadModels;
  topics: Topics;
  logger: Logger;
  /** Relay every call event to calls.events.v1 (default true). */
  relayCallEvents?: boolean;
  /** Where each projection reports its readiness. */
  health?: Health;
  /** How the webhook outbox is delivered (retry schedule, address policy). */
  webhookDelivery?: WebhookDeliveryOptions;
  /**
   * Personal fields (docs/decisions/0014-erasure-crypto-shredding.md): seals them in
   * deal.outcome.updated, and destroys the data key of every erased call the feed shows.
   */
  personalData?: PersonalData;
  /** The events as stored (still sealed), which the call-events relay publishes; default `eventStore`. */
  storedEvents?: EventStore;
}

export interface Projections {
  /** Resolves once every projection has handled every event present when called. */
  caughtUp(): Promise<void>;
  stop(): Promise<void>;
}

/** Call history and deal records fold call streams (`call-<callId>`) and nothing else. */
const CALL_CATEGORY = callEvents.category;
/** The webhook projection folds webhook streams (`webhook-<id>`) and notifies on call events. */
const WEBHOOK_CATEGORIES = [CALL_CATEGORY, webhookEvents.category] as const;

/**
 * Follows the call events of the feed from the writer's own stored checkpoint, applying each batch
 * with that checkpoint as the expected one; caught up, it stores the checkpoint at the feed's head
 * (past other categories' events, which it never reads). When the checkpoint moved under it (a
 * rebuild was activated), the apply fails with CheckpointMismatchError and the supervisor starts it
 * again from the new one.
 * A batch that fails for another reason than an outage is applied again one event at a time, so
 * every event before the failing one is kept. The projection stops on that event
 * (`ProjectionEventError`) only when its failure proves the event bad (`dataAtFault`: it does not
 * decode, the database refuses its values); any other failure is not the event's to answer for
 * (docs/decisions/0025-what-blames-the-data.md): an outage is retried in place by the
 * subscription, anything else fails the subscription (`UnexplainedEventError`, naming the event),
 * which the supervisor starts again from the checkpoint after a growing pause, reported by
 * readiness until it passes, and stuck on the event once it keeps failing there
 * (docs/decisions/0027-stuck-on-an-event.md). Events an operator
 * skipped are left out (`skipped`: the skip list read for this start, by default here; a writer
 * that reads other events of the store takes the same one).
 */
const followFromCheckpoint = (
  name: SkippableProjection,
  store: EventStore,
  writer: ProjectionWriter,
  categories: readonly string[],
  options: {
    skipped?: Promise<ReadonlySet<bigint>>;
    onApplied?: (events: readonly RecordedEvent[]) => void;
  } = {},
): Subscription => {
  const { onApplied } = options;
  // Reading the checkpoint is async; the subscription API is not, so start after it and filter.
  // Until then it is `starting`, not `live`: a read that hangs or fails must not look like progress.
  let inner: Subscription | undefined;
  let stopped = false;
  let state: SubscriptionStatus = { state: 'starting', since: new Date() };
  const skippedNow = options.skipped ?? skippedPositions(store, name);
  const ready = Promise.all([writer.checkpoint(), skippedNow]).then(([checkpoint, skipped]) => {
    if (stopped) return undefined;
    let position = checkpoint;
    const passes = (error: unknown) =>
      isBackendUnavailable(error) || (error as { code?: string }).code === 'CHECKPOINT_MISMATCH';
    inner = store.subscribeToAll({
      batchSize: 1000,
      after: checkpoint,
      categories,
      skipped,
      onPassed: async (reached) => {
        await writer.apply([], reached, { expectedCheckpoint: position });
        position = reached;
      },
      handler: async (events) => {
        const last = events[events.length - 1]!.position;
        const kept = skipped.size === 0 ? events : events.filter((event) => !skipped.has(event.position));
        try {
          // One span per call event, in that call's trace (its context rides in the event's metadata).
          await inSpansPerItem(
            `project ${name}`,
            kept,
            (event) => event.metadata,
            (event) => ({ 'event.type': event.type, 'event.stream': event.streamId }),
            () => writer.apply(kept, last, { expectedCheckpoint: position }),
          );
        } catch (error) {
          if (passes(error)) throw error;
          for (const event of kept) {
            try {
              await writer.apply([event], event.position, { expectedCheckpoint: position });
            } catch (eventError) {
              if (passes(eventError)) throw eventError;
              if (isDataAtFault(eventError)) throw new ProjectionEventError(name, event, eventError);
              // Proves nothing against the event (a bug?): retried from the checkpoint, stuck on it
              // once it keeps failing there (see supervised.ts).
              throw new UnexplainedEventError(name, event, eventError);
            }
            position = event.position;
          }
          await writer.apply([], last, { expectedCheckpoint: position });
        }
        position = last;
        projectionBatchEvents.observe({ projection: name }, kept.length);
        onApplied?.(kept);
      },
    });
    return inner;
  });
  ready.catch((error: unknown) => {
    if (!stopped) state = { state: 'failed', since: new Date(), error: (error as Error)?.message ?? String(error) };
  });
  // An event found bad before the handler was handed it (its sealed fields do not open) stops the
  // projection on it, as one the handler proves bad does.
  const done = ready
    .then((s) => s?.done)
    .catch((error: unknown) => {
      throw error instanceof EventDataAtFaultError ? new ProjectionEventError(name, error.event, error) : error;
    });
  done.catch(() => undefined);
  return {
    done,
    get position() {
      return inner?.position ?? 0n;
    },
    caughtUp: () => ready.then((s) => s?.caughtUp()),
    // One that never started has nothing to stop, and does not wait for its reads to end.
    async stop() {
      stopped = true;
      if (!inner) state = { state: 'stopped', since: new Date() };
      await inner?.stop();
    },
    status: () => inner?.status() ?? state,
  };
};

/**
 * The webhook projection as a ProjectionWriter: the notifications of a batch are prepared first
 * (reading the calls they show, without the events the projection skips), then applied with the
 * webhook events and the checkpoint in one transaction. While no webhook exists and the batch
 * registers none, nothing is prepared.
 */
const webhookWriter = (
  store: WebhookStore,
  eventStore: EventStore,
  skipped: Promise<ReadonlySet<bigint>>,
  onQueued: () => void,
): ProjectionWriter => ({
  checkpoint: () => store.checkpoint(),
  async apply(events, checkpoint, options) {
    const registers = events.some((e) => e.type === 'WebhookRegistered' && webhookIdOfStream(e.streamId) !== undefined);
    const notifications =
      registers || (await store.anyWebhook()) ? await webhookNotifications(eventStore, events, await skipped) : [];
    await store.apply(events, notifications, checkpoint, options);
    if (notifications.length > 0) onQueued();
  },
});

export const startProjections = (options: ProjectionsOptions): Projections => {
  const log = options.logger.child({ component: 'projections' });
  const { eventStore, eventLog, readModels, topics } = options;

  const publisher = new DealOutcomePublisher(readModels, eventLog, topics, log, options.personalData);
  const personalDataOf = options.personalData;
  const webhookDelivery = new WebhookDeliveryWorker(
    readModels.webhooks,
    eventStore,
    log.child({ component: 'webhook-delivery' }),
    options.webhookDelivery,
    // An erased call's deliveries are dropped unsent, though the webhook projection lags behind.
    // A deal.outcome.updated goes out once its deal record is written, as the topic's does, and
    // fails unsent once the deal projection went past it without writing it (an operator's skip).
    {
      erased: personalDataOf ? (callId) => personalDataOf.destroyed(callId) : undefined,
      dealWrite: dealWriteState(readModels.deals, options.storedEvents ?? eventStore),
    },
  );
  const isSkipped = (projection: SkippableProjection) => async (position: bigint) =>
    (await skippedPositions(eventStore, projection)).has(position);
  // A stop is recorded in the store, so every process's GET /api/admin/projections reports it and
  // the admin skip of any process accepts its event; one that fails is tried again while it waits.
  const onHalted = (error: ProjectionEventError) => recordStopped(eventStore, error);
  // So is being stuck on an event: the admin skip of any process accepts that event too.
  const onStuck = (error: UnexplainedEventError, failures: number, since: Date) =>
    recordStuck(eventStore, error, failures, since);
  const running: [string, Supervised][] = [
    [
      'call-history',
      supervised(
        'call-history projection',
        () => followFromCheckpoint('call-history', eventStore, readModels.callHistory, [CALL_CATEGORY]),
        log,
        { isSkipped: isSkipped('call-history'), onHalted, onStuck },
      ),
    ],
    [
      'deals',
      supervised(
        'deal projection',
        () =>
          // The outbox gets entries only from deal writes: a batch without one leaves nothing to publish.
          followFromCheckpoint('deals', eventStore, readModels.deals, [CALL_CATEGORY], {
            onApplied: (events) => {
              if (events.some((event) => event.type === 'DealRecorded')) publisher.wake();
            },
          }),
        log,
        { isSkipped: isSkipped('deals'), onHalted, onStuck },
      ),
    ],
    [
      'webhooks',
      supervised(
        'webhook projection',
        () => {
          // A notification folds the call's earlier events: it leaves out the same skipped events as the feed.
          const skipped = skippedPositions(eventStore, 'webhooks');
          return followFromCheckpoint(
            'webhooks',
            eventStore,
            webhookWriter(readModels.webhooks, eventStore, skipped, () => webhookDelivery.wake()),
            WEBHOOK_CATEGORIES,
            { skipped },
          );
        },
        log,
        {
          isSkipped: isSkipped('webhooks'),
          onHalted,
          onStuck,
        },
      ),
    ],
  ];
  if (options.relayCallEvents !== false) {
    const storedEvents = options.storedEvents ?? eventStore;
    running.push([
      'call-events-relay',
      supervised(
        'call-events relay',
        () => startCallEventsRelay({ eventStore: storedEvents, eventLog, topics, logger: log }),
        log,
      ),
    ]);
  }
  const { personalData } = options;
  if (personalData) {
    const storedEvents = options.storedEvents ?? eventStore;
    running.push([
      'erased-data-keys',
      supervised('erased data keys', () => startErasedKeyShredder({ eventStore: storedEvents, personalData }), log),
    ]);
  }
  publisher.start();
  webhookDelivery.start();
  const tooLong = (since: Date) => options.health!.retryingTooLong(since);
  const unregister = [
    ...running.map(([name, projection]) =>
      options.health?.register(`projection:${name}`, () => projection.report(tooLong)),
    ),
    options.health?.register('deal-outcome-publisher', () => publisher.report(tooLong)),
    options.health?.register('webhook-delivery', () => webhookDelivery.report(tooLong)),
    // Lag from the durable checkpoints: what a projection has not yet applied of the feed.
    projectionLagGauge.register(async () => {
      const head = await eventStore.headPosition();
      const checkpoints: [string, bigint | undefined][] = [
        ['call-history', await readModels.callHistory.checkpoint()],
        ['deals', await readModels.deals.checkpoint()],
        ['webhooks', await readModels.webhooks.checkpoint()],
        ...(options.relayCallEvents !== false
          ? [['call-events-relay', await eventStore.readCheckpoint(CALL_EVENTS_RELAY)] as [string, bigint | undefined]]
          : []),
      ];
      return checkpoints.map(([projection, checkpoint]) => ({
        labels: { projection },
        value: Number(head - (checkpoint ?? 0n)),
      }));
    }),
  ];

  return {
    async caughtUp() {
      await Promise.all(running.map(([, r]) => r.caughtUp()));
      await publisher.drain();
    },
    async stop() {
      for (const remove of unregister) remove?.();
      // Every part is stopped even when one of them fails to; the first failure is thrown after.
      const failures = (await Promise.allSettled(running.map(([, r]) => r.stop()))).flatMap((result) =>
        result.status === 'rejected' ? [result.reason as unknown] : [],
      );
      await publisher.stop();
      await webhookDelivery.stop();
      if (failures.length > 0) throw failures[0];
    },
  };
};

/**
 * Publishes deal.outcome.updated for every outbox entry, then marks it published. At least once:
 * a crash between publishing and marking republishes with the same `ce_id` (the entry's stable
 * event id), so consumers deduplicate by it.
 */
class DealOutcomePublisher {
  private readonly loop: OutboxLoop;

  constructor(
    private readonly readModels: ReadModels,
    private readonly eventLog: EventLog,
    private readonly topics: Topics,
    private readonly log: Logger,
    private readonly personalData?: PersonalData,
  ) {
    // Logged once per outage; the outbox keeps every entry until it is published.
    this.loop = new OutboxLoop(() => this.publishAll(), log, {
      failed: 'deal.outcome.updated publishing failed; retrying every second',
      recovered: 'deal.outcome.updated publishing recovered',
      failing: 'publishing failing',
    });
  }

  start(): void {
    this.loop.wake();
  }

  report(retryingTooLong: (since: Date) => boolean): ComponentReport {
    return this.loop.report(retryingTooLong);
  }

  wake(): void {
    this.loop.wake();
  }

  /** Resolves once everything in the outbox now is published. */
  async drain(): Promise<void> {
    for (;;) {
      await this.loop.current;
      if ((await this.readModels.deals.unpublished(1)).length === 0) return;
      this.wake();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  private async publishAll(): Promise<void> {
    for (;;) {
      const entries = await this.readModels.deals.unpublished(200);
      if (entries.length === 0) return;
      const { personalData } = this;
      const sealed = personalData
        ? await Promise.all(
            entries.map((entry) => personalData.seal(entry.callId, DEAL_OUTCOME_UPDATED, entry.payload)),
          )
        : entries.map((entry) => entry.payload);
      // A deal the log refuses on its own is left out (and marked published with the rest): sent
      // again it would be refused again, and every deal after it would wait behind it for ever.
      await publishOrLeaveOut(
        this.eventLog,
        this.topics.dealOutcomeUpdated,
        entries.map((entry, i) => ({ entry, data: sealed[i] })),
        ({ entry, data }) =>
          toRecord({
            id: entry.eventId,
            type: DEAL_OUTCOME_UPDATED,
            source: '/deals',
            subject: entry.callId,
            time: entry.createdAt,
            data,
            extensions: { teamid: entry.payload.teamId },
          }),
        ({ entry }, refusal) => {
          dealOutcomesLeftOut.inc();
          this.log.error(
            { err: refusal, eventId: entry.eventId, callId: entry.callId, teamId: entry.payload.teamId },
            `deal.outcome.updated left out of ${this.topics.dealOutcomeUpdated}: the log refuses it (the publisher goes on with the next)`,
          );
        },
      );
      await this.readModels.deals.markPublished(
        entries.map((e) => e.eventId),
        new Date(),
      );
      this.log.debug({ published: entries.length }, 'deal.outcome.updated published');
    }
  }
}
