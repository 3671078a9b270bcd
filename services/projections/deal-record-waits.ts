/**
 * The deal.outcome.updated deliveries this process finds waiting for their deal record (see
 * webhook-delivery.ts). A wait is normal while the deal projection catches up, and ends by itself
 * or, when the projection goes past the deal write without writing it, by the delivery failing
 * unsent (deal-write.ts); a wait that lasts is never silent: once it has lasted `longWaitMs` it is
 * logged at warn (once, and at info when it ends), noted as the delivery's last error, and noted in
 * the worker's readiness report.
 */
import type { Logger } from 'pino';
import type { ClaimedDelivery } from '../../shared/ports/webhook-store.ts';

/** How long a deal.outcome.updated waits for its deal record before the wait is logged and noted. */
export const DEAL_RECORD_LONG_WAIT_MS = 5 * 60_000;
/** A wait not looked at for this long is forgotten (its delivery went, or another process has it). */
const FORGOTTEN_MS = 10 * 60_000;
const PRUNE_EVERY_MS = 60_000;

interface Wait {
  callId: string;
  /** When this process first postponed it (Unix ms). */
  since: number;
  /** When it last did. */
  seen: number;
  /** Whether the long wait was logged. */
  logged: boolean;
}

export class DealRecordWaits {
  /** By delivery id. */
  private readonly waits = new Map<string, Wait>();
  private prunedAt = 0;

  constructor(
    private readonly log: Logger,
    private readonly longWaitMs: number = DEAL_RECORD_LONG_WAIT_MS,
  ) {}

  /**
   * Counts one more postponement of the delivery. Once its wait has lasted `longWaitMs` it is logged
   * (once), and the note for its last error is returned; undefined until then.
   */
  waiting(delivery: ClaimedDelivery, now = Date.now()): string | undefined {
    if (now - this.prunedAt > PRUNE_EVERY_MS) {
      for (const [id, wait] of this.waits) if (now - wait.seen > FORGOTTEN_MS) this.waits.delete(id);
      this.prunedAt = now;
    }
    const wait = this.waits.get(delivery.deliveryId) ?? {
      callId: delivery.subject,
      since: now,
      seen: now,
      logged: false,
    };
    wait.seen = now;
    this.waits.set(delivery.deliveryId, wait);
    if (now - wait.since < this.longWaitMs) return undefined;
    const since = new Date(wait.since).toISOString();
    if (!wait.logged) {
      wait.logged = true;
      this.log.warn(
        {
          webhookId: delivery.webhookId,
          deliveryId: delivery.deliveryId,
          callId: delivery.subject,
          waitingSince: since,
        },
        "a deal.outcome.updated webhook delivery has waited long for its deal record, and the call's later deliveries wait behind it; is the deals projection stopped or far behind?",
      );
    }
    return `waiting since ${since} for its deal record, which the deals projection has not written`;
  }

  /** The delivery no longer waits (sent, failed or dropped). */
  ended(delivery: ClaimedDelivery, now = Date.now()): void {
    const wait = this.waits.get(delivery.deliveryId);
    this.waits.delete(delivery.deliveryId);
    if (wait?.logged)
      this.log.info(
        {
          webhookId: delivery.webhookId,
          deliveryId: delivery.deliveryId,
          callId: delivery.subject,
          waitedMs: now - wait.since,
        },
        'a deal.outcome.updated webhook delivery no longer waits for its deal record',
      );
  }

  /** A note on the waits that have lasted, for readiness; undefined when there is none. */
  note(now = Date.now()): { reason: string; dealRecordWaits: number } | undefined {
    const long = [...this.waits.values()].filter(
      (wait) => now - wait.since >= this.longWaitMs && now - wait.seen < FORGOTTEN_MS,
    );
    if (long.length === 0) return undefined;
    const oldest = long.reduce((a, b) => (b.since < a.since ? b : a));
    return {
      reason: `${long.length} deal.outcome.updated deliveries wait for their deal record, the oldest (call ${oldest.callId}) since ${new Date(oldest.since).toISOString()}; the deals projection has not written it`,
      dealRecordWaits: long.length,
    };
  }
}
