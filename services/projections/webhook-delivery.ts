/**
 * Delivers the webhook outbox (docs/decisions/0012-webhook-outbox.md). Claims due deliveries with
 * a lease, sends each signed (Standard Webhooks), and records the outcome: a 2xx is delivered; a
 * 410 Gone fails the delivery and disables its webhook (a WebhookDisabled event); anything else
 * (another status, no answer within the deadline, a refused address) is retried after the next
 * step of the retry schedule, and failed once the schedule is spent.
 *
 * Teams are isolated: at most `perTeam` attempts of one team are in flight at once (a claim takes
 * no more than a team's room), so a slow or dead receiver holds its own team's slots only,
 * never another team's deliveries. Deliveries of one webhook and call go out in order (a claim
 * never takes one while an earlier one of the same call is pending).
 *
 * A delivery whose body holds a call's personal fields (every type but `call.erased` and
 * `webhook.test`) is sent only while the call's data key exists: once DELETE /api/calls/:callId
 * has destroyed it, the call's deliveries leave the outbox here and are not sent. The projection
 * removes them too when it applies CallErased, but it may lag (or be halted), and a pending retry
 * must not send erased data meanwhile (docs/decisions/0014-erasure-crypto-shredding.md).
 *
 * A `deal.outcome.updated` is sent only once the deal projection has written its deal record (the
 * spec: the event is emitted after the deal write succeeds). The webhook projection queues it from
 * DealRecorded on its own checkpoint, so it may be queued before the deal record exists; until it
 * does the delivery is postponed by `DEAL_RECORD_WAIT_MS`, spending no attempt. Once the deal
 * projection has gone past the deal write without writing its record (an operator skipped it), the
 * record never will be: the delivery is failed unsent, saying why, so the call's later deliveries
 * are not held behind it for ever (deal-write.ts). A wait is never silent either: one that lasts
 * is logged, and noted in the deliveries listing and in readiness (deal-record-waits.ts).
 */
import type { Logger } from 'pino';
import { signWebhook } from '../../shared/adapters/webhooks/webhook-signature.ts';
import { createWebhookSender, type SendWebhook } from '../../shared/adapters/webhooks/webhook-sender.ts';
import { type WebhookCommand, webhookDecider, type WebhookState } from '../../shared/domain/webhook/webhook-decider.ts';
import type { WebhookEvent } from '../../shared/domain/webhook/webhook-events.ts';
import { webhookEvents } from '../../shared/domain/webhook/webhook-catalogue.ts';
import { isDataAtFault } from '../../shared/ports/data-at-fault.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import type { AttemptOutcome, ClaimedDelivery, WebhookStore } from '../../shared/ports/webhook-store.ts';
import { AggregateRepository } from '../runtime/aggregate-repository.ts';
import { webhookAttempts } from '../../shared/observability/metrics.ts';
import type { ComponentReport } from '../runtime/health.ts';
import { DealRecordWaits } from './deal-record-waits.ts';
import type { DealWrite, DealWriteState } from './deal-write.ts';
import { OutboxLoop } from './outbox-loop.ts';

/** The longest a receiver's Retry-After puts the next attempt off: a day. */
const RETRY_AFTER_MAX_MS = 24 * 3_600_000;

/** The Standard Webhooks retry schedule of the issue: 5s,30s,2m,10m,30m,1h,3h,6h,12h,24h. */
export const DEFAULT_WEBHOOK_RETRY_SCHEDULE_MS = [
  5e3,
  30e3,
  120e3,
  600e3,
  1800e3,
  3600e3,
  3 * 3600e3,
  6 * 3600e3,
  12 * 3600e3,
  24 * 3600e3,
];
export const WEBHOOK_TIMEOUT_MS = 10_000;
/** How long a deal.outcome.updated whose deal record is not written yet waits before it is looked at again. */
export const DEAL_RECORD_WAIT_MS = 250;
export const WEBHOOK_MAX_RESPONSE_BYTES = 64 * 1024;

export interface WebhookDeliveryOptions {
  /** Pause before each retry; after the last one the delivery is failed. */
  retryScheduleMs?: readonly number[];
  /** WEBHOOK_ALLOW_PRIVATE: lift the address policy (development and tests). */
  allowPrivate?: boolean;
  timeoutMs?: number;
  /** Attempts in flight in this process, all teams; default 64. */
  concurrency?: number;
  /** Attempts of one team in flight; default 4. */
  perTeam?: number;
  /** How long a deal.outcome.updated waits for its deal record before the wait is logged and noted; default 5 minutes. */
  dealRecordLongWaitMs?: number;
  /** Test seam. */
  send?: SendWebhook;
  /** How much of a lease is left for the checks before sending, beyond the attempt's timeout; default 5 s. Test seam. */
  leaseMarginMs?: number;
}

/** Notification types whose body holds a call's personal fields (its subject is the call id). */
const PERSONAL_DELIVERY_TYPES: ReadonlySet<string> = new Set(['call.completed', 'call.failed', 'deal.outcome.updated']);

/** What the worker reads before it sends. */
export interface WebhookDeliveryChecks {
  /** Whether the call's data key was destroyed (the call is erased); no check when absent. */
  erased?: (callId: string) => Promise<boolean>;
  /** Where the deal write a deal.outcome.updated tells of stands (deal-write.ts); no check when absent. */
  dealWrite?: (write: DealWrite) => Promise<DealWriteState>;
}

export class WebhookDeliveryWorker {
  private readonly schedule: readonly number[];
  private readonly send: SendWebhook;
  private readonly concurrency: number;
  private readonly perTeam: number;
  private readonly leaseMs: number;
  /** Latest a claimed delivery is sent, ms after its claim: its attempt then ends within the lease. */
  private readonly sendBy: number;
  private readonly dealRecordWaits: DealRecordWaits;
  private readonly inFlight = new Map<string, number>();
  private readonly attempts = new Set<Promise<void>>();
  private readonly webhooks: AggregateRepository<WebhookCommand, WebhookState, WebhookEvent>;
  private readonly loop: OutboxLoop;
  /** Ends attempts in flight when the process stops: their leases lapse and they are attempted again. */
  private readonly stopping = new AbortController();

  constructor(
    private readonly store: WebhookStore,
    eventStore: EventStore,
    private readonly log: Logger,
    options: WebhookDeliveryOptions = {},
    private readonly checks: WebhookDeliveryChecks = {},
  ) {
    this.schedule = options.retryScheduleMs ?? DEFAULT_WEBHOOK_RETRY_SCHEDULE_MS;
    const timeoutMs = options.timeoutMs ?? WEBHOOK_TIMEOUT_MS;
    this.send =
      options.send ??
      createWebhookSender({
        timeoutMs,
        maxResponseBytes: WEBHOOK_MAX_RESPONSE_BYTES,
        allowPrivate: options.allowPrivate ?? false,
      });
    this.concurrency = options.concurrency ?? 64;
    this.perTeam = options.perTeam ?? 4;
    this.dealRecordWaits = new DealRecordWaits(log, options.dealRecordLongWaitMs);
    // Longer than an attempt can take, so a lease outlives its attempt; a killed process's lease lapses.
    this.sendBy = options.leaseMarginMs ?? 5_000;
    this.leaseMs = timeoutMs + this.sendBy;
    this.webhooks = new AggregateRepository(eventStore, webhookDecider, webhookEvents);
    this.loop = new OutboxLoop(() => this.claimAndSend(), log, {
      failed: 'webhook delivery cannot read its outbox; retrying every second',
      recovered: 'webhook delivery recovered',
      failing: 'webhook delivery failing',
    });
  }

  start(): void {
    this.loop.wake();
  }

  /** The outbox loop's report, with a note while a deal.outcome.updated has waited long for its deal record. */
  report(retryingTooLong: (since: Date) => boolean): ComponentReport {
    const report = this.loop.report(retryingTooLong);
    const note = this.dealRecordWaits.note();
    return note ? { ...report, ...note, reason: report.reason ?? note.reason } : report;
  }

  /** Looks for due deliveries now (after the projection queued some, or an attempt ended). */
  wake(): void {
    this.loop.wake();
  }

  async stop(): Promise<void> {
    const stopped = this.loop.stop();
    this.stopping.abort();
    await stopped;
    await Promise.all(this.attempts);
  }

  /** Claims and starts what is due; resolves with when to look again (undefined: at the poll interval). */
  private async claimAndSend(): Promise<Date | undefined> {
    const due = await this.store.nextDue();
    const now = new Date();
    if (due === undefined || due > now) return due;
    const inFlight = [...this.inFlight.values()].reduce((a, b) => a + b, 0);
    const room = this.concurrency - inFlight;
    if (room <= 0) return undefined; // an attempt that ends wakes the worker
    const claimed = await this.store.claim(now, {
      limit: room,
      perTeam: this.perTeam,
      leaseMs: this.leaseMs,
      inFlight: Object.fromEntries(this.inFlight),
    });
    for (const delivery of claimed) {
      this.inFlight.set(delivery.teamId, (this.inFlight.get(delivery.teamId) ?? 0) + 1);
      const attempt = this.attempt(delivery, now.getTime()).finally(() => {
        const left = (this.inFlight.get(delivery.teamId) ?? 1) - 1;
        if (left === 0) this.inFlight.delete(delivery.teamId);
        else this.inFlight.set(delivery.teamId, left);
        this.attempts.delete(attempt);
        this.wake();
      });
      this.attempts.add(attempt);
    }
    // Due but nothing claimable (behind an earlier delivery of its call, or its team busy): poll.
    return undefined;
  }

  private async attempt(delivery: ClaimedDelivery, claimedAt: number): Promise<void> {
    // Every line of the attempt names what it delivers: the event, its type and its call (the
    // subject: a call id, or the webhook's own id for a test delivery).
    const log = this.log.child({
      webhookId: delivery.webhookId,
      deliveryId: delivery.deliveryId,
      teamId: delivery.teamId,
      eventId: delivery.eventId,
      type: delivery.type,
      subject: delivery.subject,
    });
    try {
      if (!(await this.mayBeSent(delivery))) return;
      // Checks that took so long (a database answering slowly) that the attempt could outlive the
      // lease are not followed by a send: once the lease lapses another claim may send it too, and
      // the receiver would get it twice at once. Its lease lapses; it is claimed and checked again.
      if (Date.now() - claimedAt > this.sendBy) {
        log.warn(
          { checkedInMs: Date.now() - claimedAt },
          'a webhook delivery was checked too slowly to be sent within its lease; it will be tried again',
        );
        return;
      }
    } catch (error) {
      if (isDataAtFault(error)) {
        // Checked again it would fail the same way (a stored event of its call that does not
        // decode, say): failed unsent, saying why, so the call's later deliveries are not held
        // behind it for ever. A redelivery queues it again once the data is put right.
        const reason = `it could not be checked before sending: ${(error as Error).message}`;
        await this.store
          .failUnsent(delivery.deliveryId, reason)
          .then(() => log.error({ err: error }, `webhook delivery failed unsent: ${reason}`))
          .catch((failing: unknown) =>
            log.warn(
              { err: failing },
              'a webhook delivery that cannot be checked could not be failed; it will be tried again',
            ),
          );
        return;
      }
      // Not sent: the lease lapses and the delivery is claimed and checked again.
      log.warn({ err: error }, 'a webhook delivery could not be checked before sending; it will be tried again');
      return;
    }
    const at = new Date();
    const timestamp = Math.floor(at.getTime() / 1000);
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'call-ingestion-webhooks/1',
      'webhook-id': delivery.eventId,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signWebhook(delivery.secrets, delivery.eventId, timestamp, delivery.body),
    };
    let outcome: AttemptOutcome;
    try {
      const answer = await this.send(delivery.url, headers, delivery.body, this.stopping.signal);
      if (answer.statusCode >= 200 && answer.statusCode <= 299)
        outcome = { kind: 'delivered', statusCode: answer.statusCode };
      else if (answer.statusCode === 410)
        outcome = { kind: 'gone', statusCode: 410, error: 'the receiver answered 410 Gone: webhook disabled' };
      else
        outcome = this.retry(
          delivery,
          answer.statusCode,
          `the receiver answered ${answer.statusCode}`,
          // A receiver that is rate-limited or down for a while says how long to leave it alone.
          answer.statusCode === 429 || answer.statusCode === 503 ? answer.retryAfterMs : undefined,
        );
    } catch (error) {
      outcome = this.retry(delivery, null, (error as Error).message);
    }
    // Abandoned by a stop: nothing is recorded, its lease lapses, another start attempts it again.
    if (this.stopping.signal.aborted && outcome.kind !== 'delivered') return;
    try {
      await this.store.recordAttempt(delivery.deliveryId, outcome, new Date());
      webhookAttempts.inc({
        outcome: outcome.kind === 'retry' && outcome.nextAttemptAt === null ? 'failed' : outcome.kind,
      });
      if (outcome.kind === 'gone') {
        await this.webhooks
          .handle(delivery.webhookId, {
            type: 'DisableWebhook',
            reason: 'the receiver answered 410 Gone',
            now: new Date().toISOString(),
          })
          .then(
            () => log.warn('webhook disabled: its receiver answered 410 Gone'),
            // The attempt is recorded (failed): it is not attempted again, so this is not either.
            (error: unknown) =>
              log.error(
                { err: error },
                'its receiver answered 410 Gone, but the webhook could not be disabled: it stays enabled until a delivery meets the 410 again, or an operator disables it',
              ),
          );
      } else if (outcome.kind === 'retry') {
        log.info(
          { error: outcome.error, nextAttemptAt: outcome.nextAttemptAt?.toISOString() ?? null },
          outcome.nextAttemptAt ? 'webhook delivery will be retried' : 'webhook delivery failed: retry schedule spent',
        );
      }
    } catch (error) {
      // The lease lapses and the delivery is attempted again: at least once.
      log.warn({ err: error }, 'the outcome of a webhook attempt could not be recorded; it will be attempted again');
    }
  }

  /**
   * Whether the claimed delivery may be sent now. A delivery of an erased call is not: the call's
   * deliveries but its `call.erased` notice are deleted, as the projection will when it reaches
   * CallErased, so the listing shows what it shows after an erasure. A deal.outcome.updated whose deal
   * record is not written yet is not either: it is postponed, its attempts unchanged; one whose deal
   * record is never written is failed unsent with the reason.
   */
  private async mayBeSent(delivery: ClaimedDelivery): Promise<boolean> {
    if (PERSONAL_DELIVERY_TYPES.has(delivery.type) && (await this.checks.erased?.(delivery.subject))) {
      this.dealRecordWaits.ended(delivery);
      await this.store.forgetSubject(delivery.subject);
      this.log.info(
        { webhookId: delivery.webhookId, deliveryId: delivery.deliveryId, callId: delivery.subject },
        'webhook delivery of an erased call dropped unsent',
      );
      return false;
    }
    if (delivery.type !== 'deal.outcome.updated' || !this.checks.dealWrite) return true;
    const write = await this.checks.dealWrite({
      callId: delivery.subject,
      eventId: delivery.eventId,
      recordedAt: (JSON.parse(delivery.body) as { data?: { recordedAt?: string } }).data?.recordedAt,
    });
    if (write.state === 'pending') {
      await this.store.postpone(
        delivery.deliveryId,
        new Date(Date.now() + DEAL_RECORD_WAIT_MS),
        this.dealRecordWaits.waiting(delivery),
      );
      return false;
    }
    this.dealRecordWaits.ended(delivery);
    if (write.state === 'written') return true;
    await this.store.failUnsent(delivery.deliveryId, write.reason);
    this.log.warn(
      {
        webhookId: delivery.webhookId,
        deliveryId: delivery.deliveryId,
        callId: delivery.subject,
        reason: write.reason,
      },
      'deal.outcome.updated webhook delivery failed unsent: its deal record is never written',
    );
    return false;
  }

  /**
   * The next attempt after the schedule's pause, or after the receiver's Retry-After when that is
   * longer (at most RETRY_AFTER_MAX_MS: a day, the schedule's longest step); none once the schedule
   * is spent.
   */
  private retry(
    delivery: ClaimedDelivery,
    statusCode: number | null,
    error: string,
    retryAfterMs?: number,
  ): AttemptOutcome {
    const step = this.schedule[delivery.attempts];
    const pause = step === undefined ? undefined : Math.max(step, Math.min(retryAfterMs ?? 0, RETRY_AFTER_MAX_MS));
    return {
      kind: 'retry',
      statusCode,
      error,
      nextAttemptAt: pause === undefined ? null : new Date(Date.now() + pause),
    };
  }
}
