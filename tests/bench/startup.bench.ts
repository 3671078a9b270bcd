/**
 * Start-up with a long history (a bench, not a test): how long `npm start`'s service takes to
 * answer /readyz 200 on an embedded database holding `--calls` completed calls, first with no
 * snapshot (a fold of the whole feed, as before snapshots existed, or after they were lost), then
 * again after a clean stop stored the snapshots (the normal restart).
 *
 * The history is real: one call is submitted and processed by the service, then its events (call
 * stream and team reservation/settlement) are cloned under new call ids straight into the
 * database, and the projections' checkpoints are moved to the head (as if they had caught up:
 * the rows do not matter to start-up).
 *
 *   npx tsx tests/bench/startup.bench.ts [--calls 1000000] [--batch 20000]
 */
import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { recordTarget } from './targets.ts';
import { serviceNodeFlags } from './wrk.ts';

const { values } = parseArgs({
  options: { calls: { type: 'string', default: '1000000' }, batch: { type: 'string', default: '20000' } },
});
const CALLS = Number(values.calls);
const BATCH = Number(values.batch);
const root = fileURLToPath(new URL('../..', import.meta.url));
const ADMIN_TOKEN = 'startup-bench-admin-token-0123456789abcdef';
const dataDir = mkdtempSync(join(tmpdir(), 'startup-bench-'));
const port = 40_000 + Math.floor(Math.random() * 10_000);
const base = `http://127.0.0.1:${port}`;

/** The service started last, killed should this bench fail half way. */
let running: ReturnType<typeof spawn> | undefined;
process.on('exit', () => running?.kill('SIGKILL'));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts the compiled service (what `npm start` runs); resolves with it and the ms to /readyz 200. */
const start = async () => {
  const started = performance.now();
  const child = spawn(process.execPath, [...serviceNodeFlags(), 'dist/services/main.js'], {
    cwd: root,
    env: {
      ...process.env,
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      ADMIN_TOKEN,
      API_KEY_SECRET: 'startup-bench-key-secret-0123456789abcdef',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  running = child;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`the service exited with ${child.exitCode}`);
    const ready = await fetch(`${base}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ready) return { child, readyMs: performance.now() - started };
    await sleep(20);
  }
};
const stop = async (child: ReturnType<typeof spawn>) => {
  child.kill('SIGINT');
  await once(child, 'exit');
};
const rssMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
const admin = async (path: string, body: unknown) => {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, string>;
};

console.log(`building with npm run build, then seeding ${CALLS.toLocaleString('en-US')} calls into ${dataDir}`);
await once(spawn('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' }), 'exit');

// 1. One real call through the service.
const { child } = await start();
const { teamId } = await admin('/api/admin/teams', {
  name: 'Startup bench',
  ownerEmail: 'owner@bench.test',
  capacityHours: 1_000_000,
});
const { key } = await admin(`/api/admin/teams/${teamId}/keys`, { label: 'bench' });
const submitted = await fetch(`${base}/api/integrations/push-api/ingest`, {
  method: 'POST',
  headers: { 'x-api-key': key!, 'content-type': 'application/json' },
  body: JSON.stringify({
    transcript:
      'Rep: Hi Dana, what do you use today?\nDana: Spreadsheets, and the price worries me.\nRep: I will send a proposal by Friday.',
    repName: 'Sam Seller',
  }),
});
const { callId } = (await submitted.json()) as { callId: string };
for (;;) {
  const call = (await (await fetch(`${base}/api/calls/${callId}`, { headers: { 'x-api-key': key! } })).json()) as {
    status?: string;
  };
  if (call.status === 'completed') break;
  await sleep(50);
}
await stop(child);

// 2. Clone its history.
const db = new Database(join(dataDir, 'calls.sqlite'));
db.pragma('journal_mode = WAL');
db.pragma('synchronous = OFF');
type Row = { stream_id: string; revision: number; type: string; data: string; metadata: string };
const callEvents = db
  .prepare<[string], Row>(
    'SELECT stream_id, revision, type, data, metadata FROM events WHERE stream_id = ? ORDER BY revision',
  )
  .all(`call-${callId}`);
const teamEvents = db
  .prepare<[string], Row>(
    'SELECT stream_id, revision, type, data, metadata FROM events WHERE stream_id = ? ORDER BY revision',
  )
  .all(`team-${teamId}`);
const perCallTeamEvents = teamEvents.filter((e) => e.data.includes(callId));
let teamRevision = teamEvents[teamEvents.length - 1]!.revision;
const insert = db.prepare(
  'INSERT INTO events (stream_id, revision, id, type, data, metadata, recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
);
const seeded = performance.now();
const seedBatch = db.transaction((from: number, to: number) => {
  const now = Date.now();
  for (let i = from; i < to; i++) {
    const id = randomUUID();
    for (const e of callEvents)
      insert.run(`call-${id}`, e.revision, randomUUID(), e.type, e.data.replaceAll(callId, id), e.metadata, now);
    for (const e of perCallTeamEvents)
      insert.run(e.stream_id, ++teamRevision, randomUUID(), e.type, e.data.replaceAll(callId, id), e.metadata, now);
  }
});
for (let from = 0; from < CALLS; from += BATCH) {
  seedBatch(from, Math.min(CALLS, from + BATCH));
  if ((from / BATCH) % 10 === 0)
    process.stdout.write(`  seeded ${Math.min(CALLS, from + BATCH).toLocaleString('en-US')} calls\r`);
}
const head = (db.prepare('SELECT max(position) AS p FROM events').get() as { p: number }).p;
// The projections have caught up; no snapshot exists yet.
db.prepare('UPDATE read_model_versions SET checkpoint = ? WHERE state = ?').run(head, 'active');
db.prepare(
  'INSERT INTO event_checkpoints (id, position) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET position = excluded.position',
).run('relay.call-events', head);
db.prepare('DELETE FROM event_snapshots').run();
db.pragma('wal_checkpoint(TRUNCATE)');
db.close();
const events = head;
console.log(
  `\nseeded ${CALLS.toLocaleString('en-US')} calls (${events.toLocaleString('en-US')} events) in ${((performance.now() - seeded) / 1000).toFixed(1)} s`,
);

// 3. Cold (no snapshot) and warm (snapshots from a clean stop) starts.
const cold = await start();
const coldRss = rssMb(cold.child.pid!);
await stop(cold.child);
const warm = await start();
const warmRss = rssMb(warm.child.pid!);
await stop(warm.child);

console.log(
  `\nstart-up with ${CALLS.toLocaleString('en-US')} stored calls (${events.toLocaleString('en-US')} events), spawn → /readyz 200`,
);
console.log(
  `  without snapshots (whole feed folded)   ${(cold.readyMs / 1000).toFixed(2).padStart(8)} s   RSS ${coldRss.toFixed(0)} MB`,
);
console.log(
  `  from snapshots (after a clean stop)     ${(warm.readyMs / 1000).toFixed(2).padStart(8)} s   RSS ${warmRss.toFixed(0)} MB`,
);
recordTarget({
  target: `5 start-up with ${CALLS.toLocaleString('en-US')} stored calls, spawn → /readyz 200`,
  figure: `${(warm.readyMs / 1000).toFixed(2)} s from snapshots (RSS ${warmRss.toFixed(0)} MB)`,
  baseline: `${(cold.readyMs / 1000).toFixed(2)} s folding the whole feed; bound 5 s`,
  ratio: warm.readyMs / cold.readyMs,
  goal: '≤ 5 s',
  met: warm.readyMs <= 5000,
  command: `npx tsx tests/bench/startup.bench.ts --calls ${CALLS}`,
});
rmSync(dataDir, { recursive: true, force: true });
