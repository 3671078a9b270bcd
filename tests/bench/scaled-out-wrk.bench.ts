/**
 * Target 4, Kafka + PostgreSQL (+ Redis), each part its own compiled process as deployed (built
 * first with `npm run build`), load from `wrk` (a C load generator in its own process). A bench,
 * not a test: prints, asserts nothing.
 *
 * 1. Ingress alone (`node dist/services/ingress/main.js`): alternating rounds of `--seconds` of
 *    `wrk -t1 -c<connections>` against it and against a bare Fastify 5 route (from our
 *    node_modules, parsing the same ~1 KB transcript-only body and answering 201); its 201s/s over
 *    the bare route's req/s per round, the median against the 0.3× goal. A 201 is sent only after
 *    the CallSubmitted record is acknowledged by Kafka (`acks=all`). No processor runs yet, so
 *    the accepted calls wait on the topic: the backlog of step 2 (topped up with more wrk rounds to
 *    `--backlog` calls when the rounds accepted fewer).
 * 2. Processors on that backlog, with one projections process
 *    (`dist/services/projections/main.js`) running: in each of `--process-rounds` rounds, one
 *    processor process (`dist/services/processor/main.js`) for `--process-seconds`, stopped, then
 *    two for as long; completed calls/s from the processors' `calls_finished_total` (their
 *    /metrics on HEALTH_PORT), measured once every process has finished a call (the consumer
 *    group has settled), the median of the rounds and the two/one ratio per round. When the
 *    backlog runs out first, the rate is taken up to then and the run says so.
 *
 * Each run uses a database of its own (created on the server of `--database-url`, dropped at the
 * end) and a topic prefix of its own (its topics deleted at the end). Needs Kafka and PostgreSQL:
 * `--kafka` / `--database-url`, or KAFKA_BROKERS / DATABASE_URL; Redis (`--redis-url` or
 * REDIS_URL) is used when given. Says which is missing or does not answer and exits 2.
 * Needs the Debian package `wrk` on PATH (`apt-get install -y wrk`).
 *
 *   npx tsx tests/bench/scaled-out-wrk.bench.ts [--kafka 127.0.0.1:9092] [--database-url postgres://postgres@127.0.0.1:5432/postgres] [--redis-url redis://127.0.0.1:6379] [--rounds 3] [--seconds 10] [--connections 50] [--teams 40] [--keys 12000] [--partitions 6] [--backlog 20000] [--process-seconds 20] [--process-rounds 3]
 *
 * Each API key may make 30 ingest requests a minute: `--keys` × 30 must exceed the calls of any
 * minute (non-201 answers are printed; a 429 there means: more keys).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { tempDir } from '../support/temp-dir.ts';
import { report } from './report.ts';
import { recordTarget } from './targets.ts';
import {
  backendCores,
  bareSanity,
  coresBetween,
  cpuSeconds,
  finishedCalls,
  freePort,
  issueKeys,
  machineCpu,
  median,
  requireWrk,
  restCores,
  root,
  rssMb,
  runWrk,
  sleep,
  startBare,
  waitFor,
  writeScript,
} from './wrk.ts';

const { values } = parseArgs({
  options: {
    kafka: { type: 'string' },
    'database-url': { type: 'string' },
    'redis-url': { type: 'string' },
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    teams: { type: 'string', default: '40' },
    keys: { type: 'string', default: '12000' },
    partitions: { type: 'string', default: '6' },
    backlog: { type: 'string', default: '20000' },
    'process-seconds': { type: 'string', default: '20' },
    'process-rounds': { type: 'string', default: '3' },
  },
});
const ROUNDS = Number(values.rounds);
const SECONDS = Number(values.seconds);
const CONNECTIONS = Number(values.connections);
const TEAMS = Number(values.teams);
const KEYS = Number(values.keys);
const PARTITIONS = Number(values.partitions);
const BACKLOG = Number(values.backlog);
const PROCESS_SECONDS = Number(values['process-seconds']);
const PROCESS_ROUNDS = Number(values['process-rounds']);

requireWrk();

const KAFKA = values.kafka ?? process.env.KAFKA_BROKERS;
const DATABASE = values['database-url'] ?? process.env.DATABASE_URL;
const REDIS = values['redis-url'] ?? process.env.REDIS_URL;
if (!KAFKA || !DATABASE) {
  console.error(
    `the scaled-out bench needs Kafka and PostgreSQL: ${!KAFKA ? 'no Kafka (--kafka host:port or KAFKA_BROKERS)' : ''}${!KAFKA && !DATABASE ? ', ' : ''}${!DATABASE ? 'no PostgreSQL (--database-url or DATABASE_URL)' : ''}`,
  );
  process.exit(2);
}

const withTimeout = <T>(what: string, ms: number, work: Promise<T>): Promise<T> =>
  Promise.race([
    work,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)),
  ]);

/** Each server answers, or the bench says which does not and exits 2. */
const unreachable: string[] = [];
const kafka = new Kafka({
  clientId: 'scaled-out-bench',
  brokers: KAFKA.split(','),
  logLevel: logLevel.NOTHING,
  retry: { retries: 1 },
});
const kafkaAdmin = kafka.admin();
await withTimeout(
  'Kafka',
  15_000,
  kafkaAdmin.connect().then(() => kafkaAdmin.describeCluster()),
).catch((error: unknown) => unreachable.push(`Kafka at ${KAFKA} does not answer (${(error as Error).message})`));
const server = new pg.Client({ connectionString: DATABASE, connectionTimeoutMillis: 5_000 });
await withTimeout(
  'PostgreSQL',
  10_000,
  server.connect().then(() => server.query('SELECT 1')),
).catch((error: unknown) =>
  unreachable.push(`PostgreSQL at ${new URL(DATABASE).host} does not answer (${(error as Error).message})`),
);
if (REDIS) {
  const redis = new Redis(REDIS, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 5_000 });
  redis.on('error', () => undefined);
  await withTimeout(
    'Redis',
    10_000,
    redis.connect().then(() => redis.ping()),
  ).catch((error: unknown) => unreachable.push(`Redis at ${REDIS} does not answer (${(error as Error).message})`));
  redis.disconnect();
}
if (unreachable.length > 0) {
  console.error(`the scaled-out bench cannot run: ${unreachable.join('; ')}`);
  await kafkaAdmin.disconnect().catch(() => undefined);
  await server.end().catch(() => undefined);
  process.exit(2);
}

const RUN = randomUUID().replaceAll('-', '').slice(0, 10);
const databaseName = `bench_${RUN}`;
const TOPIC_PREFIX = `bench${RUN}.`;
await server.query(`CREATE DATABASE ${databaseName}`);
const databaseUrl = (() => {
  const url = new URL(DATABASE);
  url.pathname = `/${databaseName}`;
  return url.toString();
})();

const dir = tempDir('scaled-out-wrk-bench-');
const ADMIN_TOKEN = 'scaled-out-wrk-bench-admin-token-0123456789abcdef';
const children: ChildProcess[] = [];
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
  dir.remove();
});

/** Stops every process, drops the run's database and deletes its topics. */
const cleanup = async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  await Promise.all(
    children
      .filter((child) => child.exitCode === null && child.signalCode === null)
      .map((child) => withTimeout('exit', 30_000, once(child, 'exit')).catch(() => child.kill('SIGKILL'))),
  );
  await server.query(`DROP DATABASE IF EXISTS ${databaseName} WITH (FORCE)`).catch((error: unknown) => {
    console.error(`could not drop database ${databaseName}: ${(error as Error).message}`);
  });
  await server.end().catch(() => undefined);
  const topics = (await kafkaAdmin.listTopics().catch(() => [] as string[])).filter((t) => t.startsWith(TOPIC_PREFIX));
  if (topics.length > 0)
    await kafkaAdmin.deleteTopics({ topics }).catch((error: unknown) => {
      console.error(`could not delete topics ${topics.join(', ')}: ${(error as Error).message}`);
    });
  await kafkaAdmin.disconnect().catch(() => undefined);
};
process.on('SIGINT', () => void cleanup().finally(() => process.exit(130)));

type Role = 'ingress' | 'processor' | 'projections';
const ENTRY: Record<Role, string> = {
  ingress: 'dist/services/ingress/main.js',
  processor: 'dist/services/processor/main.js',
  projections: 'dist/services/projections/main.js',
};
interface Started {
  url: string;
  child: ChildProcess;
}

/** One process of the stack, answering /readyz (the ingress on PORT, the others on HEALTH_PORT). */
const start = async (role: Role, n = 0): Promise<Started> => {
  const port = await freePort();
  const child = spawn(process.execPath, [ENTRY[role]], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      KAFKA_BROKERS: KAFKA,
      REDIS_URL: REDIS ?? '',
      KURRENTDB_URL: '',
      DATABASE_SCHEMA: '',
      TOPIC_PREFIX,
      TOPIC_PARTITIONS: String(PARTITIONS),
      ADMIN_TOKEN,
      API_KEY_SECRET: 'scaled-out-wrk-bench-key-secret-0123456789abcdef',
      DATA_KEY_SECRET: 'scaled-out-wrk-bench-data-key-secret-0123456789abcdef',
      DATA_DIR: join(dir.path, `${role}-${n}`),
      PORT: String(port),
      HEALTH_PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${url}/readyz`, `the ${role} process`, 120_000, child);
  return { url, child };
};

const stop = async ({ child }: Started) => {
  child.kill('SIGTERM');
  if (child.exitCode === null && child.signalCode === null) await once(child, 'exit');
};

const command = `npx tsx tests/bench/scaled-out-wrk.bench.ts --rounds ${ROUNDS} --seconds ${SECONDS} --process-seconds ${PROCESS_SECONDS} --process-rounds ${PROCESS_ROUNDS} (KAFKA_BROKERS, DATABASE_URL, REDIS_URL set)`;

try {
  console.log(
    `building (npm run build), then on Kafka ${KAFKA}, PostgreSQL ${new URL(DATABASE).host} (database ${databaseName}), ${REDIS ? `Redis ${REDIS}` : 'no Redis'}, topic prefix ${TOPIC_PREFIX}, ${PARTITIONS} partitions: ` +
      `${ROUNDS} alternating rounds of ${SECONDS} s, wrk -t1 -c${CONNECTIONS}, ingress alone vs the bare route; then one and two processors for ${PROCESS_SECONDS} s each`,
  );
  const built = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
  if (built.status !== 0) throw new Error('npm run build failed');

  // 1. Ingress alone against the bare route.
  const bare = await startBare(children);
  const ingress = await start('ingress');
  const issuedAt = performance.now();
  const { keys } = await issueKeys(ingress.url, ADMIN_TOKEN, TEAMS, KEYS);
  console.log(
    `\n[ingress] ${keys.length} keys over ${TEAMS} teams issued in ${((performance.now() - issuedAt) / 1000).toFixed(1)} s; ingress RSS at rest ${rssMb(ingress.child.pid!)} MB`,
  );
  const script = writeScript(join(dir.path, 'ingest.lua'), keys);
  const rows: Parameters<typeof report>[1] = [];
  const ratios: number[] = [];
  const rates: number[] = [];
  const bareRates: number[] = [];
  const cpuRatios: number[] = [];
  let accepted = 0;
  for (let round = 1; round <= ROUNDS; round++) {
    const bareCpu = cpuSeconds(bare.child.pid!);
    const base = runWrk(bare.url, script, CONNECTIONS, SECONDS);
    const bareCpuPer = ((cpuSeconds(bare.child.pid!) - bareCpu) * 1000) / Math.max(1, base.requests);
    const ingressCpu = cpuSeconds(ingress.child.pid!);
    const machineBefore = machineCpu();
    const ours = runWrk(ingress.url, script, CONNECTIONS, SECONDS);
    const used = coresBetween(machineBefore, machineCpu(), SECONDS);
    const ingressSeconds = cpuSeconds(ingress.child.pid!) - ingressCpu;
    const ourCpuPer = (ingressSeconds * 1000) / Math.max(1, ours.requests);
    const rate = (ours.requests - ours.non2xx) / SECONDS;
    accepted += ours.requests - ours.non2xx;
    rows.push({
      name: `round ${round}: bare Fastify route (p50 ${base.p50}, p99 ${base.p99})`,
      perSecond: base.perSecond,
      baseline: true,
    });
    rows.push({
      name: `round ${round}: ingress alone, 201s (p50 ${ours.p50}, p99 ${ours.p99}, non-201 ${ours.non2xx}, socket errors ${ours.errors})`,
      perSecond: rate,
    });
    ratios.push(rate / base.perSecond);
    rates.push(rate);
    bareRates.push(base.perSecond);
    cpuRatios.push(bareCpuPer / ourCpuPer);
    console.log(
      `round ${round}: CPU per request: bare route ${bareCpuPer.toFixed(3)} ms, ingress ${ourCpuPer.toFixed(3)} ms (${(bareCpuPer / ourCpuPer).toFixed(3)}×); ingress RSS ${rssMb(ingress.child.pid!)} MB; bare route ${Math.round(base.perSecond)} req/s${bareSanity(base.perSecond)}`,
    );
    // Whether the machine's cores or the ingress's one thread was the limit, and who used the rest.
    console.log(
      `round ${round}: during the ingress's load ${used.machine.toFixed(2)} of ${used.cores} cores busy: the ingress ${(ingressSeconds / SECONDS).toFixed(2)}, ${backendCores(used).join(', ')}, the rest (wrk, the kernel, other processes) ${restCores(used, ingressSeconds / SECONDS).toFixed(2)}`,
    );
  }
  report(
    `[ingress] Kafka + PostgreSQL ingress alone, wrk -t1 -c${CONNECTIONS} (ratio: ingress / bare route of the same round)`,
    rows,
  );
  console.log(
    `\nmedian ratio ${median(ratios).toFixed(3)}× over ${ROUNDS} rounds (${ratios.map((r) => `${r.toFixed(3)}×`).join(', ')})`,
  );
  recordTarget({
    target: '4 Kafka + PostgreSQL: one ingress process alone',
    figure: `${Math.round(median(rates)).toLocaleString('en-US')} 201s/s (median of ${ROUNDS}; CPU per request ${(1 / median(cpuRatios)).toFixed(1)}× the bare route's)`,
    baseline: `bare Fastify route ${Math.round(median(bareRates)).toLocaleString('en-US')} req/s`,
    ratio: median(ratios),
    goal: '≥ 0.3×',
    met: median(ratios) >= 0.3,
    command,
  });

  // The backlog: what the rounds accepted, topped up to --backlog.
  while (accepted < BACKLOG) {
    const more = runWrk(ingress.url, script, CONNECTIONS, SECONDS);
    accepted += more.requests - more.non2xx;
    if (more.requests - more.non2xx === 0) throw new Error(`the ingress accepts nothing (${more.non2xx} non-201)`);
  }
  console.log(
    `\n[processors] backlog: ${accepted.toLocaleString('en-US')} calls accepted (at least; wrk counts only the answers it read)`,
  );
  await stop(ingress);

  // 2. Processors on the backlog, with one projections process.
  const projections = await start('projections');
  let finishedBefore = 0;
  const measureProcessors = async (count: number) => {
    const startedAt = performance.now();
    const processors = await Promise.all(Array.from({ length: count }, (_, i) => start('processor', i)));
    const finished = async () => {
      let sum = 0;
      for (const p of processors) sum += await finishedCalls(p.url, ADMIN_TOKEN);
      return sum;
    };
    const each = () => Promise.all(processors.map((p) => finishedCalls(p.url, ADMIN_TOKEN)));
    // Settled: every process has finished calls (each has its partitions), then a second more.
    const until = performance.now() + 120_000;
    while ((await each()).some((n) => n === 0)) {
      if (performance.now() > until)
        throw new Error(`not every one of ${count} processors finished a call within 120 s`);
      await sleep(250);
    }
    await sleep(1000);
    const settledAfter = (performance.now() - startedAt) / 1000;
    const cpu = processors.map((p) => cpuSeconds(p.child.pid!));
    const projectionsCpu = cpuSeconds(projections.child.pid!);
    const machineBefore = machineCpu();
    const from = { at: performance.now(), finished: await finished() };
    let last = from;
    let ranOut = false;
    while (performance.now() - from.at < PROCESS_SECONDS * 1000) {
      await sleep(1000);
      const now = { at: performance.now(), finished: await finished() };
      if (finishedBefore + now.finished >= accepted && now.finished === last.finished) {
        ranOut = true;
        break;
      }
      if (now.finished !== last.finished) last = now;
    }
    const perSecond = (last.finished - from.finished) / ((last.at - from.at) / 1000);
    const windowSeconds = (performance.now() - from.at) / 1000;
    const used = coresBetween(machineBefore, machineCpu(), windowSeconds);
    const processorSeconds = processors.map((p, i) => cpuSeconds(p.child.pid!) - cpu[i]!);
    const processorCores = processorSeconds.map((seconds) => seconds / windowSeconds);
    const projectionsCores = (cpuSeconds(projections.child.pid!) - projectionsCpu) / windowSeconds;
    const cpuPerCall =
      (processorSeconds.reduce((sum, seconds) => sum + seconds, 0) * 1000) / Math.max(1, last.finished - from.finished);
    const rss = processors.map((p) => rssMb(p.child.pid!));
    const total = await finished();
    await Promise.all(processors.map(stop));
    finishedBefore += total;
    console.log(
      `[processors] ${count} processor process${count > 1 ? 'es' : ''}: settled ${settledAfter.toFixed(1)} s after start; ${(last.finished - from.finished).toLocaleString('en-US')} calls finished in ${((last.at - from.at) / 1000).toFixed(1)} s: ${Math.round(perSecond).toLocaleString('en-US')} calls/s` +
        ` (CPU per call ${cpuPerCall.toFixed(2)} ms across them; RSS ${rss.join(', ')} MB)${ranOut ? '; the backlog ran out before the window ended' : ''}; ${finishedBefore.toLocaleString('en-US')} of the backlog finished so far`,
    );
    // Whether the machine's cores were the limit, and who used them.
    console.log(
      `[processors] ${count} processor process${count > 1 ? 'es' : ''}: ${used.machine.toFixed(2)} of ${used.cores} cores busy: the processor${count > 1 ? 's' : ''} ${processorCores.map((c) => c.toFixed(2)).join(' + ')}, the projections ${projectionsCores.toFixed(2)}, ${backendCores(used).join(', ')}, the rest ${restCores(
        used,
        processorCores.reduce((sum, c) => sum + c, 0) + projectionsCores,
      ).toFixed(2)}`,
    );
    return { perSecond, ranOut, seconds: (last.at - from.at) / 1000 };
  };
  const ones: Awaited<ReturnType<typeof measureProcessors>>[] = [];
  const twos: typeof ones = [];
  for (let round = 1; round <= PROCESS_ROUNDS; round++) {
    console.log(`[processors] round ${round}`);
    ones.push(await measureProcessors(1));
    twos.push(await measureProcessors(2));
  }
  const one = median(ones.map((r) => r.perSecond));
  const two = median(twos.map((r) => r.perSecond));
  const ranOut = [...ones, ...twos].some((r) => r.ranOut);
  console.log(
    `[processors] completed calls/s, one process: ${ones.map((r) => Math.round(r.perSecond)).join(', ')}; two: ${twos.map((r) => Math.round(r.perSecond)).join(', ')}; two / one per round: ${twos.map((r, i) => `${(r.perSecond / ones[i]!.perSecond).toFixed(2)}×`).join(', ')}; projections RSS ${rssMb(projections.child.pid!)} MB`,
  );
  const store = new pg.Client({ connectionString: databaseUrl });
  await store.connect();
  const { rows: stored } = await store.query<{ type: string; n: number }>(
    "SELECT type, count(*)::int AS n FROM events WHERE type IN ('CallSubmitted', 'CallCompleted', 'CallFailed') GROUP BY type",
  );
  await store.end();
  console.log(
    `[processors] in the event store at the end: ${stored.map((row) => `${row.type} ${row.n.toLocaleString('en-US')}`).join(', ')}`,
  );
  await stop(projections);
  recordTarget({
    target: '4 Kafka + PostgreSQL: one processor process (one projections process beside it)',
    figure: `${Math.round(one).toLocaleString('en-US')} completed calls/s (median of ${PROCESS_ROUNDS} windows of ${PROCESS_SECONDS} s)${ranOut ? ' (the backlog ran out)' : ''}`,
    baseline: `a backlog of ${accepted.toLocaleString('en-US')} calls submitted first`,
    goal: 'report',
    command,
  });
  recordTarget({
    target: '4 Kafka + PostgreSQL: two processor processes (one projections process beside them)',
    figure: `${Math.round(two).toLocaleString('en-US')} completed calls/s (median of ${PROCESS_ROUNDS} windows of ${PROCESS_SECONDS} s, alternating with one process)`,
    baseline: `one processor process ${Math.round(one).toLocaleString('en-US')} calls/s`,
    ratio: two / one,
    goal: 'report',
    command,
  });
} finally {
  await cleanup();
}
