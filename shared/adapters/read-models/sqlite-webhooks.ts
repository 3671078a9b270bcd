/**
 * Webhooks and their delivery outbox in the embedded SQLite database (port: webhook-store.ts):
 *   webhooks            one row per webhook, folded from its stream (deleted ones kept, unlisted);
 *   webhook_deliveries  one row per (webhook, event), written in the same transaction as the
 *                       projection's checkpoint (docs/decisions/0012-webhook-outbox.md).
 * Times of the outbox are Unix milliseconds.
 */
import type { RecordedEvent } from '../../ports/event-store.ts';
import { type ApplyOptions, ReadModelUnavailableError } from '../../ports/read-models.ts';
import type { WebhookNotification, WebhookStore } from '../../ports/webhook-store.ts';
import { requestWalScrub, serialised, type SqliteDb } from '../sqlite/sqlite-database.ts';
import { translateSqliteError } from '../sqlite/sqlite-errors.ts';
import type { SqliteVersions } from './sqlite-versions.ts';
import {
  batchSteps,
  claimed,
  type ClaimedRow,
  decodeCursor,
  deliveryIdOf,
  type DeliveryRow,
  deliveryView,
  encodeCursor,
  MODEL,
  notSentAfter,
  outcomeColumns,
  subscribed,
  type WebhookRow,
  webhookView,
} from './webhook-rows.ts';

export const createSqliteWebhooks = (db: SqliteDb, versions: SqliteVersions): WebhookStore => {
  db.exec(`
    CREATE TABLE IF NOT EXISTS webhooks (
      webhook_id           TEXT PRIMARY KEY,
      team_id              TEXT    NOT NULL,
      url                  TEXT    NOT NULL,
      events               TEXT    NOT NULL,
      status               TEXT    NOT NULL,
      created_at           TEXT    NOT NULL,
      secret               TEXT    NOT NULL,
      previous_secret      TEXT,
      previous_valid_until INTEGER,
      last_position        INTEGER NOT NULL
    );
    CREATE INDEX IF NOT EXISTS webhooks_team ON webhooks (team_id, created_at);
    CREATE TABLE IF NOT EXISTS webhook_deliveries (
      seq              INTEGER PRIMARY KEY,
      delivery_id      TEXT    NOT NULL UNIQUE,
      webhook_id       TEXT    NOT NULL,
      team_id          TEXT    NOT NULL,
      event_id         TEXT    NOT NULL,
      subject          TEXT    NOT NULL,
      type             TEXT    NOT NULL,
      body             TEXT    NOT NULL,
      status           TEXT    NOT NULL,
      attempts         INTEGER NOT NULL DEFAULT 0,
      last_status_code INTEGER,
      last_error       TEXT,
      next_attempt_at  INTEGER,
      delivered_at     INTEGER,
      lease_until      INTEGER
    );
    CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
    CREATE INDEX IF NOT EXISTS webhook_deliveries_subject ON webhook_deliveries (webhook_id, subject, seq) WHERE status = 'pending';
    CREATE INDEX IF NOT EXISTS webhook_deliveries_webhook ON webhook_deliveries (webhook_id, seq);
    CREATE INDEX IF NOT EXISTS webhook_deliveries_by_subject ON webhook_deliveries (subject);
  `);
  versions.ensure(MODEL);

  const q = {
    // The leases of what it deleted: one being sent holds the call's call.erased back.
    forgetSubject: db.prepare<[string], { lease_until: number | null }>(
      "DELETE FROM webhook_deliveries WHERE subject = ? AND type <> 'call.erased' RETURNING lease_until",
    ),
    register: db.prepare(
      `INSERT OR IGNORE INTO webhooks (webhook_id, team_id, url, events, status, created_at, secret, last_position) VALUES (?, ?, ?, ?, 'active', ?, ?, ?)`,
    ),
    rotate: db.prepare(
      'UPDATE webhooks SET secret = ?, previous_secret = ?, previous_valid_until = ?, last_position = ? WHERE webhook_id = ? AND last_position < ?',
    ),
    status: db.prepare('UPDATE webhooks SET status = ?, last_position = ? WHERE webhook_id = ? AND last_position < ?'),
    teamWebhooks: db.prepare<[string], WebhookRow>("SELECT * FROM webhooks WHERE team_id = ? AND status = 'active'"),
    oneWebhook: db.prepare<[string], WebhookRow>('SELECT * FROM webhooks WHERE webhook_id = ?'),
    queue: db.prepare(
      `INSERT OR IGNORE INTO webhook_deliveries (delivery_id, webhook_id, team_id, event_id, subject, type, body, status, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?)`,
    ),
    any: db.prepare<[], { n: number }>('SELECT count(*) AS n FROM (SELECT 1 FROM webhooks LIMIT 1)'),
    list: db.prepare<[string], WebhookRow>(
      "SELECT * FROM webhooks WHERE team_id = ? AND status <> 'deleted' ORDER BY created_at, webhook_id",
    ),
    candidates: db.prepare<{ now: number; inFlight: string; perTeam: number; limit: number }, { seq: number }>(
      `SELECT seq FROM (
         SELECT d.seq, d.next_attempt_at, d.team_id, row_number() OVER (PARTITION BY d.team_id ORDER BY d.next_attempt_at, d.seq) AS n
           FROM webhook_deliveries d JOIN webhooks w ON w.webhook_id = d.webhook_id AND w.status = 'active'
          WHERE d.status = 'pending' AND d.next_attempt_at <= :now AND (d.lease_until IS NULL OR d.lease_until <= :now)
            AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.webhook_id = d.webhook_id AND e.subject = d.subject AND e.status = 'pending' AND e.seq < d.seq)
       ) WHERE n <= :perTeam - coalesce((SELECT value FROM json_each(:inFlight) WHERE key = team_id), 0) ORDER BY next_attempt_at, seq LIMIT :limit`,
    ),
    lease: db.prepare('UPDATE webhook_deliveries SET lease_until = ? WHERE seq = ?'),
    claimedRow: db.prepare<[number], ClaimedRow>(
      `SELECT w.*, d.delivery_id, d.event_id, d.type, d.subject, d.body, d.attempts FROM webhook_deliveries d JOIN webhooks w ON w.webhook_id = d.webhook_id WHERE d.seq = ?`,
    ),
    record: db.prepare(
      `UPDATE webhook_deliveries SET status = ?, attempts = attempts + 1, last_status_code = ?, last_error = ?, next_attempt_at = ?, delivered_at = ?, lease_until = NULL WHERE delivery_id = ?`,
    ),
    deliveries: db.prepare<
      { webhookId: string; status: string | null; before: number | null; limit: number },
      DeliveryRow
    >(
      `SELECT * FROM webhook_deliveries WHERE webhook_id = :webhookId AND (:status IS NULL OR status = :status) AND (:before IS NULL OR seq < :before) ORDER BY seq DESC LIMIT :limit`,
    ),
    postpone: db.prepare(
      "UPDATE webhook_deliveries SET next_attempt_at = ?, last_error = coalesce(?, last_error), lease_until = NULL WHERE delivery_id = ? AND status = 'pending'",
    ),
    // Nothing attempts them any more: they end failed, saying why, not pending for ever.
    failPending: db.prepare(
      "UPDATE webhook_deliveries SET status = 'failed', last_error = ?, next_attempt_at = NULL, lease_until = NULL WHERE webhook_id = ? AND status = 'pending'",
    ),
    failUnsent: db.prepare(
      "UPDATE webhook_deliveries SET status = 'failed', last_status_code = NULL, last_error = ?, next_attempt_at = NULL, lease_until = NULL WHERE delivery_id = ? AND status = 'pending'",
    ),
    redeliver: db.prepare(
      `UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at = ?, delivered_at = NULL WHERE webhook_id = ? AND delivery_id = ?`,
    ),
    nextDue: db.prepare<[], { at: number | null }>(
      `SELECT min(max(d.next_attempt_at, coalesce(d.lease_until, 0))) AS at
         FROM webhook_deliveries d JOIN webhooks w ON w.webhook_id = d.webhook_id AND w.status = 'active' WHERE d.status = 'pending'`,
    ),
  };

  /** `notBefore`: when its deliveries may be first attempted (ms since the epoch). */
  const queueFor = (notification: WebhookNotification, notBefore: number) => {
    const rows =
      notification.webhookId !== undefined
        ? [q.oneWebhook.get(notification.webhookId)].filter((r) => r?.status === 'active')
        : q.teamWebhooks.all(notification.teamId);
    for (const row of rows) {
      if (!row || row.team_id !== notification.teamId || !subscribed(row, notification)) continue;
      const { eventId, subject, type, body } = notification;
      q.queue.run(
        deliveryIdOf(row.webhook_id, eventId),
        row.webhook_id,
        row.team_id,
        eventId,
        subject,
        type,
        body,
        notBefore,
      );
    }
  };

  const applyAll = db.transaction(
    (
      events: readonly RecordedEvent[],
      notifications: readonly WebhookNotification[],
      checkpoint: bigint,
      options: ApplyOptions | undefined,
    ) => {
      const applied = versions.active(MODEL).checkpoint;
      versions.expect(applied, options);
      const now = Date.now();
      for (const step of batchSteps(events, notifications, BigInt(applied))) {
        if (step.kind === 'notify') {
          // An erased call's earlier deliveries go: their bodies hold the personal data it destroys.
          // One being sent now (leased) keeps the notice back until its lease ends: per call, one
          // delivery after the other, so a receiver never has call.erased before what it erases.
          let notBefore = now;
          if (step.notification.type === 'call.erased') {
            for (const { lease_until } of q.forgetSubject.all(step.notification.subject))
              if (lease_until !== null) notBefore = Math.max(notBefore, lease_until);
            requestWalScrub(db);
          }
          queueFor(step.notification, notBefore);
          continue;
        }
        const { webhookId, event } = step;
        const position = Number(step.position);
        switch (event.type) {
          case 'WebhookRegistered': {
            const d = event.data;
            q.register.run(webhookId, d.teamId, d.url, JSON.stringify(d.events), d.at, d.secret, position);
            break;
          }
          case 'WebhookSecretRotated':
            q.rotate.run(
              event.data.secret,
              event.data.previousSecret,
              Date.parse(event.data.previousValidUntil),
              position,
              webhookId,
              position,
            );
            break;
          case 'WebhookDisabled':
            q.status.run('disabled', position, webhookId, position);
            q.failPending.run(notSentAfter(event), webhookId);
            break;
          case 'WebhookDeleted':
            q.status.run('deleted', position, webhookId, position);
            q.failPending.run(notSentAfter(event), webhookId);
            break;
          case 'WebhookTestRequested':
            break; // its notification is queued above
        }
      }
      versions.storeCheckpoint(MODEL, 1, checkpoint);
    },
  );

  const claimAll = db.transaction(
    (now: number, limit: number, perTeam: number, leaseMs: number, inFlight: Readonly<Record<string, number>>) => {
      const seqs = q.candidates.all({ now, inFlight: JSON.stringify(inFlight), perTeam, limit }).map((r) => r.seq);
      for (const seq of seqs) q.lease.run(now + leaseMs, seq);
      return seqs.map((seq) => q.claimedRow.get(seq)!);
    },
  );

  const write = <T>(work: () => T): Promise<T> =>
    serialised(db, work).catch((error: unknown) => {
      throw translateSqliteError(
        error,
        (message, cause) => new ReadModelUnavailableError(`SQLite read models unavailable: ${message}`, { cause }),
      );
    });

  return {
    apply: (events, notifications, checkpoint, options) =>
      write(() => applyAll.immediate(events, notifications, checkpoint, options)),
    checkpoint: async () => BigInt(versions.active(MODEL).checkpoint),
    anyWebhook: async () => q.any.get()!.n > 0,
    list: async (teamId) => q.list.all(teamId).map(webhookView),
    async get(webhookId) {
      const row = q.oneWebhook.get(webhookId);
      return row && row.status !== 'deleted' ? webhookView(row) : undefined;
    },
    claim: (now, { limit, perTeam, leaseMs, inFlight }) =>
      write(() => claimAll.immediate(now.getTime(), limit, perTeam, leaseMs, inFlight).map((row) => claimed(row, now))),
    async recordAttempt(deliveryId, outcome, at) {
      const c = outcomeColumns(outcome, at);
      await write(() => q.record.run(c.status, c.statusCode, c.error, c.nextAttemptAt, c.deliveredAt, deliveryId));
    },
    async postpone(deliveryId, until, note) {
      await write(() => q.postpone.run(until.getTime(), note?.slice(0, 500) ?? null, deliveryId));
    },
    async failUnsent(deliveryId, reason) {
      await write(() => q.failUnsent.run(reason.slice(0, 500), deliveryId));
    },
    async forgetSubject(subject) {
      await write(() => {
        q.forgetSubject.all(subject);
        requestWalScrub(db);
      });
    },
    async deliveries(webhookId, { status, limit, cursor }) {
      const before = decodeCursor(cursor);
      const rows = q.deliveries.all({
        webhookId,
        status: status ?? null,
        before: before === undefined ? null : Number(before),
        limit: limit + 1,
      });
      const page = rows.slice(0, limit);
      return {
        deliveries: page.map(deliveryView),
        nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1]!.seq) : null,
      };
    },
    redeliver: (webhookId, deliveryId, now) =>
      write(() => q.redeliver.run(now.getTime(), webhookId, deliveryId).changes > 0),
    async nextDue() {
      const at = q.nextDue.get()?.at;
      return at === null || at === undefined ? undefined : new Date(at);
    },
  };
};
