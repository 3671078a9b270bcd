/**
 * Deal records and the deal.outcome.updated outbox in the embedded SQLite database:
 *   deal_calls    the CallSubmitted facts of calls submitted with a deal, kept until the deal is
 *                 written (a batch may hold the DealRecorded but not its CallSubmitted);
 *   deal_records  one per call, replaced by a later deal write (guarded by position);
 *   deal_outbox   one row per deal write, keyed by its stable event id, written in the same
 *                 transaction as the record: published only after the write, never twice queued.
 */
import { type DealCall, type DealRecord, dealRecordOf } from '../../domain/call/deal-record.ts';
import type { RecordedEvent } from '../../ports/event-store.ts';
import {
  type ApplyOptions,
  type DealOutboxEntry,
  type DealStore,
  ReadModelUnavailableError,
} from '../../ports/read-models.ts';
import { requestWalScrub, serialised, type SqliteDb } from '../sqlite/sqlite-database.ts';
import { translateSqliteError } from '../sqlite/sqlite-errors.ts';
import { dealBatch } from './deal-batch.ts';
import type { SqliteVersions } from './sqlite-versions.ts';

const DEALS = 'deals';

export const createSqliteDeals = (db: SqliteDb, versions: SqliteVersions): DealStore => {
  db.exec(`
    CREATE TABLE IF NOT EXISTS deal_calls (
      call_id TEXT PRIMARY KEY,
      call    TEXT NOT NULL
    );
    CREATE TABLE IF NOT EXISTS deal_records (
      call_id       TEXT PRIMARY KEY,
      team_id       TEXT    NOT NULL,
      last_position INTEGER NOT NULL,
      record        TEXT    NOT NULL
    );
    CREATE INDEX IF NOT EXISTS deal_records_team ON deal_records (team_id, last_position DESC);
    CREATE TABLE IF NOT EXISTS deal_outbox (
      seq          INTEGER PRIMARY KEY,
      event_id     TEXT NOT NULL UNIQUE,
      call_id      TEXT NOT NULL,
      payload      TEXT NOT NULL,
      created_at   TEXT NOT NULL,
      published_at TEXT
    );
    CREATE INDEX IF NOT EXISTS deal_outbox_unpublished ON deal_outbox (seq) WHERE published_at IS NULL;
    CREATE INDEX IF NOT EXISTS deal_outbox_call ON deal_outbox (call_id);
  `);
  versions.ensure(DEALS);

  const d = {
    keepCall: db.prepare('INSERT OR IGNORE INTO deal_calls (call_id, call) VALUES (?, ?)'),
    call: db.prepare<[string], { call: string }>('SELECT call FROM deal_calls WHERE call_id = ?'),
    upsert: db.prepare(
      `INSERT INTO deal_records (call_id, team_id, last_position, record) VALUES (?, ?, ?, ?)
       ON CONFLICT (call_id) DO UPDATE SET team_id = excluded.team_id, last_position = excluded.last_position, record = excluded.record
       WHERE deal_records.last_position < excluded.last_position`,
    ),
    outbox: db.prepare(
      'INSERT OR IGNORE INTO deal_outbox (event_id, call_id, payload, created_at) VALUES (?, ?, ?, ?)',
    ),
    get: db.prepare<[string], { record: string }>('SELECT record FROM deal_records WHERE call_id = ?'),
    byTeam: db.prepare<[string, number], { record: string }>(
      'SELECT record FROM deal_records WHERE team_id = ? ORDER BY last_position DESC LIMIT ?',
    ),
    unpublished: db.prepare<
      [number],
      { event_id: string; call_id: string; payload: string; created_at: string; published_at: string | null }
    >(
      'SELECT event_id, call_id, payload, created_at, published_at FROM deal_outbox WHERE published_at IS NULL ORDER BY seq LIMIT ?',
    ),
    publish: db.prepare('UPDATE deal_outbox SET published_at = ? WHERE event_id = ? AND published_at IS NULL'),
    eraseCall: db.prepare('DELETE FROM deal_calls WHERE call_id = ?'),
    eraseRecord: db.prepare('DELETE FROM deal_records WHERE call_id = ?'),
    eraseOutbox: db.prepare('DELETE FROM deal_outbox WHERE call_id = ?'),
  };

  const applyDeals = db.transaction(
    (events: readonly RecordedEvent[], checkpoint: bigint, options: ApplyOptions | undefined) => {
      versions.expect(versions.active(DEALS).checkpoint, options);
      const batch = dealBatch(events);
      const calls = new Map<string, DealCall>();
      for (const call of batch.calls) {
        calls.set(call.callId, call);
        d.keepCall.run(call.callId, JSON.stringify(call));
      }
      for (const write of batch.writes) {
        const stored = d.call.get(write.callId);
        const call = calls.get(write.callId) ?? (stored ? (JSON.parse(stored.call) as DealCall) : undefined);
        if (!call) continue; // the Call decider records a deal only for a call submitted with one
        const record = dealRecordOf(call, write.recorded);
        const json = JSON.stringify(record);
        d.upsert.run(record.callId, record.teamId, Number(write.position), json);
        d.outbox.run(record.eventId, record.callId, json, record.recordedAt);
      }
      // An erased call's deal goes, with any deal.outcome.updated not yet published (docs/decisions/0014-erasure-crypto-shredding.md).
      for (const callId of batch.erased) {
        d.eraseCall.run(callId);
        d.eraseRecord.run(callId);
        d.eraseOutbox.run(callId);
      }
      if (batch.erased.length > 0) requestWalScrub(db);
      versions.storeCheckpoint(DEALS, 1, checkpoint);
    },
  );

  const markPublished = db.transaction((eventIds: readonly string[], at: string) => {
    for (const id of eventIds) d.publish.run(at, id);
  });

  const deals: DealStore = {
    async apply(events, checkpoint, options) {
      // A locked or failing database is an outage to retry, not a bad event.
      await serialised(db, () => applyDeals.immediate(events, checkpoint, options)).catch((error: unknown) => {
        throw translateSqliteError(
          error,
          (message, cause) => new ReadModelUnavailableError(`SQLite read models unavailable: ${message}`, { cause }),
        );
      });
    },
    async checkpoint() {
      return BigInt(versions.active(DEALS).checkpoint);
    },
    async get(callId) {
      const row = d.get.get(callId);
      return row ? (JSON.parse(row.record) as DealRecord) : undefined;
    },
    async listByTeam(teamId, options) {
      return d.byTeam.all(teamId, options?.limit ?? 100).map((r) => JSON.parse(r.record) as DealRecord);
    },
    async unpublished(limit) {
      return d.unpublished.all(limit).map((r): DealOutboxEntry => ({
        eventId: r.event_id,
        callId: r.call_id,
        payload: JSON.parse(r.payload) as DealRecord,
        createdAt: r.created_at,
        publishedAt: r.published_at,
      }));
    },
    async markPublished(eventIds, at) {
      await serialised(db, () => markPublished.immediate(eventIds, at.toISOString()));
    },
  };

  return deals;
};
