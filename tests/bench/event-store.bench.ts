/**
 * Append throughput of each event-store adapter, reported as a ratio against a baseline measured in
 * the same run: the same rows written by the bare driver, one autocommit INSERT per event (what
 * an append costs without group commit).
 *
 *   npx tsx tests/bench/event-store.bench.ts [--events 20000] [--concurrency 64]
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx tests/bench/event-store.bench.ts
 */
import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createPostgresEventStore } from '../../shared/adapters/event-store/postgres-event-store.ts';
import { createSqliteEventStore } from '../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import { freshSchema } from '../support/postgres.ts';
import { tempDir } from '../support/temp-dir.ts';
import { drive, report, type Row } from './report.ts';

const { values } = parseArgs({
  options: { events: { type: 'string', default: '20000' }, concurrency: { type: 'string', default: '64' } },
});
const EVENTS = Number(values.events);
const CONCURRENCY = Number(values.concurrency);
const payload = { transcript: 'x'.repeat(200), repName: 'Dana Reyes', tags: ['demo', 'inbound'] };

const appendRate = (store: EventStore) =>
  drive(EVENTS, CONCURRENCY, (i) =>
    store.append(`call-${randomUUID()}`, [{ type: 'CallSubmitted', data: { i, ...payload } }], {
      expectedVersion: 'no_stream',
    }),
  );

const sqliteRows = async (): Promise<Row[]> => {
  const base = tempDir();
  const raw = new Database(`${base.path}/baseline.sqlite`);
  raw.pragma('journal_mode = WAL');
  raw.pragma('synchronous = FULL');
  raw.exec(
    'CREATE TABLE events (position INTEGER PRIMARY KEY AUTOINCREMENT, stream_id TEXT, revision INTEGER, id TEXT, type TEXT, data TEXT, metadata TEXT, recorded_at INTEGER, UNIQUE (stream_id, revision))',
  );
  const insert = raw.prepare(
    'INSERT INTO events (stream_id, revision, id, type, data, metadata, recorded_at) VALUES (?, 0, ?, ?, ?, ?, ?)',
  );
  const baseline = await drive(Math.min(EVENTS, 5000), 1, async (i) =>
    insert.run(
      `call-${randomUUID()}`,
      randomUUID(),
      'CallSubmitted',
      JSON.stringify({ i, ...payload }),
      '{}',
      Date.now(),
    ),
  );
  raw.close();
  base.remove();

  const dir = tempDir();
  const opened = openSqlite(dir.path);
  const store = createSqliteEventStore(opened.db);
  const rate = await appendRate(store);
  await store.close();
  opened.close();
  dir.remove();
  return [
    {
      name: 'sqlite baseline: bare better-sqlite3, one autocommit INSERT per event',
      perSecond: baseline,
      baseline: true,
    },
    { name: `sqlite event store: append, ${CONCURRENCY} concurrent appenders`, perSecond: rate },
  ];
};

const postgresRows = async (url: string): Promise<Row[]> => {
  const fresh = freshSchema(url);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`CREATE SCHEMA ${fresh.schema}`);
  await client.query(
    `CREATE TABLE ${fresh.schema}.baseline (position BIGSERIAL PRIMARY KEY, stream_id TEXT, revision INT, id UUID, type TEXT, data JSONB, metadata JSONB, recorded_at TIMESTAMPTZ DEFAULT now(), UNIQUE (stream_id, revision))`,
  );
  const baseline = await drive(Math.min(EVENTS, 5000), 1, (i) =>
    client.query(
      `INSERT INTO ${fresh.schema}.baseline (stream_id, revision, id, type, data, metadata) VALUES ($1, 0, $2, 'CallSubmitted', $3, '{}')`,
      [`call-${randomUUID()}`, randomUUID(), JSON.stringify({ i, ...payload })],
    ),
  );
  await client.end();
  const store = await createPostgresEventStore({ connectionString: url, schema: fresh.schema });
  const rate = await appendRate(store);
  await store.close();
  await fresh.drop();
  return [
    { name: 'postgres baseline: bare pg client, one autocommit INSERT per event', perSecond: baseline, baseline: true },
    { name: `postgres event store: append, ${CONCURRENCY} concurrent appenders`, perSecond: rate },
  ];
};

report(`event store append throughput (${EVENTS} single-event appends)`, [
  ...(await sqliteRows()),
  ...(process.env.DATABASE_URL ? await postgresRows(process.env.DATABASE_URL) : []),
]);
if (!process.env.DATABASE_URL) console.log('(postgres skipped: DATABASE_URL is unset)');
