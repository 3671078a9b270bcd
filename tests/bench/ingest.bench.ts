/**
 * The full ingest path against a bare Fastify route, and POST → visible in history latency (a
 * bench, not a test): prints numbers, asserts nothing. The budgets of docs/decisions/0011-performance-budgets.md: the full ingest path
 * ≥ 50% of the requests/s of a bare Fastify route that accepts the same body; POST → visible in
 * history (transcript only, built-in analyser) p50 ≤ 50 ms, p99 ≤ 150 ms.
 *
 * 1. Throughput: `--requests` POSTs of a ~1 KB JSON transcript-only submission over
 *    `--connections` keep-alive connections (node:http Agent, client in this process, after
 *    `--warmup` requests), first to a bare Fastify app whose one POST route parses the body and
 *    answers 201 with a small JSON, then to the ingress (`createIngress`) on the embedded SQLite
 *    backends, logging at `--log-level` to /dev/null as production logs to stdout. Each API key may
 *    make 30 requests a minute, so the team(s) get enough keys for every request and requests take
 *    them round-robin; non-201 answers are counted and shown. The capacity reservation is a
 *    command on the team aggregate, which runs one at a time per team: `--teams` spreads the keys
 *    over more teams to show what that costs. No processor runs here, so every reservation stays
 *    open: the rate depends on `--requests` when the team's cost grows with its open reservations.
 * 2. Latency: the ingress, the call processor and the projections in this process on fresh
 *    embedded backends; `--latency-calls` calls submitted one at a time, each polled
 *    (`callHistory.get` every `--poll-ms`) until completed. Reports POST → 201 and POST → completed
 *    in the history.
 *
 *   npx tsx tests/bench/ingest.bench.ts [--requests 10000] [--warmup 500] [--connections 50] [--teams 1] [--latency-calls 200] [--poll-ms 1] [--log-level info] [--partitions 6] [--only throughput,latency]
 */
import Fastify from 'fastify';
import { randomUUID } from 'node:crypto';
import { Agent, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { pino, type Logger } from 'pino';
import { createSqliteEventLog } from '../../shared/adapters/event-log/sql-event-log.ts';
import { createSqliteEventStore } from '../../shared/adapters/event-store/sqlite-event-store.ts';
import { createMemoryRateLimiter } from '../../shared/adapters/rate-limit/memory-rate-limiter.ts';
import { createSqliteReadModels } from '../../shared/adapters/read-models/sqlite-read-models.ts';
import { openSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
import { allTopics, TOPICS } from '../../shared/topics.ts';
import { createIngress, type Ingress } from '../../services/ingress/ingress.ts';
import { INGEST_PATH, INGEST_RATE_LIMIT } from '../../services/ingress/ingest-route.ts';
import { startProcessor } from '../../services/processor/processor.ts';
import { startProjections } from '../../services/projections/projections.ts';
import { createLogger } from '../../services/runtime/logger.ts';
import { ADMIN_TOKEN, API_KEY_SECRET } from '../support/ingress-harness.ts';
import { localSteps } from '../support/pipeline-harness.ts';
import { tempDir } from '../support/temp-dir.ts';
import { report } from './report.ts';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '10000' },
    warmup: { type: 'string', default: '500' },
    connections: { type: 'string', default: '50' },
    teams: { type: 'string', default: '1' },
    'latency-calls': { type: 'string', default: '200' },
    'poll-ms': { type: 'string', default: '1' },
    'log-level': { type: 'string', default: 'info' },
    partitions: { type: 'string', default: '6' },
    only: { type: 'string', default: 'throughput,latency' },
  },
});
const REQUESTS = Number(values.requests);
const WARMUP = Number(values.warmup);
const CONNECTIONS = Number(values.connections);
const TEAMS = Number(values.teams);
const LATENCY_CALLS = Number(values['latency-calls']);
const LATENCY_WARMUP = 10;
const POLL_MS = Number(values['poll-ms']);
const LOG_LEVEL = values['log-level'];
const PARTITIONS = Number(values.partitions);
const ONLY = new Set(values.only.split(','));
/** Requests per key, under the 30-a-minute limit with room to spare. */
const PER_KEY = INGEST_RATE_LIMIT.limit - 5;

// ---- the request --------------------------------------------------------------------------------

const DIALOGUE = [
  'Rep: Thanks for joining today, how is the quarter going?',
  'Prospect: Busy. We are evaluating tools for the sales team and our renewal is in March.',
  'Rep: What matters most to you in that evaluation?',
  'Prospect: Coaching insights, and that it works with the dialer we already have.',
  'Rep: Could you walk me through how calls get reviewed today?',
  'Prospect: Managers listen to a few recordings a week, which is not enough.',
  'Rep: Shall we set up a pilot with two teams next week and review the numbers together?',
  'Prospect: Yes, send me a proposal with pricing for forty seats.',
].join('\n');

/** A transcript-only submission of about 1 KB (the transcript is cut to make up the size). */
const BODY = (() => {
  const fields = {
    repName: 'Dana Reyes',
    repEmail: 'dana.reyes@acme.test',
    callTitle: 'Quarterly review with Acme',
    callDate: '2026-11-20',
    duration: 312,
    durationUnit: 'seconds',
    tags: ['inbound', 'demo'],
    metadata: { source: 'bench', externalId: 'ext-000123', syncMethod: 'push' },
  };
  const bare = JSON.stringify({ transcript: '', ...fields }).length;
  return Buffer.from(JSON.stringify({ transcript: DIALOGUE.repeat(3).slice(0, 1024 - bare - 30), ...fields }));
})();

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Answer {
  status: number;
  body: string;
}

/** One POST of BODY over `agent`; resolves with the status and the response body. */
const post = (agent: Agent, port: number, path: string, headers: Record<string, string>): Promise<Answer> =>
  new Promise((resolve, reject) => {
    const req = request(
      {
        agent,
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': String(BODY.length), ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(BODY);
  });

const percentile = (sorted: Float64Array, p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? NaN;

interface LoadResult {
  perSecond: number;
  p50: number;
  p99: number;
  max: number;
  /** Status → count, for answers other than 201. */
  other: Map<number, number>;
}

/**
 * `count` requests over `CONNECTIONS` keep-alive connections, each connection sending its next
 * request when the previous answer arrived. Request n (counted from `first`) gets `headersFor(n)`.
 */
const load = async (
  port: number,
  path: string,
  first: number,
  count: number,
  headersFor: (n: number) => Record<string, string>,
): Promise<LoadResult> => {
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  const latencies = new Float64Array(count);
  const other = new Map<number, number>();
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (next < count) {
        const n = next++;
        const sent = performance.now();
        const { status } = await post(agent, port, path, headersFor(first + n));
        latencies[n] = performance.now() - sent;
        if (status !== 201) other.set(status, (other.get(status) ?? 0) + 1);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  agent.destroy();
  latencies.sort();
  return {
    perSecond: count / seconds,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    max: latencies[count - 1] ?? NaN,
    other,
  };
};

/** `result` with the non-201 answers of `warm` added. */
const withOther = (result: LoadResult, warm: LoadResult): LoadResult => {
  for (const [status, n] of warm.other) result.other.set(status, (result.other.get(status) ?? 0) + n);
  return result;
};

const describeOther = (other: Map<number, number>) =>
  other.size === 0 ? '0' : [...other].map(([status, n]) => `${n} × ${status}`).join(', ');

// ---- the ingress on the embedded backends ------------------------------------------------------

/** Production logs JSON lines to stdout; here the same lines go to /dev/null. */
const benchLogger = (): Logger => createLogger(LOG_LEVEL, pino.destination({ dest: '/dev/null', sync: true }));

const embedded = async () => {
  const dir = tempDir('ingest-bench-');
  const opened = openSqlite(dir.path);
  const eventStore = createSqliteEventStore(opened.db);
  const eventLog = createSqliteEventLog(opened.db);
  const readModels = createSqliteReadModels(opened.db);
  await eventLog.ensureTopics(allTopics(TOPICS).map((name) => ({ name, partitions: PARTITIONS })));
  const limiter = createMemoryRateLimiter();
  const logger = benchLogger();
  const ingress = await createIngress({
    eventStore,
    eventLog,
    limiter,
    logger,
    adminToken: ADMIN_TOKEN,
    apiKeySecret: API_KEY_SECRET,
    readModels,
    topics: TOPICS,
  });
  await ingress.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (ingress.app.server.address() as AddressInfo).port;
  return {
    eventStore,
    eventLog,
    readModels,
    logger,
    ingress,
    port,
    async close() {
      await ingress.close();
      await limiter.close();
      await eventLog.close();
      await readModels.close();
      await eventStore.close();
      opened.close();
      dir.remove();
    },
  };
};

/** `teams` teams with ample capacity and enough keys for `requests` requests; key n belongs to team n % teams. */
const keysFor = async (ingress: Ingress, teams: number, requests: number) => {
  const teamIds = await Promise.all(
    Array.from({ length: teams }, (_, t) =>
      ingress.teams.createTeam({
        name: `Bench team ${t}`,
        ownerEmail: `owner${t}@acme.test`,
        ownerName: 'Olive Owner',
        capacityHours: 1_000_000,
      }),
    ),
  );
  const count = Math.max(teams, Math.ceil(requests / PER_KEY));
  const keys: Array<{ teamId: string; key: string }> = new Array(count);
  // Commands on one team run one at a time anyway; teams go in parallel.
  await Promise.all(
    teamIds.map(async (teamId, t) => {
      for (let n = t; n < count; n += teams)
        keys[n] = { teamId, key: (await ingress.teams.issueKey(teamId, `bench ${n}`)).key };
    }),
  );
  return keys;
};

// ---- 1. throughput ----------------------------------------------------------------------------

const throughput = async () => {
  const bare = Fastify({ logger: false });
  bare.post(INGEST_PATH, async (_request, reply) => reply.code(201).send({ callId: randomUUID(), status: 'pending' }));
  await bare.listen({ port: 0, host: '127.0.0.1' });
  const barePort = (bare.server.address() as AddressInfo).port;
  const anyKey = { 'x-api-key': 'pk_bench' };
  const bareWarm = await load(barePort, INGEST_PATH, 0, WARMUP, () => anyKey);
  const baseline = withOther(await load(barePort, INGEST_PATH, 0, REQUESTS, () => anyKey), bareWarm);
  await bare.close();

  const backends = await embedded();
  try {
    const keys = await keysFor(backends.ingress, TEAMS, WARMUP + REQUESTS);
    const headersFor = (n: number) => ({ 'x-api-key': keys[n % keys.length]!.key });
    const warm = await load(backends.port, INGEST_PATH, 0, WARMUP, headersFor);
    const full = withOther(await load(backends.port, INGEST_PATH, WARMUP, REQUESTS, headersFor), warm);

    const label = `${TEAMS} team${TEAMS === 1 ? '' : 's'}, ${keys.length} keys`;
    report(
      `ingest throughput (${REQUESTS.toLocaleString('en-US')} requests after ${WARMUP.toLocaleString('en-US')} warm-up, ${CONNECTIONS} keep-alive connections, ${BODY.length}-byte JSON body, client in this process; budget ≥ 0.50× baseline)`,
      [
        {
          name: 'baseline: bare Fastify, one POST route parsing the body, 201 + small JSON',
          perSecond: baseline.perSecond,
          baseline: true,
        },
        {
          name: `full ingest path: ingress on embedded SQLite (${label}, log ${LOG_LEVEL})`,
          perSecond: full.perSecond,
        },
      ],
    );
    const line = (name: string, r: LoadResult) =>
      console.log(
        `  ${name.padEnd(40)} ${r.p50.toFixed(2).padStart(8)} ${r.p99.toFixed(2).padStart(8)} ${r.max.toFixed(2).padStart(8)}   ${describeOther(r.other)}`,
      );
    console.log(
      `  ${'request latency (ms)'.padEnd(40)} ${'p50'.padStart(8)} ${'p99'.padStart(8)} ${'max'.padStart(8)}   non-201 answers (warm-up included)`,
    );
    line('bare Fastify', baseline);
    line('full ingest path', full);
  } finally {
    await backends.close();
  }
};

// ---- 2. POST → visible in history ---------------------------------------------------------------

const latency = async () => {
  const backends = await embedded();
  const { eventStore, eventLog, readModels, logger } = backends;
  const processor = await startProcessor({
    eventStore,
    eventLog,
    ...localSteps(),
    logger,
    processingTimeoutMs: 60 * 60_000,
    topics: TOPICS,
  });
  const projections = startProjections({ eventStore, eventLog, readModels, topics: TOPICS, logger });
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const keys = await keysFor(backends.ingress, 1, LATENCY_WARMUP + LATENCY_CALLS);
    const accepted = new Float64Array(LATENCY_CALLS);
    const visible = new Float64Array(LATENCY_CALLS);
    const failures: string[] = [];
    for (let n = 0; n < LATENCY_WARMUP + LATENCY_CALLS; n++) {
      const { teamId, key } = keys[n % keys.length]!;
      const sent = performance.now();
      const answer = await post(agent, backends.port, INGEST_PATH, { 'x-api-key': key });
      const answered = performance.now();
      if (answer.status !== 201) throw new Error(`submission ${n} answered ${answer.status}: ${answer.body}`);
      const { callId } = JSON.parse(answer.body) as { callId: string };
      const deadline = sent + 30_000;
      for (;;) {
        const row = await readModels.callHistory.get(teamId, callId);
        if (row?.status === 'completed') break;
        if (row?.status === 'failed') {
          failures.push(`${callId}: ${row.statusReason}`);
          break;
        }
        if (performance.now() > deadline)
          throw new Error(`call ${callId} not completed in the history after 30 s (${row?.status ?? 'no row'})`);
        await sleep(POLL_MS);
      }
      if (n >= LATENCY_WARMUP) {
        accepted[n - LATENCY_WARMUP] = answered - sent;
        visible[n - LATENCY_WARMUP] = performance.now() - sent;
      }
    }
    accepted.sort();
    visible.sort();
    console.log(
      `\nPOST → visible in history (${LATENCY_CALLS} transcript-only calls one at a time after ${LATENCY_WARMUP} warm-up, built-in analyser, ingress + processor + projections on embedded SQLite, poll every ${POLL_MS} ms; budget p50 ≤ 50, p99 ≤ 150)`,
    );
    console.log(`  ${'ms'.padEnd(40)} ${'p50'.padStart(8)} ${'p99'.padStart(8)} ${'max'.padStart(8)}`);
    for (const [name, sorted] of [
      ['POST → 201', accepted],
      ['POST → completed in callHistory.get', visible],
    ] as const) {
      console.log(
        `  ${name.padEnd(40)} ${percentile(sorted, 0.5).toFixed(2).padStart(8)} ${percentile(sorted, 0.99).toFixed(2).padStart(8)} ${sorted[sorted.length - 1]!.toFixed(2).padStart(8)}`,
      );
    }
    if (failures.length > 0) console.log(`  ${failures.length} calls failed: ${failures.slice(0, 3).join('; ')}`);
  } finally {
    agent.destroy();
    await processor.stop();
    await projections.stop();
    await backends.close();
  }
};

if (ONLY.has('throughput')) await throughput();
if (ONLY.has('latency')) await latency();
console.log('(embedded backends only: this bench does not use DATABASE_URL or KAFKA_BROKERS)');
