/**
 * Replay speed of the call-history projection (a bench, not a test): prints numbers, asserts
 * nothing. The budget of docs/decisions/0011-performance-budgets.md: a replay of the call history ≥ 50,000 events/s.
 *
 * Per store backend, a fresh event store is filled with `--calls` calls × 5 events (CallSubmitted,
 * ProcessingStarted, TranscriptRecorded, CallAnalysed, CallCompleted), interleaved as a live feed
 * is (about `--in-flight` calls under way at once) and appended one event per append by
 * `--concurrency` concurrent writers, so the store group-commits them as it does in production.
 * Then, events per second for:
 * - baseline: `eventStore.readAll` alone over the whole feed, in pages of `--batch` (the ceiling a
 *   replay could reach, since a replay reads exactly this);
 * - rebuild apply alone: the same pages, already in memory, through `beginRebuild → apply → activate`;
 * - replay: `replayProjection('call-history')`, which reads and applies one page after the other.
 * A replay runs its reads and applies one after the other, so its time is about the sum of the two.
 *
 *   npx tsx tests/bench/replay.bench.ts [--calls 20000] [--batch 5000] [--concurrency 64] [--in-flight 1000] [--only sqlite|postgres]
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/postgres npx tsx tests/bench/replay.bench.ts
 */
import { parseArgs } from 'node:util';
import { createPostgresEventStore } from '../../shared/adapters/event-store/postgres-event-store.ts';
import { createSqliteEventStore } from '../../shared/adapters/event-store/sqlite-event-store.ts';
import { createPostgresReadModels } from '../../shared/adapters/read-models/postgres-read-models.ts';
import { createSqliteReadModels } from '../../shared/adapters/read-models/sqlite-read-models.ts';
import { openSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
import type { CallEvent } from '../../shared/domain/call/call-events.ts';
import type { EventStore, Json, RecordedEvent } from '../../shared/ports/event-store.ts';
import type { ReadModels } from '../../shared/ports/read-models.ts';
import { replayProjection } from '../../services/projections/replay.ts';
import { analysis, at, submittedData } from '../conformance/read-models-fixtures.ts';
import { freshSchema } from '../support/postgres.ts';
import { tempDir } from '../support/temp-dir.ts';
import { report } from './report.ts';
import { segmentsFromText } from '../../shared/domain/transcript/transcript-segments.ts';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '20000' },
    batch: { type: 'string', default: '5000' },
    concurrency: { type: 'string', default: '64' },
    'in-flight': { type: 'string', default: '1000' },
    only: { type: 'string' },
  },
});
const CALLS = Number(values.calls);
const BATCH = Number(values.batch);
const CONCURRENCY = Number(values.concurrency);
const IN_FLIGHT = Number(values['in-flight']);
const STEPS = 5;
const EVENTS = CALLS * STEPS;
const TEAMS = Array.from({ length: 10 }, (_, i) => `team-${i}`);
const REPS = ['Dana Reyes', 'Jörg Müller', 'Ana Lima', 'Sam Okafor', 'Priya Natarajan'];
const TOPICS = ['Discovery', 'Demo', 'Pricing review', 'Renewal', 'Onboarding'];

const TRANSCRIPT = [
  'Rep: Thanks for joining today, how is the quarter going?',
  'Prospect: Busy. We are evaluating tools for the sales team and the renewal is in March.',
  'Rep: What matters most to you in that evaluation?',
  'Prospect: Coaching insights, and that it works with the dialer we already have.',
  'Rep: That makes sense. Could you walk me through how calls get reviewed today?',
  'Prospect: Managers listen to a few recordings a week, which is not enough.',
  'Rep: Shall we set up a pilot with two teams next week and review the numbers together?',
  'Prospect: Yes, send me a proposal with pricing for forty seats.',
].join('\n');
const SEGMENTS = segmentsFromText(TRANSCRIPT);

/** Step `step` of call `i`: the event and its stream. */
const eventOf = (i: number, step: number): { callId: string; event: CallEvent } => {
  const callId = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
  const t = i * 30;
  const event: CallEvent = (() => {
    switch (step) {
      case 0:
        return {
          type: 'CallSubmitted',
          data: submittedData({
            callId,
            teamId: TEAMS[i % TEAMS.length]!,
            submittedAt: at(t),
            submission: {
              repName: REPS[i % REPS.length],
              repEmail: `rep${i % REPS.length}@acme.test`,
              callTitle: `${TOPICS[i % TOPICS.length]} with Company${i % 100}`,
              tags: i % 10 === 0 ? ['inbound', 'demo'] : ['outbound'],
              metadata: { source: 'bench', externalId: `ext-${i}` },
              transcript: { text: TRANSCRIPT, truncated: false, originalBytes: TRANSCRIPT.length },
            },
          }),
        };
      case 1:
        return { type: 'ProcessingStarted', data: { mode: 'transcript', deadline: at(t + 3600), at: at(t + 1) } };
      case 2:
        return {
          type: 'TranscriptRecorded',
          data: {
            source: 'inline',
            text: TRANSCRIPT,
            truncated: false,
            durationSeconds: 312,
            engine: null,
            segments: SEGMENTS,
            at: at(t + 2),
          },
        };
      case 3:
        return {
          type: 'CallAnalysed',
          data: { ...analysis(`${TOPICS[i % TOPICS.length]}: pilot for forty seats`, 40 + (i % 60)), at: at(t + 3) },
        };
      default:
        return { type: 'CallCompleted', data: { durationSeconds: 312, at: at(t + 4) } };
    }
  })();
  return { callId, event };
};

/** Appends every event, one per append, in live-feed order: call i's step k goes out near slot i + k × in-flight. */
const fill = async (store: EventStore): Promise<number> => {
  const slots: Array<[number, number]> = [];
  for (let i = 0; i < CALLS; i++) for (let step = 0; step < STEPS; step++) slots.push([i, step]);
  slots.sort(([ia, sa], [ib, sb]) => ia + sa * IN_FLIGHT - (ib + sb * IN_FLIGHT) || sa - sb);
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < slots.length) {
        const [i, step] = slots[next++]!;
        const { callId, event } = eventOf(i, step);
        await store.append(`call-${callId}`, [{ type: event.type, data: event.data as unknown as Json }], {
          expectedVersion: step === 0 ? 'no_stream' : step - 1,
        });
      }
    }),
  );
  return slots.length / ((performance.now() - started) / 1000);
};

/** The whole feed through `readAll`, page by page. */
const readFeed = async (store: EventStore): Promise<{ pages: RecordedEvent[][]; rate: number }> => {
  const pages: RecordedEvent[][] = [];
  let count = 0;
  const started = performance.now();
  for (let after = 0n; ;) {
    const page = await store.readAll({ after, maxCount: BATCH });
    if (page.length === 0) break;
    pages.push(page);
    count += page.length;
    after = page[page.length - 1]!.position;
  }
  const rate = count / ((performance.now() - started) / 1000);
  if (count !== EVENTS) throw new Error(`readAll returned ${count} events, ${EVENTS} were appended`);
  return { pages, rate };
};

const applyRate = async (models: ReadModels, pages: RecordedEvent[][]): Promise<number> => {
  const started = performance.now();
  const target = await models.callHistory.beginRebuild();
  for (const page of pages) await target.apply(page, page[page.length - 1]!.position);
  await target.activate();
  return EVENTS / ((performance.now() - started) / 1000);
};

const replayRate = async (eventStore: EventStore, readModels: ReadModels): Promise<number> => {
  const started = performance.now();
  let events = 0;
  for await (const progress of replayProjection(
    'call-history',
    { eventStore, readModels },
    { batchSize: BATCH, progressEveryMs: 60_000 },
  ))
    events = progress.events;
  const rate = events / ((performance.now() - started) / 1000);
  if (events !== EVENTS) throw new Error(`the replay took ${events} events, ${EVENTS} were appended`);
  // The rebuilt history has to show the calls, or the number above measures nothing.
  const last = eventOf(CALLS - 1, 0).callId;
  const row = await readModels.callHistory.get(TEAMS[(CALLS - 1) % TEAMS.length]!, last);
  if (row?.status !== 'completed')
    throw new Error(`after the replay, call ${last} reads as ${row?.status ?? 'missing'}`);
  return rate;
};

const run = async (
  name: string,
  open: () => Promise<{ eventStore: EventStore; readModels: ReadModels; close: () => Promise<void> }>,
) => {
  const { eventStore, readModels, close } = await open();
  try {
    const fillRate = await fill(eventStore);
    console.log(
      `  (${name}: filled ${EVENTS.toLocaleString('en-US')} events at ${Math.round(fillRate).toLocaleString('en-US')} events/s, ${CONCURRENCY} concurrent single-event appends)`,
    );
    const { pages, rate: readRate } = await readFeed(eventStore);
    const apply = await applyRate(readModels, pages);
    pages.length = 0;
    const replay = await replayRate(eventStore, readModels);
    return [
      { name: `${name} baseline: eventStore.readAll alone, pages of ${BATCH}`, perSecond: readRate, baseline: true },
      { name: `${name}: rebuild apply alone (pages already in memory)`, perSecond: apply },
      { name: `${name}: replayProjection('call-history')`, perSecond: replay },
    ];
  } finally {
    await close();
  }
};

console.log(
  `\nreplay of the call-history projection: ${CALLS.toLocaleString('en-US')} calls × ${STEPS} events (budget ≥ 50,000 events/s)`,
);
const rows = [];
if (values.only !== 'postgres') {
  rows.push(
    ...(await run('sqlite', async () => {
      const dir = tempDir('replay-bench-');
      const opened = openSqlite(dir.path);
      const eventStore = createSqliteEventStore(opened.db);
      const readModels = createSqliteReadModels(opened.db);
      return {
        eventStore,
        readModels,
        close: async () => {
          await readModels.close();
          await eventStore.close();
          opened.close();
          dir.remove();
        },
      };
    })),
  );
}
const url = process.env.DATABASE_URL;
if (values.only !== 'sqlite' && url) {
  rows.push(
    ...(await run('postgres', async () => {
      const fresh = freshSchema(url);
      const eventStore = await createPostgresEventStore({ connectionString: url, schema: fresh.schema });
      const readModels = await createPostgresReadModels({ connectionString: url, schema: fresh.schema });
      return {
        eventStore,
        readModels,
        close: async () => {
          await readModels.close();
          await eventStore.close();
          await fresh.drop();
        },
      };
    })),
  );
}
report(`replay throughput (${EVENTS.toLocaleString('en-US')} events)`, rows);
if (values.only !== 'sqlite' && !url) console.log('(postgres skipped: DATABASE_URL is unset)');
