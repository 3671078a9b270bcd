/**
 * Read-model benchmarks (a bench, not a test): prints numbers, asserts nothing.
 *
 * 1. Apply throughput: `--events` call events (5 per call: submitted, started, transcript,
 *    analysed, completed), interleaved as a live feed is (about a thousand calls in flight), applied
 *    to the call history in batches of each `--batch` size, on each backend. Events per second.
 *    Live applies write every batch in its own transaction, so with ~5,000 calls in flight nearly
 *    every event rewrites its row. Then the same feed through a rebuild (beginRebuild, apply,
 *    activate), which writes once per 20,000 events, so a call's events mostly meet in memory.
 * 2. Search latency: `--rows` calls of one team (plus 10% in other teams), then list queries of
 *    every shape, each run `--repeat` times; p50 and max in milliseconds.
 *
 *   npx tsx tests/bench/read-models.bench.ts [--events 100000] [--batch 500,5000] [--rows 200000] [--repeat 20] [--only sqlite|postgres]
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx tests/bench/read-models.bench.ts
 */
import { parseArgs } from 'node:util';
import pg from 'pg';
import { createPostgresReadModels } from '../../shared/adapters/read-models/postgres-read-models.ts';
import { createSqliteReadModels } from '../../shared/adapters/read-models/sqlite-read-models.ts';
import { openSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
import type { CallEvent } from '../../shared/domain/call/call-events.ts';
import type { Json, RecordedEvent } from '../../shared/ports/event-store.ts';
import type { CallHistoryQuery, ProjectionWriter, ReadModels } from '../../shared/ports/read-models.ts';
import { analysis, at, submittedData } from '../conformance/read-models-fixtures.ts';
import { freshSchema } from '../support/postgres.ts';
import { tempDir } from '../support/temp-dir.ts';

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '100000' },
    batch: { type: 'string', default: '500,5000' },
    rows: { type: 'string', default: '200000' },
    repeat: { type: 'string', default: '20' },
    only: { type: 'string' },
  },
});
const EVENTS = Number(values.events);
const BATCHES = values.batch.split(',').map(Number);
const ROWS = Number(values.rows);
const REPEAT = Number(values.repeat);

/** A deterministic pseudo-random sequence, so every backend gets the same data. */
const random = (seed: number) => () => {
  seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
  return seed / 2_147_483_648;
};

const recordedOf = (callId: string, event: CallEvent, revision: number, position: number): RecordedEvent => ({
  id: `${callId}-${revision}`,
  streamId: `call-${callId}`,
  revision,
  position: BigInt(position),
  type: event.type,
  data: event.data as unknown as Json,
  metadata: {},
  recordedAt: new Date(0),
});

const TRANSCRIPT =
  'Rep: thanks for joining today, how is the quarter going? Prospect: busy, we are evaluating tools. '.repeat(8);

/** `count` events of count/5 calls, interleaved as a live feed is: call i's step k sits near i + 1000k. */
const liveFeed = (count: number, teamId: string): RecordedEvent[] => {
  const calls = Math.ceil(count / 5);
  const slots: Array<{ key: number; callId: string; step: number }> = [];
  for (let i = 0; i < calls; i++)
    for (let step = 0; step < 5; step++) slots.push({ key: i + step * 1000 + step / 10, callId: `bench-${i}`, step });
  slots.sort((a, b) => a.key - b.key);
  return slots.slice(0, count).map((slot, n) => {
    const i = Number(slot.callId.slice(6));
    const data = submittedData({
      callId: slot.callId,
      teamId,
      submittedAt: at(i),
      submission: {
        repName: `Rep ${i % 50}`,
        tags: i % 10 === 0 ? ['inbound'] : [],
        transcript: { text: TRANSCRIPT, truncated: false, originalBytes: TRANSCRIPT.length },
      },
    });
    const event: CallEvent = [
      { type: 'CallSubmitted', data } as CallEvent,
      { type: 'ProcessingStarted', data: { mode: 'transcript', deadline: at(i + 3600), at: at(i + 1) } } as CallEvent,
      {
        type: 'TranscriptRecorded',
        data: {
          source: 'inline',
          text: TRANSCRIPT,
          truncated: false,
          durationSeconds: 300,
          engine: null,
          at: at(i + 2),
        },
      } as CallEvent,
      { type: 'CallAnalysed', data: { ...analysis(`Quarterly review ${i}`), at: at(i + 3) } } as CallEvent,
      { type: 'CallCompleted', data: { durationSeconds: 300, at: at(i + 4) } } as CallEvent,
    ][slot.step]!;
    return recordedOf(slot.callId, event, slot.step, n + 1);
  });
};

const applyRate = async (
  writer: ProjectionWriter,
  feed: RecordedEvent[],
  batch: number,
  then?: () => Promise<void>,
): Promise<number> => {
  const started = performance.now();
  for (let i = 0; i < feed.length; i += batch) {
    const slice = feed.slice(i, i + batch);
    await writer.apply(slice, slice[slice.length - 1]!.position);
  }
  await then?.();
  return feed.length / ((performance.now() - started) / 1000);
};

// ---- search corpus ----------------------------------------------------------------------------

const SYLLABLES = [
  'ka',
  'lo',
  'mi',
  'ne',
  'ru',
  'sa',
  'to',
  'vi',
  'ze',
  'da',
  'fe',
  'gu',
  'ha',
  'jo',
  'pe',
  'qu',
  'ri',
  'so',
  'tu',
  'wa',
];
const TOPICS = [
  'Discovery',
  'Demo',
  'Pricing review',
  'Renewal',
  'Onboarding',
  'Check-in',
  'Negotiation',
  'Kickoff',
  'Support escalation',
  'Upsell',
];
const COMPANIES = Array.from({ length: 100 }, (_, i) => `Company${String(i).padStart(3, '0')}`);
const REPS = [
  'Dana Reyes',
  'Jörg Müller',
  'Ana Lima',
  'Sam Okafor',
  'Priya Natarajan',
  ...Array.from({ length: 45 }, (_, i) => `Rep Number${i}`),
];

/** Row i's call id, shaped as the service's call ids are (a cursor holds one and is refused otherwise). */
const rowCallId = (i: number): string => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`;

const corpus = (rows: number, teamId: string, otherTeams: number): RecordedEvent[] => {
  const next = random(42);
  const pick = <T>(list: readonly T[]) => list[Math.floor(next() * list.length)]!;
  const events: RecordedEvent[] = [];
  const total = rows + otherTeams;
  for (let i = 0; i < total; i++) {
    const prospect = `${pick(SYLLABLES)}${pick(SYLLABLES)}${pick(SYLLABLES)}`;
    const title =
      i === Math.floor(rows / 2)
        ? 'Unique Xylophone Summit'
        : `${pick(TOPICS)} with ${prospect[0]!.toUpperCase()}${prospect.slice(1)} (${pick(COMPANIES)})`;
    const data = submittedData({
      callId: rowCallId(i),
      teamId: i < rows ? teamId : `other-${i % 7}`,
      submittedAt: new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString(),
      submission: {
        aiTitleEnabled: false,
        callTitle: title,
        repName: pick(REPS),
        tags: [next() < 0.1 ? 'inbound' : 'outbound', ...(next() < 0.01 ? ['vip'] : [])],
        transcript: { text: 'Rep: hi', truncated: false, originalBytes: 7 },
      },
    });
    events.push(recordedOf(data.callId, { type: 'CallSubmitted', data }, 0, i + 1));
  }
  return events;
};

const QUERIES: Array<[string, CallHistoryQuery]> = [
  ['first page, no filter', {}],
  ['status=pending', { status: 'pending' }],
  ['tag (10%)', { tags: ['inbound'] }],
  ['tags inbound+vip (0.1%)', { tags: ['inbound', 'vip'] }],
  ['search "with" (~100%)', { search: 'with' }],
  ['search "pricing" (10%)', { search: 'pricing' }],
  ['search "company042" (1%)', { search: 'company042' }],
  ['search "müller" rep (2%)', { search: 'MÜLLER' }],
  ['search prospect "kalomi" (~0.01%)', { search: 'kalomi' }],
  ['search "xylophone" (1 row)', { search: 'xylophone' }],
  ['search "zzqzz" (no match)', { search: 'zzqzz' }],
  ['search 2 chars "ka" (common)', { search: 'ka' }],
  ['search 2 chars "qx" (no match: scan)', { search: 'qx' }],
  ['search "pricing" + tag inbound', { search: 'pricing', tags: ['inbound'] }],
];

const latency = async (models: ReadModels, teamId: string) => {
  console.log(`  ${'query'.padEnd(40)} ${'rows'.padStart(5)} ${'p50 ms'.padStart(8)} ${'max ms'.padStart(8)}`);
  for (const [name, query] of QUERIES) {
    const times: number[] = [];
    let rows = 0;
    for (let i = 0; i < REPEAT; i++) {
      const started = performance.now();
      const page = await models.callHistory.list(teamId, { ...query, limit: 25 });
      times.push(performance.now() - started);
      rows = page.calls.length;
    }
    times.sort((a, b) => a - b);
    console.log(
      `  ${name.padEnd(40)} ${String(rows).padStart(5)} ${times[Math.floor(times.length / 2)]!.toFixed(2).padStart(8)} ${times[times.length - 1]!.toFixed(2).padStart(8)}`,
    );
  }
  // Deep pagination: the 40th page through cursors.
  let cursor: string | undefined;
  const pageTimes: number[] = [];
  for (let page = 0; page < 40; page++) {
    const started = performance.now();
    const result = await models.callHistory.list(teamId, { limit: 100, ...(cursor ? { cursor } : {}) });
    pageTimes.push(performance.now() - started);
    cursor = result.nextCursor ?? undefined;
  }
  pageTimes.sort((a, b) => a - b);
  console.log(
    `  ${'next page (limit 100), 40 pages deep'.padEnd(40)} ${'100'.padStart(5)} ${pageTimes[20]!.toFixed(2).padStart(8)} ${pageTimes[39]!.toFixed(2).padStart(8)}`,
  );
};

const run = async (
  name: string,
  open: () => Promise<{ models: ReadModels; analyse?: () => Promise<void>; close: () => Promise<void> }>,
) => {
  console.log(`\n${name}`);
  const feed = liveFeed(EVENTS, 'team-apply');
  const described = `${feed.length.toLocaleString('en-US')} events (interleaved, ${feed.length / 5} calls)`;
  for (const batch of BATCHES) {
    const { models, close } = await open();
    const rate = await applyRate(models.callHistory, feed, batch);
    console.log(
      `  live apply: ${described}, batches of ${batch}: ${Math.round(rate).toLocaleString('en-US')} events/s`,
    );
    await close();
  }
  {
    const { models, close } = await open();
    const target = await models.callHistory.beginRebuild();
    const rate = await applyRate(target, feed, BATCHES[0]!, () => target.activate());
    console.log(
      `  rebuild (beginRebuild → apply → activate): ${described}, batches of ${BATCHES[0]}: ${Math.round(rate).toLocaleString('en-US')} events/s`,
    );
    await close();
  }
  {
    const { models, analyse, close } = await open();
    const rows = corpus(ROWS, 'team-search', Math.floor(ROWS / 10));
    const rate = await applyRate(models.callHistory, rows, 1000);
    console.log(
      `  load: ${rows.length.toLocaleString('en-US')} submitted calls (${ROWS.toLocaleString('en-US')} in one team) at ${Math.round(rate).toLocaleString('en-US')} rows/s`,
    );
    await analyse?.();
    await latency(models, 'team-search');
    await close();
  }
};

if (values.only !== 'postgres') {
  await run('SQLite (better-sqlite3, WAL, synchronous=FULL)', async () => {
    const dir = tempDir('read-models-bench-');
    const opened = openSqlite(dir.path);
    const models = createSqliteReadModels(opened.db);
    return {
      models,
      analyse: async () => {
        opened.db.exec('ANALYZE');
      },
      close: async () => {
        await models.close();
        opened.close();
        dir.remove();
      },
    };
  });
}

const url = process.env.DATABASE_URL;
if (values.only !== 'sqlite') {
  if (!url) {
    console.log('\nPostgreSQL: skipped (DATABASE_URL is unset)');
  } else {
    await run('PostgreSQL (pg, fsync on)', async () => {
      const fresh = freshSchema(url);
      const models = await createPostgresReadModels({ connectionString: url, schema: fresh.schema });
      return {
        models,
        analyse: async () => {
          const client = new pg.Client({ connectionString: url });
          await client.connect();
          await client.query(`SET search_path = ${fresh.schema}`);
          await client.query('ANALYZE');
          await client.end();
        },
        close: async () => {
          await models.close();
          await fresh.drop();
        },
      };
    });
  }
}
