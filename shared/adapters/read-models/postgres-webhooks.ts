/**
 * Webhooks and their delivery outbox on PostgreSQL: the same tables and rules as
 * sqlite-webhooks.ts. A batch is one transaction holding the version row's lock, so the outbox
 * rows and the checkpoint commit together (docs/decisions/0012-webhook-outbox.md). A claim leases
 * rows with one UPDATE whose WHERE re-checks the lease, so two processes never claim one delivery.
 */
import type pg from 'pg';
import type { WebhookStore } from '../../ports/webhook-store.ts';
import { inTransaction } from '../postgres/postgres-pool.ts';
import { ensureFirstVersion, lockVersion, readCheckpoint, translated } from './postgres-versions.ts';
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

const TABLES = `
  CREATE TABLE IF NOT EXISTS webhooks (
    webhook_id           text   PRIMARY KEY,
    team_id              text   NOT NULL,
    url                  text   NOT NULL,
    events               text   NOT NULL,
    status               text   NOT NULL,
    created_at           text   NOT NULL,
    secret               text   NOT NULL,
    previous_secret      text,
    previous_valid_until bigint,
    last_position        bigint NOT NULL
  );
  CREATE INDEX IF NOT EXISTS webhooks_team ON webhooks (team_id, created_at);
  CREATE TABLE IF NOT EXISTS webhook_deliveries (
    seq              bigserial PRIMARY KEY,
    delivery_id      text   NOT NULL UNIQUE,
    webhook_id       text   NOT NULL,
    team_id          text   NOT NULL,
    event_id         text   NOT NULL,
    subject          text   NOT NULL,
    type             text   NOT NULL,
    body             text   NOT NULL,
    status           text   NOT NULL,
    attempts         integer NOT NULL DEFAULT 0,
    last_status_code integer,
    last_error       text,
    next_attempt_at  bigint,
    delivered_at     bigint,
    lease_until      bigint
  );
  CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
  CREATE INDEX IF NOT EXISTS webhook_deliveries_subject ON webhook_deliveries (webhook_id, subject, seq) WHERE status = 'pending';
  CREATE INDEX IF NOT EXISTS webhook_deliveries_webhook ON webhook_deliveries (webhook_id, seq);
  CREATE INDEX IF NOT EXISTS webhook_deliveries_by_subject ON webhook_deliveries (subject);
`;

/** A call's deliveries but its call.erased notice, deleted; the leases of those being sent come back. */
const FORGET_SUBJECT =
  "DELETE FROM webhook_deliveries WHERE subject = $1 AND type <> 'call.erased' RETURNING lease_until";
export const createPostgresWebhooks = async (pool: pg.Pool): Promise<WebhookStore> => {
  await translated(() =>
    inTransaction(pool, async (client) => {
      await client.query("SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.read_models'))");
      await client.query(TABLES);
      await ensureFirstVersion(client, MODEL);
    }),
  );

  return {
    apply: (events, notifications, checkpoint, options) =>
      translated(() =>
        inTransaction(pool, async (client) => {
          await lockVersion(client, MODEL, 1, options);
          const applied = BigInt(
            (
              await client.query<{ checkpoint: string }>(
                'SELECT checkpoint FROM read_model_versions WHERE model = $1 AND version = 1',
                [MODEL],
              )
            ).rows[0]!.checkpoint,
          );
          const now = Date.now();
          for (const step of batchSteps(events, notifications, applied)) {
            if (step.kind === 'notify') {
              const n = step.notification;
              // An erased call's earlier deliveries go: their bodies hold the personal data it destroys.
              // One being sent now (leased) keeps the notice back until its lease ends: per call, one
              // delivery after the other, so a receiver never has call.erased before what it erases.
              let notBefore = now;
              if (n.type === 'call.erased') {
                const { rows: gone } = await client.query<{ lease_until: string | null }>(FORGET_SUBJECT, [n.subject]);
                for (const { lease_until } of gone)
                  if (lease_until !== null) notBefore = Math.max(notBefore, Number(lease_until));
              }
              const { rows } =
                n.webhookId !== undefined
                  ? await client.query<WebhookRow>(
                      "SELECT * FROM webhooks WHERE webhook_id = $1 AND team_id = $2 AND status = 'active'",
                      [n.webhookId, n.teamId],
                    )
                  : await client.query<WebhookRow>("SELECT * FROM webhooks WHERE team_id = $1 AND status = 'active'", [
                      n.teamId,
                    ]);
              const targets = rows.filter((row) => subscribed(row, n));
              if (targets.length === 0) continue;
              await client.query(
                `INSERT INTO webhook_deliveries (delivery_id, webhook_id, team_id, event_id, subject, type, body, status, next_attempt_at)
                 SELECT d.delivery_id, d.webhook_id, $2, $3, $4, $5, $6, 'pending', $7 FROM json_to_recordset($1::json) AS d(delivery_id text, webhook_id text)
                 ON CONFLICT (delivery_id) DO NOTHING`,
                [
                  JSON.stringify(
                    targets.map((row) => ({
                      delivery_id: deliveryIdOf(row.webhook_id, n.eventId),
                      webhook_id: row.webhook_id,
                    })),
                  ),
                  n.teamId,
                  n.eventId,
                  n.subject,
                  n.type,
                  n.body,
                  notBefore,
                ],
              );
              continue;
            }
            const { webhookId, event } = step;
            const position = step.position.toString();
            switch (event.type) {
              case 'WebhookRegistered': {
                const d = event.data;
                await client.query(
                  `INSERT INTO webhooks (webhook_id, team_id, url, events, status, created_at, secret, last_position) VALUES ($1, $2, $3, $4, 'active', $5, $6, $7) ON CONFLICT DO NOTHING`,
                  [webhookId, d.teamId, d.url, JSON.stringify(d.events), d.at, d.secret, position],
                );
                break;
              }
              case 'WebhookSecretRotated':
                await client.query(
                  'UPDATE webhooks SET secret = $1, previous_secret = $2, previous_valid_until = $3, last_position = $4 WHERE webhook_id = $5 AND last_position < $4',
                  [
                    event.data.secret,
                    event.data.previousSecret,
                    Date.parse(event.data.previousValidUntil),
                    position,
                    webhookId,
                  ],
                );
                break;
              case 'WebhookDisabled':
              case 'WebhookDeleted':
                await client.query(
                  'UPDATE webhooks SET status = $1, last_position = $2 WHERE webhook_id = $3 AND last_position < $2',
                  [event.type === 'WebhookDisabled' ? 'disabled' : 'deleted', position, webhookId],
                );
                // Nothing attempts them any more: they end failed, saying why, not pending for ever.
                await client.query(
                  "UPDATE webhook_deliveries SET status = 'failed', last_error = $1, next_attempt_at = NULL, lease_until = NULL WHERE webhook_id = $2 AND status = 'pending'",
                  [notSentAfter(event), webhookId],
                );
                break;
              case 'WebhookTestRequested':
                break; // its notification is queued above
            }
          }
          await client.query(
            'UPDATE read_model_versions SET checkpoint = GREATEST(checkpoint, $1) WHERE model = $2 AND version = 1',
            [checkpoint.toString(), MODEL],
          );
        }),
      ),
    checkpoint: () => readCheckpoint(pool, MODEL, 1),
    anyWebhook: () => translated(async () => (await pool.query('SELECT 1 FROM webhooks LIMIT 1')).rowCount! > 0),
    list: (teamId) =>
      translated(async () =>
        (
          await pool.query<WebhookRow>(
            "SELECT * FROM webhooks WHERE team_id = $1 AND status <> 'deleted' ORDER BY created_at, webhook_id",
            [teamId],
          )
        ).rows.map(webhookView),
      ),
    get: (webhookId) =>
      translated(async () => {
        const row = (
          await pool.query<WebhookRow>("SELECT * FROM webhooks WHERE webhook_id = $1 AND status <> 'deleted'", [
            webhookId,
          ])
        ).rows[0];
        return row ? webhookView(row) : undefined;
      }),
    claim: (now, { limit, perTeam, leaseMs, inFlight }) =>
      translated(async () => {
        const at = now.getTime();
        const { rows } = await pool.query<ClaimedRow>(
          `WITH candidates AS (
             SELECT seq FROM (
               SELECT d.seq, d.next_attempt_at, d.team_id, row_number() OVER (PARTITION BY d.team_id ORDER BY d.next_attempt_at, d.seq) AS n
                 FROM webhook_deliveries d JOIN webhooks w ON w.webhook_id = d.webhook_id AND w.status = 'active'
                WHERE d.status = 'pending' AND d.next_attempt_at <= $1 AND (d.lease_until IS NULL OR d.lease_until <= $1)
                  AND NOT EXISTS (SELECT 1 FROM webhook_deliveries e WHERE e.webhook_id = d.webhook_id AND e.subject = d.subject AND e.status = 'pending' AND e.seq < d.seq)
             ) ranked WHERE n <= $3 - coalesce(($2::jsonb ->> team_id)::int, 0) ORDER BY next_attempt_at, seq LIMIT $4
           ), leased AS (
             UPDATE webhook_deliveries d SET lease_until = $5 FROM candidates c
              WHERE d.seq = c.seq AND d.status = 'pending' AND (d.lease_until IS NULL OR d.lease_until <= $1)
             RETURNING d.seq, d.delivery_id, d.event_id, d.type, d.subject, d.body, d.attempts, d.webhook_id
           )
           SELECT w.*, l.delivery_id, l.event_id, l.type, l.subject, l.body, l.attempts FROM leased l JOIN webhooks w ON w.webhook_id = l.webhook_id ORDER BY l.seq`,
          [at, JSON.stringify(inFlight), perTeam, limit, at + leaseMs],
        );
        return rows.map((row) => claimed(row, now));
      }),
    async recordAttempt(deliveryId, outcome, at) {
      const c = outcomeColumns(outcome, at);
      await translated(() =>
        pool.query(
          'UPDATE webhook_deliveries SET status = $1, attempts = attempts + 1, last_status_code = $2, last_error = $3, next_attempt_at = $4, delivered_at = $5, lease_until = NULL WHERE delivery_id = $6',
          [c.status, c.statusCode, c.error, c.nextAttemptAt, c.deliveredAt, deliveryId],
        ),
      );
    },
    async postpone(deliveryId, until, note) {
      await translated(() =>
        pool.query(
          "UPDATE webhook_deliveries SET next_attempt_at = $1, last_error = coalesce($2, last_error), lease_until = NULL WHERE delivery_id = $3 AND status = 'pending'",
          [until.getTime(), note?.slice(0, 500) ?? null, deliveryId],
        ),
      );
    },
    async failUnsent(deliveryId, reason) {
      await translated(() =>
        pool.query(
          "UPDATE webhook_deliveries SET status = 'failed', last_status_code = NULL, last_error = $1, next_attempt_at = NULL, lease_until = NULL WHERE delivery_id = $2 AND status = 'pending'",
          [reason.slice(0, 500), deliveryId],
        ),
      );
    },
    async forgetSubject(subject) {
      await translated(() => pool.query(FORGET_SUBJECT, [subject]));
    },
    deliveries: (webhookId, { status, limit, cursor }) =>
      translated(async () => {
        const before = decodeCursor(cursor);
        const { rows } = await pool.query<DeliveryRow>(
          'SELECT * FROM webhook_deliveries WHERE webhook_id = $1 AND ($2::text IS NULL OR status = $2) AND ($3::bigint IS NULL OR seq < $3) ORDER BY seq DESC LIMIT $4',
          [webhookId, status ?? null, before?.toString() ?? null, limit + 1],
        );
        const page = rows.slice(0, limit);
        return {
          deliveries: page.map(deliveryView),
          nextCursor: rows.length > limit ? encodeCursor(page[page.length - 1]!.seq) : null,
        };
      }),
    redeliver: (webhookId, deliveryId, now) =>
      translated(async () => {
        const { rowCount } = await pool.query(
          "UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at = $1, delivered_at = NULL WHERE webhook_id = $2 AND delivery_id = $3",
          [now.getTime(), webhookId, deliveryId],
        );
        return (rowCount ?? 0) > 0;
      }),
    nextDue: () =>
      translated(async () => {
        const at = (
          await pool.query<{ at: string | null }>(
            `SELECT min(greatest(d.next_attempt_at, coalesce(d.lease_until, 0))) AS at
               FROM webhook_deliveries d JOIN webhooks w ON w.webhook_id = d.webhook_id AND w.status = 'active' WHERE d.status = 'pending'`,
          )
        ).rows[0]?.at;
        return at === null || at === undefined ? undefined : new Date(Number(at));
      }),
  };
};
