/**
 * What the `wrk` benches share: the load generator itself (a C program in its own process, so the
 * client is never what is measured), the bare Fastify route they compare with, the ~1 KB
 * transcript-only body, teams and keys issued through the admin API, and reading /metrics.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { INGEST_PATH } from '../../services/ingress/ingest-route.ts';

export { INGEST_PATH };

export const root = resolve(import.meta.dirname, '../..');

/**
 * The Node.js flags `npm start` runs the service with (package.json's `start`, which a unit test
 * holds to these): source-mapped stack traces for the service's own code
 * (services/runtime/source-maps.ts, under `root`: `.` in package.json), and the old generation of
 * the heap capped at HEAP_MAX_MB (default 256), so V8 collects instead of growing the heap under
 * load, and its young generation's semi-spaces at 16 MB.
 */
export const serviceNodeFlags = (heapMaxMb = process.env.HEAP_MAX_MB ?? '256', from = root): string[] => [
  `--import=${from}/dist/services/runtime/source-maps.js`,
  `--max-old-space-size=${heapMaxMb}`,
  // V8 otherwise lets them grow to 64 MB each (docs/decisions/0021-young-generation-capped.md).
  '--max-semi-space-size=16',
];

/** What is missing when `wrk` is not on PATH; undefined when it is there. */
export const wrkMissing = (): string | undefined =>
  spawnSync('wrk', ['--version']).error ? 'wrk is not installed: apt-get install -y wrk' : undefined;

/** Exits with a clear message when `wrk` is not on PATH. */
export const requireWrk = (): void => {
  const missing = wrkMissing();
  if (missing) {
    console.error(`${missing} (the load must come from a native client in its own process)`);
    process.exit(2);
  }
};

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The middle value; for an even count, the mean of the two middle ones. */
export const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

/** The value at quantile `q` (0–1) of `values`, nearest rank. */
export const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
};

export const freePort = async (): Promise<number> => {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  return port;
};

export const waitFor = async (url: string, what: string, timeoutMs = 60_000, child?: ChildProcess) => {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (child && (child.exitCode !== null || child.signalCode !== null))
      throw new Error(`${what} exited (${child.exitCode ?? child.signalCode}) before answering ${url}`);
    if (
      await fetch(url).then(
        (r) => r.ok,
        () => false,
      )
    )
      return;
    await sleep(100);
  }
  throw new Error(`${what} did not answer ${url} within ${timeoutMs} ms`);
};

export const rssMb = (pid: number): number => {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Math.round(Number(line?.replace(/\D+/g, '') ?? 0) / 1024);
};

/** CPU seconds the process has used (all its threads), from /proc: robust to other load on the machine. */
export const cpuSeconds = (pid: number): number => statCpuSeconds(readFileSync(`/proc/${pid}/stat`, 'utf8'));

/** CPU seconds of the process's main thread (the event loop) alone, from /proc/<pid>/task/<pid>/stat. */
export const mainThreadCpuSeconds = (pid: number): number =>
  statCpuSeconds(readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8'));

/** The utime and stime of a stat(5) line (fields 14 and 15, in clock ticks: 100 per second on Linux). */
const statCpuSeconds = (stat: string): number => {
  // After the command name, which may itself hold spaces and parentheses.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};

/** The backends a bench's load also runs on this machine, by how their processes are told apart. */
const BACKENDS: Record<string, (comm: string, cmdline: string) => boolean> = {
  'Kafka broker': (_comm, cmdline) => cmdline.includes('kafka.Kafka'),
  PostgreSQL: (comm) => comm === 'postgres',
  Redis: (comm) => comm.startsWith('redis-server'),
};

/** CPU seconds so far: the machine's in all (every core) and each backend's processes'. */
export interface MachineCpu {
  busy: number;
  cores: number;
  byBackend: Record<string, number>;
}

/**
 * Reads /proc/stat (the machine's busy time: user, nice, system, irq, softirq, steal) and every
 * process's stat, so a bench can say whether the machine's cores were the limit and which backend
 * used them. A process that ended between two readings drops out of the second.
 */
export const machineCpu = (): MachineCpu => {
  const [cpu, ...rest] = readFileSync('/proc/stat', 'utf8').split('\n');
  const [user, nice, system, , , irq, softirq, steal] = cpu!.trim().split(/\s+/).slice(1).map(Number);
  const cores = rest.filter((line) => /^cpu\d+ /.test(line)).length;
  const byBackend = Object.fromEntries(Object.keys(BACKENDS).map((name) => [name, 0]));
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      const backend = Object.keys(BACKENDS).find((name) => BACKENDS[name]!(comm, cmdline));
      if (!backend) continue;
      byBackend[backend]! += statCpuSeconds(stat);
    } catch {
      // The process ended while it was read.
    }
  }
  return { busy: (user! + nice! + system! + irq! + softirq! + steal!) / 100, cores, byBackend };
};

export type CoresUsed = ReturnType<typeof coresBetween>;

/** The backends that used a hundredth of a core or more, as `name cores` parts of a line. */
export const backendCores = (used: CoresUsed): string[] =>
  Object.entries(used.byBackend)
    .filter(([, busy]) => busy >= 0.005)
    .map(([name, busy]) => `${name} ${busy.toFixed(2)}`);

/** What the machine's cores did besides the backends and `attributed` (the bench's own processes): wrk, the kernel, other processes. */
export const restCores = (used: CoresUsed, attributed: number): number =>
  used.machine - attributed - Object.values(used.byBackend).reduce((sum, busy) => sum + busy, 0);

/** Cores used between two readings `seconds` apart, the machine's and each backend's. */
export const coresBetween = (before: MachineCpu, after: MachineCpu, seconds: number) => ({
  machine: (after.busy - before.busy) / seconds,
  cores: after.cores,
  byBackend: Object.fromEntries(
    Object.keys(after.byBackend).map((name) => [
      name,
      Math.max(0, after.byBackend[name]! - (before.byBackend[name] ?? 0)) / seconds,
    ]),
  ),
});

const BARE_ROUTE = `
import Fastify from 'fastify';
const app = Fastify({ logger: false });
app.post(${JSON.stringify(INGEST_PATH)}, async (request, reply) => {
  const body = request.body;
  return reply.code(201).send({ callId: 'c-' + (typeof body === 'object' && body !== null ? Object.keys(body).length : 0), status: 'pending' });
});
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
`;

/**
 * Waits (30 s at most) until a server of POST routes only listens at `url`: it has no GET, so any
 * HTTP answer means it is up. Throws naming `what` when it does not start or `child` exits first.
 */
export const waitForListening = async (url: string, what: string, child: ChildProcess): Promise<void> => {
  const until = Date.now() + 30_000;
  while (
    !(await fetch(url).then(
      () => true,
      () => false,
    ))
  ) {
    if (child.exitCode !== null || Date.now() > until) throw new Error(`${what} did not start`);
    await sleep(100);
  }
};

/** A bare Fastify 5 route (from our node_modules) that parses the same JSON body and answers 201, in its own process. */
export const startBare = async (children: ChildProcess[]): Promise<{ url: string; child: ChildProcess }> => {
  const port = await freePort();
  const child = spawn(process.execPath, ['--input-type=module', '-e', BARE_ROUTE], {
    cwd: root,
    env: { ...process.env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  const url = `http://127.0.0.1:${port}`;
  await waitForListening(url, 'the bare Fastify route', child);
  return { url, child };
};

/**
 * A note when the bare route measured outside what it usually does on a 2-core machine of this
 * kind with `wrk -t1 -c50` (17,000–34,000 req/s): the machine was busy, and ratios to it move.
 */
export const bareSanity = (perSecond: number): string =>
  perSecond < 17_000 || perSecond > 34_000
    ? ` (outside the usual 17,000–34,000 req/s: the machine was ${perSecond < 17_000 ? 'busy' : 'idler than usual'})`
    : '';

/** A ~1 KB transcript-only submission, with `tags`. */
export const bodyWith = (tags: string[]) =>
  JSON.stringify({
    transcript: Array.from({ length: 12 }, (_, i) =>
      i % 2
        ? 'Dana: We use a spreadsheet today and it breaks at month end.'
        : 'Rep: Thanks for joining, what does your process look like?',
    ).join('\n'),
    repName: 'Sam Seller',
    repEmail: 'sam@bench.test',
    tags,
  });

export const BODY = bodyWith(['bench']);

const luaString = (text: string) => `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`;

/** How long a paced connection waits before each request (see `writeScript`). */
export type ThinkTime = 'exponential' | 'fixed';

/** A bench's `--think-time`: exponential, fixed, or a comma-separated list of them. */
export const parseThinkTimes = (value: string): ThinkTime[] => {
  const thinkTimes = value.split(',');
  for (const thinkTime of thinkTimes)
    if (thinkTime !== 'exponential' && thinkTime !== 'fixed')
      throw new Error(`--think-time is exponential, fixed or a comma-separated list of them, not ${thinkTime}`);
  return thinkTimes as ThinkTime[];
};

/**
 * The load script, written to `path`: each request takes the next key round-robin. With `delayMs`,
 * each connection waits before each request (a bounded rate): `delayMs` every time with
 * `thinkTime: 'fixed'`, or a wait drawn at random with that mean (exponential: the connections
 * send independently of each other, as separate clients would) with `'exponential'`, the default.
 * With fixed waits the connections fall into step with the service's group commits: the answers
 * of one commit leave together, so their next requests arrive together one wait later, in waves.
 * With fixed waits and `spreadMs`, the first `connections` waits (one per connection: wrk waits
 * before a connection's first request too) are spread at random over 0–`spreadMs`, so the
 * connections do not all send at once; exponential waits need no spread: the first wait is drawn
 * like the others, and the connections send at the same mean rate from the start. wrk never seeds
 * Lua's random numbers, so every run draws the same waits.
 */
export const writeScript = (
  path: string,
  keys: string[],
  options: {
    delayMs?: number;
    thinkTime?: ThinkTime;
    body?: string;
    spread?: { connections: number; spreadMs: number };
    /** Send each request with an Idempotency-Key of its own: this prefix and the request's number. */
    idempotencyKeyPrefix?: string;
  } = {},
) => {
  const mean = Math.max(1, Math.round(options.delayMs ?? 0));
  const fixed = options.thinkTime === 'fixed';
  const wait = fixed ? `${mean}` : `math.floor(-${mean} * math.log(1 - math.random()))`;
  const delay =
    options.delayMs === undefined
      ? ''
      : !fixed || options.spread === undefined
        ? `delay = function()
  return ${wait}
end
`
        : `local delays = 0
delay = function()
  delays = delays + 1
  if delays <= ${options.spread.connections} then
    return math.random(0, ${Math.round(options.spread.spreadMs)})
  end
  return ${wait}
end
`;
  writeFileSync(
    path,
    `local keys = { ${keys.map(luaString).join(', ')} }
local body = ${luaString(options.body ?? BODY)}
local i = 0
request = function()
  i = i + 1
  return wrk.format("POST", ${luaString(INGEST_PATH)}, { ["Content-Type"] = "application/json", ["X-API-Key"] = keys[(i % #keys) + 1]${options.idempotencyKeyPrefix === undefined ? '' : `, ["Idempotency-Key"] = ${luaString(options.idempotencyKeyPrefix)} .. i`} }, body)
end
${delay}`,
  );
  return path;
};

export interface WrkResult {
  /** Answers per second as wrk counts them (all statuses). */
  perSecond: number;
  requests: number;
  non2xx: number;
  errors: string;
  p50: string;
  p99: string;
}

const wrkArgs = (url: string, script: string, connections: number, seconds: number, timeoutSeconds?: number) => [
  '-t1',
  `-c${connections}`,
  `-d${seconds}s`,
  ...(timeoutSeconds === undefined ? [] : [`--timeout`, `${timeoutSeconds}s`]),
  '--latency',
  '-s',
  script,
  `${url}${INGEST_PATH}`,
];

const parseWrk = (out: string): WrkResult => {
  const number = (re: RegExp) => Number(re.exec(out)?.[1] ?? 0);
  const text = (re: RegExp) => re.exec(out)?.[1] ?? '?';
  return {
    perSecond: number(/Requests\/sec:\s+([\d.]+)/),
    requests: number(/(\d+) requests in/),
    non2xx: number(/Non-2xx or 3xx responses:\s+(\d+)/),
    errors: text(/Socket errors:\s+(.+)/) === '?' ? 'none' : text(/Socket errors:\s+(.+)/),
    p50: text(/\s50%\s+(\S+)/),
    p99: text(/\s99%\s+(\S+)/),
  };
};

/**
 * `wrk -t1 -c<connections> -d<seconds>s --latency -s <script>` against the ingest path, waited for;
 * `timeoutSeconds` for wrk's `--timeout` (its default, 2 s, counts a slower answer as an error).
 */
export const runWrk = (
  url: string,
  script: string,
  connections: number,
  seconds: number,
  timeoutSeconds?: number,
): WrkResult => {
  const run = spawnSync('wrk', wrkArgs(url, script, connections, seconds, timeoutSeconds), { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`wrk failed: ${run.stderr}`);
  return parseWrk(run.stdout);
};

/** The same, without blocking this process's event loop (to sample the service while wrk runs). */
export const runWrkAsync = async (
  url: string,
  script: string,
  connections: number,
  seconds: number,
): Promise<WrkResult> => {
  const child = spawn('wrk', wrkArgs(url, script, connections, seconds), { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk) => (out += chunk));
  child.stderr.on('data', (chunk) => (err += chunk));
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`wrk failed: ${err}`);
  return parseWrk(out);
};

/** wrk's latency text (`812.00us`, `1.20ms`, `2.10s`) in milliseconds. */
export const parseWrkMs = (text: string): number => {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(text);
  if (!match) return Number.NaN;
  return Number(match[1]) * { us: 0.001, ms: 1, s: 1000, m: 60_000 }[match[2] as 'us' | 'ms' | 's' | 'm'];
};

/**
 * `fetch`, tried again (up to three times in all) when the connection fails rather than the
 * server answering; the last failure is thrown with its cause in the message.
 */
export const fetchAgain = async (url: string, init?: RequestInit): Promise<Response> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fetch(url, init);
    } catch (error) {
      if (attempt >= 3) {
        const cause = (error as { cause?: { code?: string; message?: string } }).cause;
        throw new Error(`${url}: ${(error as Error).message} (${cause?.code ?? ''} ${cause?.message ?? ''})`, {
          cause: error,
        });
      }
      await sleep(200);
    }
  }
};

/** The text of /metrics at `url`, read once with `token`. */
export const metricsText = async (url: string, token: string): Promise<string> => {
  const res = await fetchAgain(url, { headers: { authorization: `Bearer ${token}` } });
  if (!res.ok) throw new Error(`${url}: ${res.status}`);
  return res.text();
};

/**
 * Reads /metrics at `url` once, with the admin token; the answer sums the samples whose line
 * starts with a prefix (a name with `{` to take every label set, or a name and some labels).
 */
export const scrape = async (url: string, token: string): Promise<(prefix: string) => number> => {
  const lines = (await metricsText(url, token)).split('\n');
  return (prefix) =>
    lines
      .filter((line) => line.startsWith(prefix))
      .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
};

/** A histogram's cumulative bucket counts by upper bound (`le`), from the text of /metrics. */
export const bucketsIn = (metrics: string, name: string): Map<number, number> => {
  const buckets = new Map<number, number>();
  const line = new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\d+)$`, 'gm');
  for (const [, le, count] of metrics.matchAll(line)) buckets.set(le === '+Inf' ? Infinity : Number(le), Number(count));
  return buckets;
};

/** A histogram's cumulative bucket counts by upper bound (`le`), read from /metrics at `url` once. */
export const histogramBuckets = async (url: string, token: string, name: string): Promise<Map<number, number>> =>
  bucketsIn(await metricsText(url, token), name);

/**
 * What a histogram recorded between two reads: how many observations, and the upper bound of the
 * bucket holding the p50 and the p99 (the true value is at most that, above the bucket before);
 * no quantiles without observations.
 */
export const histogramBetween = (before: Map<number, number>, after: Map<number, number>) => {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const delta = bounds.map((le) => (after.get(le) ?? 0) - (before.get(le) ?? 0));
  const count = delta.at(-1) ?? 0;
  const upTo = (q: number) =>
    count === 0 ? undefined : (bounds[delta.findIndex((cumulative) => cumulative >= q * count)] ?? Infinity);
  return { count, p50: upTo(0.5), p99: upTo(0.99) };
};

/** Calls that reached a final status in the process serving `base` (`calls_finished_total`). */
export const finishedCalls = async (base: string, token: string) =>
  (await scrape(`${base}/metrics`, token))('calls_finished_total{');

export const admin = async (
  base: string,
  token: string,
  path: string,
  body: unknown,
): Promise<Record<string, string>> => {
  const res = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  return (await res.json()) as Record<string, string>;
};

export interface IssuedKeys {
  teams: string[];
  /** Every key; key k belongs to team k % teams.length. */
  keys: string[];
}

/**
 * `teams` teams with ample capacity and `keys` keys spread over them, made through the admin API.
 * Each key may make 30 ingest requests a minute, so keys × 30 must exceed the requests of any
 * minute of the load for the per-key limit not to be what is measured.
 */
export const issueKeys = async (base: string, token: string, teams: number, keys: number): Promise<IssuedKeys> => {
  const teamIds: string[] = [];
  for (let t = 0; t < teams; t++)
    teamIds.push(
      (
        await admin(base, token, '/api/admin/teams', {
          name: `Bench team ${t}`,
          ownerEmail: `owner${t}@bench.test`,
          capacityHours: 1_000_000,
        })
      ).teamId!,
    );
  const issued: string[] = [];
  const perBatch = 20;
  for (let k = 0; k < keys; k += perBatch) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(perBatch, keys - k) }, (_, i) =>
        admin(base, token, `/api/admin/teams/${teamIds[(k + i) % teams]}/keys`, { label: `bench ${k + i}` }),
      ),
    );
    issued.push(...batch.map((key) => key.key!));
  }
  return { teams: teamIds, keys: issued };
};
