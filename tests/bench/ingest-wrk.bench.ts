/**
 * Ingest measured by `wrk`, a C load generator in its own process, so the client is never what is
 * measured (a Node.js client in the bench's process caps a bare Fastify route near 3,300 req/s
 * where wrk measures about 20,000 on a 2-core machine). A bench, not a test: prints, asserts nothing.
 *
 * Two servers, each in its own process, measured in alternating rounds of `--seconds`:
 * - baseline: a bare Fastify 5 route (from our node_modules) that parses the same JSON body and
 *   answers 201 with a small JSON;
 * - the service as `npm start` runs it (`node dist/services/main.js`, the compiled all-in-one
 *   process on a fresh embedded database), or `--mode ingress` (`dist/services/ingress/main.js`
 *   alone). Built first with `npm run build`.
 * The body is a ~1 KB transcript-only submission. Each API key may make 30 requests a minute, so
 * `--teams` teams get `--keys` keys in all and the wrk script takes them round-robin, so the per-key
 * limit is not what is measured while keys × 30 exceeds the requests of a minute; the service's
 * rate counts 201s only, and non-201 answers are shown (a 429 there means: more keys). Every 201 is durable:
 * the embedded event log commits (fsync) before the answer.
 *
 * Also reported: p50/p99 latency of each round (wrk --latency), the service's RSS at rest
 * (`--rest-seconds`, 30 by default, after the keys are issued: V8 gives memory back once the
 * allocation rate has been low a while) and after the load, and, for the all-in-one process, the end-to-end rate: calls finished
 * (`calls_finished_total` on /metrics) per second from the start of the round until the backlog
 * the round left has drained (`--drain-seconds` at most).
 *
 * Then, per mode, one more round at half the median accept rate (each connection paced by wrk's
 * `delay`), for its p50/p99. Each connection waits a random time before each request, with the
 * mean that gives that rate (`--think-time exponential`, the default): the connections send
 * independently, as separate integrators would. `--think-time fixed` waits the mean every time,
 * as runs before this option did: the connections then fall into step with the group commits (the
 * answers of one commit leave together, so the next requests arrive together) and every request
 * of a wave waits for the whole wave (writeScript in wrk.ts). `exponential,fixed` runs one paced
 * round of each, target 2's figure from the first. Each paced round also prints how busy the
 * service's main thread was. With `--mode all-in-one,ingress` (all-in-one first, the default) the
 * ingress alone runs one more paced round at the all-in-one process's half rate: what a 201 costs
 * at target 2's rate when no pipeline shares its thread. Records the performance targets' figures
 * it measures (targets.ts).
 *
 * Needs the Debian package `wrk` on PATH (`apt-get install -y wrk`).
 *
 *   npx tsx tests/bench/ingest-wrk.bench.ts [--rounds 3] [--seconds 10] [--connections 50] [--teams 40] [--keys 12000] [--mode all-in-one,ingress] [--drain-seconds 120] [--think-time exponential|fixed|exponential,fixed] [--cpu-prof DIR] [--baseline-root DIR] [--idempotency-keys] [--rest-seconds 30] [--paced-rates 20,50]
 *
 * `--baseline-root DIR` also runs the service built in DIR (another checkout, `npm run build` done
 * there, its node_modules linked) in the same alternating rounds: an earlier version measured
 * beside this one under the same load on the machine, with the ratio of the two.
 *
 * `--paced-rates 20,50,100` adds paced rounds at those rates (calls/s asked), after the one at half
 * the accept rate: POST → 201 p50/p99 and the main thread's CPU per 201 at lighter loads, where the
 * pipeline's followers read smaller batches and so cost more per call (docs/performance.md).
 *
 * `--idempotency-keys` adds a paced round at the same half rate in which every request carries an
 * Idempotency-Key of its own (a new call each): what a keyed request's 201 costs beside a plain one.
 *
 * `--cpu-prof DIR` runs the service under `node --cpu-prof` and writes its profile to DIR at the end
 * (read it with `npx tsx tests/bench/cpu-profile-summary.ts DIR/*.cpuprofile`).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { tempDir } from '../support/temp-dir.ts';
import { report } from './report.ts';
import { recordTarget } from './targets.ts';
import {
  BODY,
  coresBetween,
  cpuSeconds,
  finishedCalls as finishedOn,
  bucketsIn,
  histogramBetween,
  metricsText,
  freePort,
  issueKeys as issue,
  machineCpu,
  mainThreadCpuSeconds,
  median,
  parseThinkTimes,
  type ThinkTime,
  parseWrkMs,
  requireWrk,
  root,
  rssMb,
  runWrk as wrk,
  serviceNodeFlags,
  sleep,
  startBare,
  waitFor,
  writeScript as write,
} from './wrk.ts';

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '50' },
    teams: { type: 'string', default: '40' },
    keys: { type: 'string', default: '12000' },
    mode: { type: 'string', default: 'all-in-one,ingress' },
    'drain-seconds': { type: 'string', default: '120' },
    'think-time': { type: 'string', default: 'exponential' },
    'cpu-prof': { type: 'string' },
    'baseline-root': { type: 'string' },
    'idempotency-keys': { type: 'boolean', default: false },
    'rest-seconds': { type: 'string', default: '30' },
    'paced-rates': { type: 'string', default: '' },
  },
});
/** More paced rounds, at these rates (calls/s asked), after the one at half the accept rate: what a 201 and a call cost at lighter loads. */
const PACED_RATES = values['paced-rates']
  .split(',')
  .filter((rate) => rate.trim() !== '')
  .map((rate) => {
    const perSecond = Number(rate);
    if (!(perSecond > 0)) throw new Error(`--paced-rates takes calls per second above 0, comma-separated, not ${rate}`);
    return perSecond;
  });
/** One more paced round, at the same rate, in which every request has an Idempotency-Key of its own. */
const IDEMPOTENCY_KEYS = values['idempotency-keys'];
const ROUNDS = Number(values.rounds);
const SECONDS = Number(values.seconds);
const CONNECTIONS = Number(values.connections);
const TEAMS = Number(values.teams);
const KEYS = Number(values.keys);
type Mode = 'all-in-one' | 'ingress';
const MODES = values.mode.split(',') as Mode[];
const DRAIN_SECONDS = Number(values['drain-seconds']);
/** How long the service rests after the keys are issued before its RSS at rest is read: V8 gives memory back only once the allocation rate has been low for a while. */
const REST_SECONDS = Number(values['rest-seconds']);
/** The paced round's think times, one round each; the first gives target 2's figure. */
const THINK_TIMES = parseThinkTimes(values['think-time']);
const THINK_TIME = THINK_TIMES[0]!;
for (const mode of MODES)
  if (mode !== 'all-in-one' && mode !== 'ingress')
    throw new Error(`--mode is all-in-one, ingress or both (comma-separated), not ${mode}`);

requireWrk();

const dir = tempDir('ingest-wrk-bench-');
const ADMIN_TOKEN = 'ingest-wrk-bench-admin-token-0123456789abcdef';
const children: ChildProcess[] = [];
const cleanup = () => {
  for (const child of children) child.kill('SIGKILL');
  dir.remove();
};
process.on('exit', cleanup);

/** When the service was spawned: load windows are printed from it, to read a `--cpu-prof` profile by window. */
let serviceStartedAt = 0;
const sinceService = () => ((Date.now() - serviceStartedAt) / 1000).toFixed(1);

const startService = async (MODE: Mode, serviceRoot = root): Promise<{ url: string; child: ChildProcess }> => {
  const port = await freePort();
  const entry = MODE === 'all-in-one' ? 'dist/services/main.js' : 'dist/services/ingress/main.js';
  const profile = values['cpu-prof'] ? ['--cpu-prof', '--cpu-prof-dir', resolve(values['cpu-prof'])] : [];
  const child = spawn(process.execPath, [...serviceNodeFlags(), ...(serviceRoot === root ? profile : []), entry], {
    cwd: serviceRoot,
    env: {
      ...process.env,
      DATA_DIR: join(dir.path, `data-${MODE}${serviceRoot === root ? '' : '-baseline'}`),
      PORT: String(port),
      HOST: '127.0.0.1',
      ADMIN_TOKEN,
      API_KEY_SECRET: 'ingest-wrk-bench-key-secret-0123456789abcdef',
      LOG_LEVEL: 'warn',
      DATABASE_URL: '',
      KAFKA_BROKERS: '',
      REDIS_URL: '',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  serviceStartedAt = Date.now();
  children.push(child);
  const url = `http://127.0.0.1:${port}`;
  await waitFor(`${url}/readyz`, 'the service');
  return { url, child };
};

/** `--teams` teams with ample capacity and `--keys` keys spread over them, made through the admin API. */
const issueKeys = async (base: string): Promise<string[]> => (await issue(base, ADMIN_TOKEN, TEAMS, KEYS)).keys;

/** The load script; with `delayMs`, each connection waits that long on average before its next request (a bounded rate). */
const writeScript = (keys: string[], name = 'ingest.lua', delayMs?: number, thinkTime = THINK_TIME): string =>
  write(join(dir.path, name), keys, delayMs === undefined ? {} : { delayMs, thinkTime });

const runWrk = (url: string, script: string) => wrk(url, script, CONNECTIONS, SECONDS);

const finishedCalls = (base: string) => finishedOn(base, ADMIN_TOKEN);
/**
 * The WAL's fsyncs (the disk's time plus the loop's delay) and its restarts' holds of the writes so
 * far, from one read of /metrics.
 */
const walHistograms = async (base: string) => {
  const metrics = await metricsText(`${base}/metrics`, ADMIN_TOKEN);
  return {
    syncs: bucketsIn(metrics, 'sqlite_wal_sync_duration_seconds'),
    holds: bucketsIn(metrics, 'sqlite_wal_restart_hold_seconds'),
  };
};

/**
 * Calls finished per second from `startedAt` until the backlog has drained: the count has reached
 * `target` (what wrk counted, plus the requests still in flight when it stopped) and has not moved
 * for two seconds, or `--drain-seconds` passed.
 */
const drain = async (
  base: string,
  before: number,
  target: number,
  startedAt: number,
): Promise<{ finished: number; perSecond: number; drainedAfterSeconds: number }> => {
  const until = Date.now() + DRAIN_SECONDS * 1000;
  let finished = (await finishedCalls(base)) - before;
  let lastMove = Date.now();
  while (Date.now() < until && (finished < target || Date.now() - lastMove < 2000)) {
    await new Promise((r) => setTimeout(r, 250));
    const now = (await finishedCalls(base)) - before;
    if (now !== finished) lastMove = Date.now();
    finished = now;
  }
  const seconds = (lastMove - startedAt) / 1000;
  return { finished, perSecond: finished / seconds, drainedAfterSeconds: seconds };
};

console.log(
  `building (npm run build), then per mode (${MODES.join(', ')}) ${ROUNDS} alternating rounds of ${SECONDS} s, wrk -t1 -c${CONNECTIONS}, ${TEAMS} teams, ${KEYS} keys`,
);
const built = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
if (built.status !== 0) throw new Error('npm run build failed');

const bare = await startBare(children);
const command = (mode: Mode) =>
  `npx tsx tests/bench/ingest-wrk.bench.ts --mode ${mode} --rounds ${ROUNDS} --seconds ${SECONDS}`;

const measure = async (MODE: Mode) => {
  const service = await startService(MODE);
  const keys = await issueKeys(service.url);
  const script = writeScript(keys);
  const earlier = values['baseline-root'] ? await startService(MODE, resolve(values['baseline-root'])) : undefined;
  const earlierScript = earlier ? writeScript(await issueKeys(earlier.url), `earlier-${MODE}.lua`) : undefined;
  const versusEarlier: number[] = [];
  const issuedRss = rssMb(service.child.pid!);
  await sleep(REST_SECONDS * 1000);
  const atRest = rssMb(service.child.pid!);
  const earlierAtRest = earlier ? `; the earlier build ${rssMb(earlier.child.pid!)} MB` : '';
  console.log(
    `\n[${MODE}] ${keys.length} keys issued; service RSS ${issuedRss} MB just after, ${atRest} MB at rest ${REST_SECONDS} s later${earlierAtRest}`,
  );

  const rows: Parameters<typeof report>[1] = [];
  const ratios: number[] = [];
  const rates: number[] = [];
  const e2eRates: number[] = [];
  const cpuRatios: number[] = [];
  let peakRss = atRest;
  for (let round = 1; round <= ROUNDS; round++) {
    if (earlier) {
      const earlierCpu = cpuSeconds(earlier.child.pid!);
      const then = runWrk(earlier.url, earlierScript!);
      const thenRate = (then.requests - then.non2xx) / SECONDS;
      const thenCpuPer = ((cpuSeconds(earlier.child.pid!) - earlierCpu) * 1000) / Math.max(1, then.requests);
      rows.push({
        name: `round ${round}: earlier build ${MODE}, 201s (p50 ${then.p50}, p99 ${then.p99}, CPU/request ${thenCpuPer.toFixed(3)} ms)`,
        perSecond: thenRate,
        baseline: true,
      });
      versusEarlier.push(thenRate);
      if (MODE === 'all-in-one') await drain(earlier.url, 0, 0, Date.now());
    }
    const bareCpu = cpuSeconds(bare.child.pid!);
    const base = runWrk(bare.url, script);
    const bareCpuPer = ((cpuSeconds(bare.child.pid!) - bareCpu) * 1000) / Math.max(1, base.requests);
    const serviceCpu = cpuSeconds(service.child.pid!);
    const before = MODE === 'all-in-one' ? await finishedCalls(service.url) : 0;
    const startedAt = Date.now();
    const loadFrom = sinceService();
    const mainThreadCpu = mainThreadCpuSeconds(service.child.pid!);
    const machineBefore = machineCpu();
    const ours = runWrk(service.url, script);
    const used = coresBetween(machineBefore, machineCpu(), SECONDS);
    const mainThreadCores = (mainThreadCpuSeconds(service.child.pid!) - mainThreadCpu) / SECONDS;
    console.log(`round ${round}: load ran ${loadFrom}–${sinceService()} s after the service started`);
    ours.perSecond = (ours.requests - ours.non2xx) / SECONDS;
    // CPU during the load only (the backlog an all-in-one round leaves is processed after it).
    const serviceSeconds = cpuSeconds(service.child.pid!) - serviceCpu;
    const ourCpuPer = (serviceSeconds * 1000) / Math.max(1, ours.requests);
    cpuRatios.push(bareCpuPer / ourCpuPer);
    // Whether the service's event loop (one core at most) or the machine was the limit.
    console.log(
      `round ${round}: during the load ${used.machine.toFixed(2)} of ${used.cores} cores busy: the service ${(serviceSeconds / SECONDS).toFixed(2)} (its main thread ${mainThreadCores.toFixed(2)}, its other threads ${(serviceSeconds / SECONDS - mainThreadCores).toFixed(2)}), the rest (wrk, the kernel, other processes) ${(used.machine - serviceSeconds / SECONDS).toFixed(2)}`,
    );
    console.log(
      `round ${round}: CPU per request during the load: bare route ${bareCpuPer.toFixed(3)} ms, service ${ourCpuPer.toFixed(3)} ms (${(bareCpuPer / ourCpuPer).toFixed(3)}×: the accept-rate ratio an idle machine would allow)`,
    );
    const peak = rssMb(service.child.pid!);
    peakRss = Math.max(peakRss, peak);
    const accepted = ours.requests - ours.non2xx;
    rows.push({
      name: `round ${round}: bare Fastify route (p50 ${base.p50}, p99 ${base.p99})`,
      perSecond: base.perSecond,
      baseline: true,
    });
    rows.push({
      name: `round ${round}: service ${MODE}, 201s (p50 ${ours.p50}, p99 ${ours.p99}, non-201 ${ours.non2xx}, socket errors ${ours.errors})`,
      perSecond: ours.perSecond,
    });
    ratios.push(ours.perSecond / base.perSecond);
    rates.push(ours.perSecond);
    console.log(`round ${round}: ${accepted} accepted; service RSS after the load ${peak} MB`);
    if (MODE === 'all-in-one') {
      const e2e = await drain(service.url, before, accepted, startedAt);
      e2eRates.push(e2e.perSecond);
      console.log(
        `round ${round}: ${e2e.finished} calls finished (wrk counted ${accepted} 201s; up to ${CONNECTIONS} more were in flight when it stopped), the last ${e2e.drainedAfterSeconds.toFixed(1)} s after the round began: ${Math.round(e2e.perSecond)} finished calls/s end to end`,
      );
    }
  }
  if (earlier) {
    const ours = rows.filter((row) => row.name.includes(`service ${MODE}`)).map((row) => row.perSecond);
    const ratios = ours.map((rate, i) => rate / versusEarlier[i]!);
    console.log(
      `[${MODE}] this build / the earlier build, 201s/s per round: ${ratios.map((r) => `${r.toFixed(2)}×`).join(', ')} (median ${median(ratios).toFixed(2)}×)`,
    );
    earlier.child.kill('SIGTERM');
  }
  report(
    `[${MODE}] ingest, wrk -t1 -c${CONNECTIONS}, ~${BODY.length} B transcript-only body (ratio: service / bare route of the same round)`,
    rows,
  );
  const sorted = [...ratios].sort((a, b) => a - b);
  console.log(
    `\nmedian ratio ${median(ratios).toFixed(3)}× over ${ROUNDS} rounds (min ${sorted[0]!.toFixed(3)}×, max ${sorted.at(-1)!.toFixed(3)}×)`,
  );
  // The bare route's rows only (with --baseline-root the earlier build's rows are baselines too).
  const bareRates = rows.filter((row) => row.name.includes('bare Fastify route')).map((row) => row.perSecond);
  const what =
    MODE === 'all-in-one'
      ? '1 accept rate, all-in-one embedded'
      : '1 accept rate, ingress alone embedded (not a target; for comparison)';
  recordTarget({
    target: `${what}: CPU per request during the load`,
    figure: `service ${(1 / median(cpuRatios)).toFixed(1)}× the bare route's CPU per request`,
    baseline: 'bare Fastify route, CPU per request in the same round',
    ratio: median(cpuRatios),
    goal: MODE === 'all-in-one' ? '≥ 0.5×' : '—',
    ...(MODE === 'all-in-one' ? { met: median(cpuRatios) >= 0.5 } : {}),
    command: command(MODE),
  });
  recordTarget({
    target: what,
    figure: `${Math.round(median(rates)).toLocaleString('en-US')} 201s/s (median of ${ROUNDS})`,
    baseline: `bare Fastify route ${Math.round(median(bareRates)).toLocaleString('en-US')} req/s`,
    ratio: median(ratios),
    goal: MODE === 'all-in-one' ? '≥ 0.5×' : '—',
    ...(MODE === 'all-in-one' ? { met: median(ratios) >= 0.5 } : {}),
    command: command(MODE),
  });

  /**
   * One paced round at `perSecond` asked, with how busy the service's main thread was; `keyed`: each
   * request with an Idempotency-Key of its own.
   */
  const pacedRound = async (perSecond: number, thinkTime: ThinkTime, what: string, keyed = false) => {
    const walBefore = await walHistograms(service.url);
    const mainThreadCpu = mainThreadCpuSeconds(service.child.pid!);
    const round = runWrk(
      service.url,
      write(join(dir.path, `paced-${thinkTime}${keyed ? '-keyed' : ''}.lua`), keys, {
        delayMs: (CONNECTIONS * 1000) / perSecond,
        thinkTime,
        ...(keyed ? { idempotencyKeyPrefix: `bench-${randomUUID()}-` } : {}),
      }),
    );
    const busy = (mainThreadCpuSeconds(service.child.pid!) - mainThreadCpu) / SECONDS;
    const rate = (round.requests - round.non2xx) / SECONDS;
    // The main thread's CPU per call accepted in the round (all-in-one: the pipeline's work included, as far as it kept up).
    const perCall = rate > 0 ? `, ${((busy * 1000) / rate).toFixed(2)} ms of it per 201` : '';
    const walAfter = await walHistograms(service.url);
    const syncs = histogramBetween(walBefore.syncs, walAfter.syncs);
    const holds = histogramBetween(walBefore.holds, walAfter.holds);
    const fsyncs =
      syncs.count === 0
        ? 'no WAL fsync'
        : `${syncs.count} WAL fsyncs, p50 ≤ ${syncs.p50! * 1000} ms, p99 ≤ ${syncs.p99! * 1000} ms`;
    const restarts =
      holds.count === 0
        ? 'no WAL restart'
        : `${holds.count} WAL restarts holding the writes, p99 ≤ ${holds.p99! * 1000} ms`;
    console.log(
      `[${MODE}] at ${what} (${Math.round(perSecond)}/s asked, ${Math.round(rate)}/s answered 201; ${thinkTime} think time${keyed ? '; every request with an Idempotency-Key' : ''}): p50 ${round.p50}, p99 ${round.p99}; the main thread ${busy.toFixed(2)} busy${perCall}; ${fsyncs}; ${restarts}`,
    );
    return { round, rate };
  };
  // Target 2: POST → 201 p99 at half the accept rate just measured, each connection pacing itself.
  const half = median(rates) / 2;
  const pacedRounds: Awaited<ReturnType<typeof pacedRound>>[] = [];
  for (const thinkTime of THINK_TIMES) pacedRounds.push(await pacedRound(half, thinkTime, 'half the accept rate'));
  if (IDEMPOTENCY_KEYS) await pacedRound(half, THINK_TIME, 'half the accept rate', true);
  for (const rate of PACED_RATES) await pacedRound(rate, THINK_TIME, `${rate} calls/s`);
  const { round: paced, rate: pacedRate } = pacedRounds[0]!;
  if (MODE === 'all-in-one') allInOneHalf = half;
  else if (allInOneHalf !== undefined) {
    // The accept path alone at target 2's rate: what a 201 costs when no pipeline shares its thread.
    const { round, rate } = await pacedRound(allInOneHalf, THINK_TIME, "the all-in-one process's half accept rate");
    recordTarget({
      target:
        "2 POST → 201 p99 at the all-in-one process's half accept rate, ingress alone embedded (not a target; for comparison)",
      figure: `p99 ${round.p99} at ${Math.round(rate)} 201s/s (${THINK_TIME} think time)`,
      baseline: 'bound 20 ms',
      goal: '—',
      command: `npx tsx tests/bench/ingest-wrk.bench.ts --mode all-in-one,ingress --rounds ${ROUNDS} --seconds ${SECONDS} (the ingress's paced round at the all-in-one's rate)`,
    });
  }
  if (MODE === 'all-in-one') {
    recordTarget({
      target: '2 POST → 201 p99 at half the accept rate, all-in-one embedded',
      figure: `p99 ${paced.p99} at ${Math.round(pacedRate)} 201s/s (${THINK_TIME} think time)`,
      baseline: 'bound 20 ms',
      goal: '≤ 20 ms',
      met: parseWrkMs(paced.p99) <= 20,
      command: `${command(MODE)}${THINK_TIME === 'fixed' ? ' --think-time fixed' : ''} (its paced round${THINK_TIMES.length > 1 ? `, ${THINK_TIME} think time` : ''})`,
    });
    recordTarget({
      target: '3 sustained end to end, all-in-one embedded',
      figure: `${Math.round(median(e2eRates)).toLocaleString('en-US')} finished calls/s (a ${SECONDS} s burst drained; median of ${ROUNDS})`,
      baseline: 'bound 2,000 calls/s',
      ratio: median(e2eRates) / 2000,
      goal: '≥ 2,000 calls/s',
      met: median(e2eRates) >= 2000,
      command: command(MODE),
    });
    recordTarget({
      target: `6 memory, the service at rest (${REST_SECONDS} s after issuing the keys)`,
      figure: `${atRest} MB RSS`,
      baseline: 'bound 150 MB',
      ratio: atRest / 150,
      goal: '≤ 150 MB',
      met: atRest <= 150,
      command: command(MODE),
    });
    recordTarget({
      target: '6 memory, the service under the load',
      figure: `${peakRss} MB RSS (largest after a round)`,
      baseline: 'bound 400 MB',
      ratio: peakRss / 400,
      goal: '≤ 400 MB',
      met: peakRss <= 400,
      command: command(MODE),
    });
  }
  service.child.kill('SIGTERM');
  if (service.child.exitCode === null) await once(service.child, 'exit');
};

/** Half the all-in-one process's accept rate, once measured: the ingress alone is paced at it too. */
let allInOneHalf: number | undefined;
for (const mode of MODES) await measure(mode);
for (const child of children) child.kill('SIGTERM');
await Promise.all(
  children.filter((child) => child.exitCode === null && child.signalCode === null).map((child) => once(child, 'exit')),
);
