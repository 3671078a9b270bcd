/**
 * The ingest floor: what the parts of an accepted call cost by themselves, each measured by `wrk`
 * against a route that does only those parts (floor-route.ts), in alternating rounds beside the bare
 * route. It answers "how close to the bare route could the ingest path get on this machine": the
 * rung that adds validation, a durable record and sealing is an upper bound for any ingest path
 * that must do them, before authentication, rate limits and capacity (what the service adds; the
 * ingest bench measures the service itself). A bench, not a test: prints, asserts nothing.
 *
 * Rungs (see floor-route.ts): bare, normalised, minimal (normalised + the least a durable write
 * needs, without the project's adapters), durable, sealed; kafka (normalised + a publish to
 * Kafka, acks=all) when KAFKA_BROKERS is set; kafka-sealed (+ sealing, the data keys in PostgreSQL)
 * and kafka-reserved (+ an append to a team's stream on PostgreSQL: every durable write of target
 * 4's ingress) when DATABASE_URL is set too. Each runs in its own
 * process (`node --import tsx`) on a fresh embedded database; every 201 of `minimal`, `durable` and `sealed` is
 * on disk (its WAL synced) before it is sent. Also printed: the CPU each rung's process used per
 * request during its load, from /proc, which does not depend on how busy the machine was.
 *
 * Needs the Debian package `wrk` on PATH (`apt-get install -y wrk`).
 *
 *   npx tsx tests/bench/floor-wrk.bench.ts [--rounds 3] [--seconds 8] [--connections 50] [--rungs bare,normalised,minimal,durable,sealed,kafka,kafka-sealed,kafka-reserved]
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { tempDir } from '../support/temp-dir.ts';
import { report } from './report.ts';
import { recordTarget } from './targets.ts';
import { KAFKA_RUNGS, POSTGRES_RUNGS, RUNGS, type Rung } from './floor-route.ts';
import {
  coresBetween,
  type CoresUsed,
  cpuSeconds,
  freePort,
  machineCpu,
  median,
  requireWrk,
  restCores,
  root,
  runWrk,
  waitForListening,
  writeScript,
} from './wrk.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '8' },
    connections: { type: 'string', default: '50' },
    rungs: { type: 'string' },
  },
});
const ROUNDS = Number(values.rounds);
const SECONDS = Number(values.seconds);
const CONNECTIONS = Number(values.connections);
// The bare route is always measured: every ratio is to it. By default every rung, Kafka's when
// KAFKA_BROKERS names a broker.
const KAFKA_BROKERS = process.env.KAFKA_BROKERS ?? '';
const DATABASE_URL = process.env.DATABASE_URL ?? '';
const asked =
  values.rungs?.split(',') ??
  RUNGS.filter(
    (rung) =>
      (!KAFKA_RUNGS.includes(rung) || KAFKA_BROKERS !== '') && (!POSTGRES_RUNGS.includes(rung) || DATABASE_URL !== ''),
  );
const MEASURED = RUNGS.filter((rung) => rung === 'bare' || asked.includes(rung));
if (MEASURED.some((rung) => KAFKA_RUNGS.includes(rung)) && KAFKA_BROKERS === '') {
  console.error('the kafka rungs need a broker: set KAFKA_BROKERS (docker/kafka.sh start prints it)');
  process.exit(2);
}
if (MEASURED.some((rung) => POSTGRES_RUNGS.includes(rung)) && DATABASE_URL === '') {
  console.error(`the ${POSTGRES_RUNGS.join(' and ')} rungs need PostgreSQL: set DATABASE_URL`);
  process.exit(2);
}

requireWrk();
const dir = tempDir('floor-wrk-bench-');
const children: ChildProcess[] = [];
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
  dir.remove();
});

const startRung = async (rung: Rung): Promise<{ url: string; pid: number }> => {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'tests/bench/floor-route.ts')], {
    cwd: root,
    env: { ...process.env, PORT: String(port), RUNG: rung, DATA_DIR: join(dir.path, rung) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  const url = `http://127.0.0.1:${port}`;
  await waitForListening(url, `the ${rung} route`, child);
  return { url, pid: child.pid! };
};

// The routes take no API key; the script sends one all the same, as the ingest bench's does.
const script = writeScript(join(dir.path, 'floor.lua'), ['floor-key']);
console.log(
  `ingest floor: ${ROUNDS} alternating rounds of ${SECONDS} s per rung (${MEASURED.join(', ')}), wrk -t1 -c${CONNECTIONS}`,
);
const servers = new Map<Rung, { url: string; pid: number }>();
for (const rung of MEASURED) servers.set(rung, await startRung(rung));
// Warm each route up (JIT, the first WAL pages) before the measured rounds.
for (const rung of MEASURED) runWrk(servers.get(rung)!.url, script, CONNECTIONS, 2);

const rates = new Map<Rung, number[]>(MEASURED.map((rung) => [rung, []]));
const cpu = new Map<Rung, number[]>(MEASURED.map((rung) => [rung, []]));
/** Per rung and round: the cores the machine, the rung's process and each backend used during the load. */
const cores = new Map<Rung, CoresUsed[]>(MEASURED.map((rung) => [rung, []]));
const routeCores = new Map<Rung, number[]>(MEASURED.map((rung) => [rung, []]));
const rows: Parameters<typeof report>[1] = [];
for (let round = 1; round <= ROUNDS; round++) {
  for (const rung of MEASURED) {
    const { url, pid } = servers.get(rung)!;
    const before = cpuSeconds(pid);
    const machineBefore = machineCpu();
    const result = runWrk(url, script, CONNECTIONS, SECONDS);
    cores.get(rung)!.push(coresBetween(machineBefore, machineCpu(), SECONDS));
    const ok = (result.requests - result.non2xx) / SECONDS;
    const routeSeconds = cpuSeconds(pid) - before;
    routeCores.get(rung)!.push(routeSeconds / SECONDS);
    const cpuPerRequest = (routeSeconds * 1000) / Math.max(1, result.requests);
    rates.get(rung)!.push(ok);
    cpu.get(rung)!.push(cpuPerRequest);
    rows.push({
      name: `round ${round}: ${rung} (p50 ${result.p50}, p99 ${result.p99}, non-201 ${result.non2xx}, CPU/request ${cpuPerRequest.toFixed(3)} ms)`,
      perSecond: ok,
      baseline: rung === 'bare',
    });
  }
}
report(`ingest floor, wrk -t1 -c${CONNECTIONS} (ratio: rung / bare route of the same round)`, rows);
const bareCpu = median(cpu.get('bare')!);
console.log('\nmedians over the rounds:');
for (const rung of MEASURED) {
  const perRound = rates.get(rung)!.map((rate, i) => rate / rates.get('bare')![i]!);
  console.log(
    `  ${rung.padEnd(14)} ${Math.round(median(rates.get(rung)!))
      .toLocaleString('en-US')
      .padStart(
        7,
      )} 201s/s  ${median(perRound).toFixed(3)}× the bare route  CPU/request ${median(cpu.get(rung)!).toFixed(3)} ms (${(bareCpu / median(cpu.get(rung)!)).toFixed(3)}× the bare route's)`,
  );
}

// Whether the machine's cores were the limit, and who used them: a rung whose load keeps every core
// busy cannot go faster here by any change to the route alone.
console.log('\nwhere the cores went during the load (medians of the rounds; busy time from /proc):');
for (const rung of MEASURED) {
  const rounds = cores.get(rung)!;
  const backends = Object.keys(rounds[0]!.byBackend).filter((name) => rounds.some((r) => r.byBackend[name]! >= 0.005));
  const parts = [
    `the route ${median(routeCores.get(rung)!).toFixed(2)}`,
    ...backends.map((name) => `${name} ${median(rounds.map((r) => r.byBackend[name]!)).toFixed(2)}`),
    `the rest (wrk, the kernel, other processes) ${median(rounds.map((r, i) => restCores(r, routeCores.get(rung)![i]!))).toFixed(2)}`,
  ];
  console.log(
    `  ${rung.padEnd(14)} ${median(rounds.map((r) => r.machine)).toFixed(2)} of ${rounds[0]!.cores} cores busy: ${parts.join(', ')}`,
  );
}
for (const rung of MEASURED.filter((rung) => KAFKA_RUNGS.includes(rung))) {
  // What the Kafka broker and PostgreSQL spent per accepted call: at 0.3× the bare route (target 4),
  // at these costs, the backends alone would need this many cores, before the route's own.
  const rounds = cores.get(rung)!;
  const perCall = (name: string) =>
    median(rounds.map((r, i) => r.byBackend[name]! / Math.max(1, rates.get(rung)![i]!))) * 1000;
  const broker = perCall('Kafka broker');
  const postgres = perCall('PostgreSQL');
  const goalRate = 0.3 * median(rates.get('bare')!);
  console.log(
    `  ${rung}: the broker ${broker.toFixed(3)} ms and PostgreSQL ${postgres.toFixed(3)} ms of CPU per accepted call; at 0.3× the bare route (${Math.round(goalRate).toLocaleString('en-US')}/s) they alone would need ${(((broker + postgres) * goalRate) / 1000).toFixed(2)} cores and the route ${((median(cpu.get(rung)!) * goalRate) / 1000).toFixed(2)} more`,
  );
}

// What bounds targets 1 and 4 from above: no ingest path that validates, records durably and seals
// can accept more than these routes do (the service also authenticates, limits and reserves).
for (const rung of MEASURED.filter((rung) => rung !== 'bare')) {
  const perRound = rates.get(rung)!.map((rate, i) => rate / rates.get('bare')![i]!);
  recordTarget({
    target: KAFKA_RUNGS.includes(rung)
      ? `4 Kafka + PostgreSQL ingress, its upper bound: the ingest floor's ${rung} rung (not a target; for comparison)`
      : `1 accept rate, its upper bound: the ingest floor's ${rung} rung (not a target; for comparison)`,
    figure: `${Math.round(median(rates.get(rung)!)).toLocaleString('en-US')} 201s/s (median of ${ROUNDS})`,
    baseline: `bare Fastify route ${Math.round(median(rates.get('bare')!)).toLocaleString('en-US')} req/s`,
    ratio: median(perRound),
    goal: '—',
    command: `npx tsx tests/bench/floor-wrk.bench.ts --rounds ${ROUNDS} --seconds ${SECONDS}`,
  });
}

// Each rung closes what it opened on SIGTERM (its Kafka topic's producer, the PostgreSQL schema of
// its own, which it drops); the exit handler's SIGKILL is for a rung that does not end in time.
await Promise.all(
  children
    .filter((child) => child.exitCode === null)
    .map(
      (child) =>
        new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 10_000);
          child.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          child.kill('SIGTERM');
        }),
    ),
);
