/**
 * Deal records and the deal.outcome.updated outbox on PostgreSQL: the same tables and rules as
 * sqlite-deals.ts. One transaction per batch; the batch travels as JSON documents read with
 * json_to_recordset.
 */
import type pg from 'pg';
import { type DealCall, type DealRecord, dealRecordOf } from '../../domain/call/deal-record.ts';
import type { RecordedEvent } from '../../ports/event-store.ts';
import type { ApplyOptions, DealOutboxEntry, DealStore } from '../../ports/read-models.ts';
import { inTransaction } from '../postgres/postgres-pool.ts';
import { dealBatch } from './deal-batch.ts';
import { ensureFirstVersion, lockVersion, readCheckpoint, translated } from './postgres-versions.ts';

const DEALS = 'deals';

const DEAL_TABLES = `
  CREATE TABLE IF NOT EXISTS deal_calls (
    call_id text PRIMARY KEY,
    call    json NOT NULL
  );
  CREATE TABLE IF NOT EXISTS deal_records (
    call_id       text   PRIMARY KEY,
    team_id       text   NOT NULL,
    last_position bigint NOT NULL,
    record        json   NOT NULL
  );
  CREATE INDEX IF NOT EXISTS deal_records_team ON deal_records (team_id, last_position DESC);
  CREATE TABLE IF NOT EXISTS deal_outbox (
    seq          bigserial PRIMARY KEY,
    event_id     text NOT NULL UNIQUE,
    call_id      text NOT NULL,
    payload      json NOT NULL,
    created_at   text NOT NULL,
    published_at timestamptz
  );
  CREATE INDEX IF NOT EXISTS deal_outbox_unpublished ON deal_outbox (seq) WHERE published_at IS NULL;
  CREATE INDEX IF NOT EXISTS deal_outbox_call ON deal_outbox (call_id);
`;

export const createPostgresDeals = async (pool: pg.Pool): Promise<DealStore> => {
  await translated(() =>
    inTransaction(pool, async (client) => {
      await client.query("SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.read_models'))");
      await client.query(DEAL_TABLES);
      await ensureFirstVersion(client, DEALS);
    }),
  );

  const applyDeals = (events: readonly RecordedEvent[], checkpoint: bigint, options: ApplyOptions | undefined) =>
    translated(() =>
      inTransaction(pool, async (client) => {
        await lockVersion(client, DEALS, 1, options);
        const batch = dealBatch(events);
        const calls = new Map<string, DealCall>(batch.calls.map((call) => [call.callId, call]));
        const missing = [...new Set(batch.writes.map((w) => w.callId).filter((id) => !calls.has(id)))];
        if (missing.length > 0) {
          const { rows } = await client.query<{ call: DealCall }>(
            'SELECT call FROM deal_calls WHERE call_id = ANY($1)',
            [missing],
          );
          for (const { call } of rows) calls.set(call.callId, call);
        }
        const latest = new Map<string, { record: DealRecord; position: bigint }>();
        const outbox: DealRecord[] = [];
        for (const write of batch.writes) {
          const call = calls.get(write.callId);
          if (!call) continue; // the Call decider records a deal only for a call submitted with one
          const record = dealRecordOf(call, write.recorded);
          latest.set(record.callId, { record, position: write.position });
          outbox.push(record);
        }
        await client.query(
          `WITH kept AS (
             INSERT INTO deal_calls (call_id, call)
             SELECT * FROM json_to_recordset($1::json) AS c(call_id text, call json)
             ON CONFLICT DO NOTHING
             RETURNING 1
           ), written AS (
             INSERT INTO deal_records AS d (call_id, team_id, last_position, record)
             SELECT * FROM json_to_recordset($2::json) AS r(call_id text, team_id text, last_position bigint, record json)
             ON CONFLICT (call_id) DO UPDATE SET team_id = excluded.team_id, last_position = excluded.last_position, record = excluded.record
             WHERE d.last_position < excluded.last_position
             RETURNING 1
           ), queued AS (
             INSERT INTO deal_outbox (event_id, call_id, payload, created_at)
             SELECT event_id, call_id, payload, created_at
               FROM ROWS FROM (json_to_recordset($3::json) AS (event_id text, call_id text, payload json, created_at text))
                    WITH ORDINALITY AS o(event_id, call_id, payload, created_at, n)
              ORDER BY n
             ON CONFLICT (event_id) DO NOTHING
             RETURNING 1
           )
           UPDATE read_model_versions SET checkpoint = GREATEST(checkpoint, $4) WHERE model = $5 AND version = 1`,
          [
            JSON.stringify(batch.calls.map((call) => ({ call_id: call.callId, call }))),
            JSON.stringify(
              [...latest.values()].map(({ record, position }) => ({
                call_id: record.callId,
                team_id: record.teamId,
                last_position: position.toString(),
                record,
              })),
            ),
            JSON.stringify(
              outbox.map((record) => ({
                event_id: record.eventId,
                call_id: record.callId,
                payload: record,
                created_at: record.recordedAt,
              })),
            ),
            checkpoint.toString(),
            DEALS,
          ],
        );
        if (batch.erased.length > 0) {
          // An erased call's deal goes, with any deal.outcome.updated not yet published (docs/decisions/0014-erasure-crypto-shredding.md).
          await client.query(
            `WITH calls AS (DELETE FROM deal_calls WHERE call_id = ANY($1::text[]) RETURNING 1),
                  records AS (DELETE FROM deal_records WHERE call_id = ANY($1::text[]) RETURNING 1)
             DELETE FROM deal_outbox WHERE call_id = ANY($1::text[])`,
            [batch.erased],
          );
        }
      }),
    );

  const deals: DealStore = {
    apply: applyDeals,
    checkpoint: () => readCheckpoint(pool, DEALS, 1),
    get: (callId) =>
      translated(
        async () =>
          (await pool.query<{ record: DealRecord }>('SELECT record FROM deal_records WHERE call_id = $1', [callId]))
            .rows[0]?.record,
      ),
    listByTeam: (teamId, options) =>
      translated(async () =>
        (
          await pool.query<{ record: DealRecord }>(
            'SELECT record FROM deal_records WHERE team_id = $1 ORDER BY last_position DESC LIMIT $2',
            [teamId, options?.limit ?? 100],
          )
        ).rows.map((r) => r.record),
      ),
    unpublished: (limit) =>
      translated(async () => {
        const { rows } = await pool.query<{
          event_id: string;
          call_id: string;
          payload: DealRecord;
          created_at: string;
          published_at: Date | null;
        }>(
          'SELECT event_id, call_id, payload, created_at, published_at FROM deal_outbox WHERE published_at IS NULL ORDER BY seq LIMIT $1',
          [limit],
        );
        return rows.map((r): DealOutboxEntry => ({
          eventId: r.event_id,
          callId: r.call_id,
          payload: r.payload,
          createdAt: r.created_at,
          publishedAt: r.published_at?.toISOString() ?? null,
        }));
      }),
    markPublished: async (eventIds, at) => {
      if (eventIds.length === 0) return;
      await translated(() =>
        pool.query('UPDATE deal_outbox SET published_at = $2 WHERE event_id = ANY($1) AND published_at IS NULL', [
          eventIds,
          at,
        ]),
      );
    },
  };

  return deals;
};
