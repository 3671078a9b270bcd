import { randomUUID } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type pg from 'pg';
import {
  type AppendResult,
  checkCategories,
  type EventStore,
  ExpectedVersionConflictError,
  EventStoreUnavailableError,
  type Json,
  type ReadAllOptions,
} from '../../ports/event-store.ts';
import { GroupCommit, type Outcome } from '../group-commit.ts';
import { timeAppend } from '../../observability/metrics.ts';
import { translatePgError } from '../postgres/pg-errors.ts';
import { createPostgresListener } from '../postgres/postgres-listener.ts';
import {
  autocommit,
  CommitOutcomeUnknownError,
  createPostgresClient,
  createPostgresPool,
  eachAloneOnRefusal,
  inTransaction,
  NO_QUERY_TIMEOUT_MS,
  type PostgresOptions,
} from '../postgres/postgres-pool.ts';
import { type EventRow as SqlEventRow, eventRowMapper } from './event-row.ts';
import {
  type AppendRequest,
  FEED_READ_MAX_BYTES,
  type FeedRead,
  type SqlEventStoreOptions,
  subscriptionsOver,
} from './polling-subscription.ts';

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
  -- The event's size as appended (its data and metadata, uncompressed), for reads bounded in bytes:
  -- the size as stored may be compressed to a fraction of what a read parses. Null in rows appended
  -- before it.
  ALTER TABLE events ADD COLUMN IF NOT EXISTS doc_bytes INTEGER;
`;

/**
 * One batch of appends as one statement: it takes the lock that orders positions, reads each
 * stream's last revision (one backward probe of the (stream_id, revision) index per stream: a
 * max(revision) grouped over `= ANY` read every event of those streams, so a team's reservation
 * cost grew with its history), checks each request's expected version against it, inserts the
 * events of the requests that hold and notifies the subscribers. Run outside a transaction block
 * it commits as it returns, so the lock is held while the server works and never across a round
 * trip to a busy client: as six statements of one transaction it was held from the lock to the
 * COMMIT, through five answers each waiting for the client's event loop.
 *
 * Arguments: per request its stream, expected-version kind ('any', 'no_stream', 'stream_exists',
 * 'exact'), exact version and number of events; the events of all requests flattened in order
 * (id, type, data, metadata); the NOTIFY channel and the appending store's origin (its payload is
 * the schema and the origin). One row per request, in order: the stream's
 * revision before it (`actual`) and the position of its last event, null when its expected
 * version did not hold.
 */
const APPEND_FUNCTION = `
  CREATE OR REPLACE FUNCTION events_append(
    streams text[], kinds text[], versions bigint[], counts int[],
    ids uuid[], types text[], datas jsonb[], metas jsonb[], channel text, origin text
  ) RETURNS TABLE (actual bigint, last_position bigint)
  LANGUAGE plpgsql AS $fn$
  DECLARE
    n int := coalesce(array_length(streams, 1), 0);
    request record;
    current_stream text;
    cur bigint;
    held boolean;
    actuals bigint[] := '{}';
    firsts bigint[] := '{}';
    lasts int[] := '{}';
    flat int := 0;
    ev_stream text[] := '{}';
    ev_revision int[] := '{}';
    ev_at int[] := '{}';
    positions bigint[];
  BEGIN
    PERFORM pg_advisory_xact_lock(hashtext(current_schema() || '.events'));
    -- Decided stream by stream, each stream's requests in the order given: one probe per stream.
    FOR request IN SELECT t.stream, t.i FROM unnest(streams) WITH ORDINALITY AS t(stream, i) ORDER BY t.stream, t.i LOOP
      IF request.stream IS DISTINCT FROM current_stream THEN
        current_stream := request.stream;
        cur := coalesce(
          (SELECT e.revision FROM events e WHERE e.stream_id = current_stream ORDER BY e.revision DESC LIMIT 1), -1);
      END IF;
      actuals[request.i] := cur;
      held := CASE kinds[request.i]
                WHEN 'any' THEN true
                WHEN 'no_stream' THEN cur = -1
                WHEN 'stream_exists' THEN cur >= 0
                ELSE cur = versions[request.i]
              END;
      IF held THEN
        firsts[request.i] := cur + 1;
        cur := cur + counts[request.i];
      END IF;
    END LOOP;
    -- The events of the requests that hold, in the order given.
    FOR i IN 1 .. n LOOP
      IF firsts[i] IS NOT NULL THEN
        FOR j IN 1 .. counts[i] LOOP
          ev_stream := ev_stream || streams[i];
          ev_revision := ev_revision || (firsts[i] + j - 1)::int;
          ev_at := ev_at || (flat + j);
        END LOOP;
        lasts[i] := array_length(ev_at, 1);
      END IF;
      flat := flat + counts[i];
    END LOOP;
    IF array_length(ev_at, 1) > 0 THEN
      WITH inserted AS (
        INSERT INTO events (stream_id, revision, id, type, data, metadata, doc_bytes)
        SELECT t.stream_id, t.revision, ids[t.at], types[t.at], datas[t.at], metas[t.at],
               pg_column_size(datas[t.at]) + pg_column_size(metas[t.at])
          FROM unnest(ev_stream, ev_revision, ev_at) WITH ORDINALITY AS t(stream_id, revision, at, n)
         ORDER BY t.n
        RETURNING position
      )
      SELECT array_agg(position ORDER BY position) INTO positions FROM inserted;
      PERFORM pg_notify(channel, current_schema() || ' ' || origin);
    END IF;
    RETURN QUERY SELECT actuals[i], positions[lasts[i]] FROM generate_series(1, n) AS i ORDER BY i;
  END
  $fn$;
`;

/**
 * A statement without the pool's deadline (postgres-pool.ts): adding the category column rewrites
 * a table written before it, which may take far longer on a large one, and a process opening
 * meanwhile waits for the lock as long. Cut off, the migration would be rolled back at every start.
 */
const unbounded = (text: string) => ({ text, query_timeout: NO_QUERY_TIMEOUT_MS }) as pg.QueryConfig;

/** Creates the tables and adds what later versions added; under a lock, so processes opening at once do it once. */
const migrate = (pool: pg.Pool): Promise<void> =>
  inTransaction(pool, async (client) => {
    await client.query(unbounded("SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.events.schema'))"));
    await client.query(SCHEMA);
    const { rows } = await client.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'events' AND indexname = 'events_category_position'`,
    );
    if (rows[0]!.n === 0) await client.query(unbounded(ADD_CATEGORY));
    await client.query(APPEND_FUNCTION);
  });

const CHANNEL = 'events_appended';

const toRecorded = eventRowMapper(
  (doc: Json) => doc,
  (at: Date) => at,
);

/**
 * Retriable PostgreSQL failures (pg-errors.ts) become `EventStoreUnavailableError`; an append whose
 * commit went unanswered (the connection lost or past its deadline once the statement was sent) is
 * one that may have been written, as a caller must say.
 */
const translate = (error: unknown): unknown =>
  error instanceof CommitOutcomeUnknownError
    ? new EventStoreUnavailableError(
        `PostgreSQL event store: the append went unconfirmed, its events may have been written: ${error.message}`,
        { cause: error, outcomeUnknown: true },
      )
    : translatePgError(
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
  /** Names this store's appends in their notifications. */
  const origin = randomUUID();
  const appended = new EventEmitter().setMaxListeners(0);
  // Cross-process wake-ups. While the session is down subscriptions still poll every pollMs; after
  // each (re)connection they are woken once, for what was appended while nobody listened.
  const listener = createPostgresListener({
    connect: () => createPostgresClient(options),
    channel: CHANNEL,
    onNotification: (payload) => {
      // The payload is '<schema> <origin>' (the schema alone from a writer before origins). This
      // store's own appends woke its subscriptions as they committed: their notifications are skipped.
      if (payload === undefined || payload === schema) appended.emit('appended');
      else if (payload.startsWith(`${schema} `) && payload !== `${schema} ${origin}`) appended.emit('appended');
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

  const flush = async (requests: AppendRequest[]): Promise<Outcome<AppendResult>[]> => {
    const events = requests.flatMap((r) => r.events);
    const parameters = [
      requests.map((r) => r.streamId),
      requests.map((r) => (typeof r.expectedVersion === 'number' ? 'exact' : r.expectedVersion)),
      requests.map((r) => (typeof r.expectedVersion === 'number' ? r.expectedVersion : null)),
      requests.map((r) => r.events.length),
      events.map((event) => event.id ?? randomUUID()),
      events.map((event) => event.type),
      events.map((event) => JSON.stringify(event.data)),
      events.map((event) => JSON.stringify(event.metadata ?? {})),
      CHANNEL,
      origin,
    ];
    const sql = `SELECT actual, last_position FROM events_append($1::text[], $2::text[], $3::bigint[], $4::int[],
                   $5::uuid[], $6::text[], $7::jsonb[], $8::jsonb[], $9, $10)`;
    type Row = { actual: string; last_position: string | null };
    // A test's `beforeCommit` holds the batch's transaction open; otherwise the statement commits alone
    // (and a failure that leaves its outcome unknown says so, as a COMMIT's would).
    const beforeCommit = options.beforeCommit;
    const rows = beforeCommit
      ? await inTransaction(pool, async (client) => {
          const result = await client.query<Row>(sql, parameters);
          await beforeCommit();
          return result.rows;
        })
      : (await autocommit<Row>(pool, sql, parameters)).rows;
    return requests.map(({ streamId, events: written, expectedVersion }, i) => {
      const { actual, last_position: last } = rows[i]!;
      return last === null
        ? new ExpectedVersionConflictError(streamId, expectedVersion, Number(actual))
        : { nextExpectedVersion: Number(actual) + written.length, position: BigInt(last) };
    });
  };

  const commits = new GroupCommit<AppendRequest, AppendResult>(
    async (requests) => {
      // One append whose values the server refuses fails alone, not the calls batched with it.
      const outcomes = await eachAloneOnRefusal(requests, flush, translate);
      appended.emit('appended');
      return outcomes;
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

  /**
   * Up to `maxCount` events after `after`, of at most FEED_READ_MAX_BYTES as parsed (at least one):
   * the server sums the sizes recorded at append (`doc_bytes`) over the range and sends only the
   * events within the budget. A row appended before that column counts its stored size, which may
   * be compressed.
   */
  const readFeed = async ({ after = 0n, maxCount = 1000, categories }: ReadAllOptions): Promise<FeedRead> => {
    const only = checkCategories(categories);
    const range = only
      ? // Each category is one bounded range of the (category, position) index; several are merged.
        `SELECT e.* FROM unnest($4::text[]) AS c(category)
           CROSS JOIN LATERAL (SELECT * FROM events WHERE category = c.category AND position > $1 ORDER BY position LIMIT $2) AS e
          ORDER BY e.position LIMIT $2`
      : 'SELECT * FROM events WHERE position > $1 ORDER BY position LIMIT $2';
    const rows = await query<EventRow & { read_index: string; read_bytes: string; read_rows: string }>(
      `SELECT * FROM (
         SELECT r.*,
                row_number() OVER (ORDER BY r.position) AS read_index,
                sum(coalesce(r.doc_bytes, pg_column_size(r.data) + pg_column_size(r.metadata)))
                  OVER (ORDER BY r.position) AS read_bytes,
                count(*) OVER () AS read_rows
           FROM (${range}) AS r
       ) AS b
       WHERE read_index = 1 OR read_bytes <= $3
       ORDER BY position`,
      [after.toString(), maxCount, FEED_READ_MAX_BYTES, ...(only ? [only] : [])],
    );
    return { events: rows.map(toRecorded), more: rows.length > 0 && rows.length < Number(rows[0]!.read_rows) };
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

    async readAll(readOptions = {}) {
      return (await readFeed(readOptions)).events;
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
    { ...store, readFeed },
    (wake) => {
      appended.on('appended', wake);
      listener.start();
      return () => appended.off('appended', wake);
    },
    options.pollMs ?? 250,
  );
  return store;
};
