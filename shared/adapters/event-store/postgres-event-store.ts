import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type pg from 'pg';
import {
  type AppendResult,
  checkCategories,
  type EventStore,
  ExpectedVersionConflictError,
  EventStoreUnavailableError,
  expectedVersionHolds,
  type Json,
} from '../../ports/event-store.ts';
import { GroupCommit, type Outcome } from '../group-commit.ts';
import { timeAppend } from '../../observability/metrics.ts';
import { translatePgError } from '../postgres/pg-errors.ts';
import { createPostgresListener } from '../postgres/postgres-listener.ts';
import {
  createPostgresClient,
  createPostgresPool,
  inTransaction,
  type PostgresOptions,
} from '../postgres/postgres-pool.ts';
import { type EventRow as SqlEventRow, eventRowMapper } from './event-row.ts';
import { type AppendRequest, type SqlEventStoreOptions, subscriptionsOver } from './polling-subscription.ts';

/** The logger methods the store uses (a pino logger fits). */
export interface EventStoreLog {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/** Appends from any process wake subscriptions through NOTIFY. */
export interface PostgresEventStoreOptions extends PostgresOptions, SqlEventStoreOptions {
  /**
   * Where the store says that its LISTEN session was lost (warn, once per outage; subscriptions
   * then wake on their poll interval only) and that it is back (info). Default: silent.
   */
  log?: EventStoreLog;
}

type EventRow = SqlEventRow<Json, Date>;

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS events (
    position    BIGSERIAL PRIMARY KEY,
    stream_id   TEXT        NOT NULL,
    revision    INTEGER     NOT NULL,
    id          UUID        NOT NULL,
    type        TEXT        NOT NULL,
    data        JSONB       NOT NULL,
    metadata    JSONB       NOT NULL,
    recorded_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (stream_id, revision)
  );
  CREATE TABLE IF NOT EXISTS event_snapshots (
    name     TEXT PRIMARY KEY,
    position BIGINT NOT NULL,
    data     JSONB NOT NULL
  );
  CREATE TABLE IF NOT EXISTS event_checkpoints (
    id       TEXT PRIMARY KEY,
    position BIGINT NOT NULL
  );
`;

/**
 * The category column (the stream id before its first '-', see `categoryOf`) and its index: a
 * stored generated column, so PostgreSQL fills it for the rows of a table written before it existed
 * when it is added (once, at the first open by this version) and for every row inserted since.
 */
const ADD_CATEGORY = `
  ALTER TABLE events ADD COLUMN IF NOT EXISTS category TEXT
    GENERATED ALWAYS AS (CASE WHEN strpos(stream_id, '-') > 1 THEN split_part(stream_id, '-', 1) END) STORED;
  CREATE INDEX IF NOT EXISTS events_category_position ON events (category, position);
`;

/** Creates the tables and adds what later versions added; under a lock, so processes opening at once do it once. */
const migrate = (pool: pg.Pool): Promise<void> =>
  inTransaction(pool, async (client) => {
    await client.query("SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.events.schema'))");
    await client.query(SCHEMA);
    const { rows } = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'events' AND indexname = 'events_category_position'`,
    );
    if (rows[0]!.n === 0) await client.query(ADD_CATEGORY);
  });

const CHANNEL = 'events_appended';

const toRecorded = eventRowMapper(
  (doc: Json) => doc,
  (at: Date) => at,
);

const translate = (error: unknown): unknown =>
  translatePgError(
    error,
    (message, cause) => new EventStoreUnavailableError(`PostgreSQL event store unavailable: ${message}`, { cause }),
  );

/**
 * Event store on a PostgreSQL server. Concurrent appends are group-committed: one transaction per
 * batch, a handful of statements whatever its size. Every write transaction first takes one
 * transaction-scoped advisory lock, so positions are allocated and committed in the same order
 * across all processes: a reader that sees position N has already seen every committed position
 * below N, and the global feed never skips an event that commits late.
 */
export const createPostgresEventStore = async (options: PostgresEventStoreOptions): Promise<EventStore> => {
  const pool = await createPostgresPool(options).catch((error: unknown) => {
    throw translate(error);
  });
  await migrate(pool).catch(async (error: unknown) => {
    await pool.end().catch(() => undefined);
    throw translate(error);
  });
  const schema = options.schema ?? 'public';
  const appended = new EventEmitter().setMaxListeners(0);
  // Cross-process wake-ups. While the session is down subscriptions still poll every pollMs; after
  // each (re)connection they are woken once, for what was appended while nobody listened.
  const listener = createPostgresListener({
    connect: () => createPostgresClient(options),
    channel: CHANNEL,
    onNotification: (payload) => {
      if (payload === undefined || payload === schema) appended.emit('appended');
    },
    onStateChange: (change) => {
      if (change.state === 'lost') {
        options.log?.warn(
          { err: change.error, retryInMs: change.retryInMs },
          'PostgreSQL event store: LISTEN connection lost; subscriptions poll until it is back',
        );
      } else {
        options.log?.info({ downMs: change.downMs }, 'PostgreSQL event store: LISTEN connection restored');
      }
    },
  });

  const flush = async (requests: AppendRequest[]): Promise<Outcome<AppendResult>[]> =>
    inTransaction(pool, async (client) => {
      await client.query("SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.events'))");
      const streamIds = [...new Set(requests.map((r) => r.streamId))];
      // Each stream's last revision is one probe of the (stream_id, revision) index from its end: a
      // max(revision) grouped over `= ANY` read every event of those streams, so a team's
      // reservation cost grew with the team's history.
      const { rows } = await client.query<{ stream_id: string; revision: number | null }>(
        `SELECT s.stream_id,
                (SELECT e.revision FROM events e WHERE e.stream_id = s.stream_id ORDER BY e.revision DESC LIMIT 1) AS revision
           FROM unnest($1::text[]) AS s(stream_id)`,
        [streamIds],
      );
      const versions = new Map(rows.flatMap((r) => (r.revision === null ? [] : [[r.stream_id, r.revision] as const])));
      const columns = {
        stream: [] as string[],
        revision: [] as number[],
        id: [] as string[],
        type: [] as string[],
        data: [] as string[],
        metadata: [] as string[],
      };
      const outcomes: Outcome<{ nextExpectedVersion: number; lastRow: number }>[] = requests.map(
        ({ streamId, events, expectedVersion }) => {
          const actual = versions.get(streamId) ?? -1;
          if (!expectedVersionHolds(expectedVersion, actual))
            return new ExpectedVersionConflictError(streamId, expectedVersion, actual);
          let revision = actual;
          for (const event of events) {
            revision += 1;
            columns.stream.push(streamId);
            columns.revision.push(revision);
            columns.id.push(event.id ?? randomUUID());
            columns.type.push(event.type);
            columns.data.push(JSON.stringify(event.data));
            columns.metadata.push(JSON.stringify(event.metadata ?? {}));
          }
          versions.set(streamId, revision);
          return { nextExpectedVersion: revision, lastRow: columns.stream.length };
        },
      );
      let positions: string[] = [];
      if (columns.stream.length > 0) {
        const inserted = await client.query<{ position: string }>(
          `INSERT INTO events (stream_id, revision, id, type, data, metadata)
           SELECT stream_id, revision, id, type, data, metadata
             FROM unnest($1::text[], $2::int[], $3::uuid[], $4::text[], $5::jsonb[], $6::jsonb[])
                  WITH ORDINALITY AS t(stream_id, revision, id, type, data, metadata, n)
            ORDER BY n
           RETURNING position`,
          [columns.stream, columns.revision, columns.id, columns.type, columns.data, columns.metadata],
        );
        positions = inserted.rows.map((r) => r.position).sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1));
        await client.query('SELECT pg_notify($1, current_schema())', [CHANNEL]);
      }
      if (options.beforeCommit) await options.beforeCommit();
      return outcomes.map((o) =>
        o instanceof Error
          ? o
          : { nextExpectedVersion: o.nextExpectedVersion, position: BigInt(positions[o.lastRow - 1]!) },
      );
    });

  const commits = new GroupCommit<AppendRequest, AppendResult>(
    async (requests) => {
      try {
        const outcomes = await flush(requests);
        appended.emit('appended');
        return outcomes;
      } catch (error) {
        throw translate(error);
      }
    },
    { name: 'postgres-event-store' },
  );

  const query = async <R extends pg.QueryResultRow>(sql: string, params: unknown[]): Promise<R[]> => {
    try {
      return (await pool.query<R>(sql, params)).rows;
    } catch (error) {
      throw translate(error);
    }
  };

  const store: EventStore = {
    append(streamId, events, appendOptions = {}) {
      if (events.length === 0) return Promise.reject(new TypeError('append needs at least one event'));
      return timeAppend(
        'postgres',
        commits.submit({ streamId, events, expectedVersion: appendOptions.expectedVersion ?? 'any' }),
      );
    },

    async readStream(streamId, { fromRevision = 0, maxCount = 2_147_483_647 } = {}) {
      const rows = await query<EventRow>(
        'SELECT * FROM events WHERE stream_id = $1 AND revision >= $2 ORDER BY revision LIMIT $3',
        [streamId, fromRevision, maxCount],
      );
      return rows.map(toRecorded);
    },

    async readAll({ after = 0n, maxCount = 1000, categories } = {}) {
      const only = checkCategories(categories);
      const rows = only
        ? // Each category is one bounded range of the (category, position) index; several are merged.
          await query<EventRow>(
            `SELECT e.* FROM unnest($3::text[]) AS c(category)
               CROSS JOIN LATERAL (SELECT * FROM events WHERE category = c.category AND position > $1 ORDER BY position LIMIT $2) AS e
              ORDER BY e.position LIMIT $2`,
            [after.toString(), maxCount, only],
          )
        : await query<EventRow>('SELECT * FROM events WHERE position > $1 ORDER BY position LIMIT $2', [
            after.toString(),
            maxCount,
          ]);
      return rows.map(toRecorded);
    },

    subscribeToAll: (subscribeOptions) => subscriptions.subscribe(subscribeOptions),

    async headPosition() {
      const rows = await query<{ position: string | null }>('SELECT max(position) AS position FROM events', []);
      return BigInt(rows[0]?.position ?? 0);
    },

    async readCheckpoint(checkpointId) {
      const rows = await query<{ position: string }>('SELECT position FROM event_checkpoints WHERE id = $1', [
        checkpointId,
      ]);
      return rows[0] ? BigInt(rows[0].position) : undefined;
    },

    async storeCheckpoint(checkpointId, position) {
      await query(
        'INSERT INTO event_checkpoints (id, position) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET position = excluded.position',
        [checkpointId, position.toString()],
      );
    },

    async readSnapshot(name) {
      const rows = await query<{ position: string; data: Json }>(
        'SELECT position, data FROM event_snapshots WHERE name = $1',
        [name],
      );
      return rows[0] ? { position: BigInt(rows[0].position), data: rows[0].data } : undefined;
    },

    async storeSnapshot(name, snapshot) {
      await query(
        'INSERT INTO event_snapshots (name, position, data) VALUES ($1, $2, $3) ON CONFLICT (name) DO UPDATE SET position = excluded.position, data = excluded.data WHERE excluded.position > event_snapshots.position',
        [name, snapshot.position.toString(), JSON.stringify(snapshot.data)],
      );
    },

    async close() {
      await subscriptions.stopAll();
      await commits.drain();
      await listener.stop();
      await pool.end();
    },
  };
  const subscriptions = subscriptionsOver(
    store,
    (wake) => {
      appended.on('appended', wake);
      listener.start();
      return () => appended.off('appended', wake);
    },
    options.pollMs ?? 250,
  );
  return store;
};
