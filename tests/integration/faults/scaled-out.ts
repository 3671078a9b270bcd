/**
 * The scaled-out stack as separate processes (`services/*\/main.ts`): two ingress, two processors
 * and one projections on Kafka + PostgreSQL + Redis, a steady load of transcript calls over HTTP,
 * and the bookkeeping every fault test needs: every answer by status, and at the end every 201
 * checked in the event store (completed, failed by code, missing, a step recorded twice).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { eventually } from '../../support/eventually.ts';
import { ADMIN_TOKEN, API_KEY_SECRET } from '../../support/ingress-harness.ts';
import { freePort, type ServiceProcess, startService } from '../../support/service-process.ts';

export const TRANSCRIPT =
  'Rep: Hi Dana, what do you use today?\nDana: Spreadsheets, and the price worries me.\nRep: I will send a proposal and book a demo for Friday.';

/** A database of the test's own, so terminating "the service's connections" touches nobody else. */
export const scratchDatabase = async (serverUrl: string) => {
  const name = `faults_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    admin,
    /** Terminates every connection to the scratch database but the test's own; returns how many. */
    async terminateConnections(): Promise<number> {
      const { rows } = await admin.query<{ n: number }>(
        'SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
        [name],
      );
      return rows[0]!.n;
    },
    async drop() {
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => undefined);
      await admin.end();
    },
  };
};

/** A Redis server of the test's own (the machine's `redis-server`), which the test may stop. */
export const scratchRedis = async () => {
  const port = await freePort();
  let child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const answers = () =>
    eventually(
      async () => {
        const { createConnection } = await import('node:net');
        await new Promise<void>((resolve, reject) => {
          const socket = createConnection(port, '127.0.0.1', () => (socket.end(), resolve()));
          socket.on('error', reject);
        });
      },
      { timeoutMs: 10_000, intervalMs: 50 },
    );
  await answers();
  return {
    url: `redis://127.0.0.1:${port}`,
    stop() {
      child.kill('SIGKILL');
    },
    async start() {
      child = spawn(
        'redis-server',
        ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
        { stdio: 'ignore' },
      );
      await answers();
    },
    close() {
      child.kill('SIGKILL');
    },
  };
};

export type Role = 'ingress' | 'processor' | 'projections';
const ENTRY: Record<Role, string> = {
  ingress: 'services/ingress/main.ts',
  processor: 'services/processor/main.ts',
  projections: 'services/projections/main.ts',
};

export interface Stack {
  env: Record<string, string>;
  ingress: ServiceProcess[];
  processors: ServiceProcess[];
  projections: ServiceProcess[];
  start(role: Role): Promise<ServiceProcess>;
  stopAll(): Promise<void>;
}

export const startStack = async (
  env: Record<string, string>,
  counts = { ingress: 2, processor: 2, projections: 1 },
): Promise<Stack> => {
  const stack: Stack = {
    env,
    ingress: [],
    processors: [],
    projections: [],
    async start(role) {
      const process = await startService({ ...env, LOG_LEVEL: 'warn' }, ENTRY[role]);
      (role === 'ingress' ? stack.ingress : role === 'processor' ? stack.processors : stack.projections).push(process);
      return process;
    },
    async stopAll() {
      await Promise.all(
        [...stack.ingress, ...stack.processors, ...stack.projections].map((p) => p.kill9().catch(() => undefined)),
      );
    },
  };
  // The first ingress creates the topics and tables; the rest start after it.
  await stack.start('ingress');
  for (let i = 1; i < counts.ingress; i++) await stack.start('ingress');
  for (let i = 0; i < counts.processor; i++) await stack.start('processor');
  for (let i = 0; i < counts.projections; i++) await stack.start('projections');
  return stack;
};

/** The processes that have not exited. */
export const live = (processes: ServiceProcess[]) =>
  processes.filter((p) => p.child.exitCode === null && p.child.signalCode === null);

/** The URLs of the ingress processes still running, for the load to spread over. */
export const ingressUrls = (stack: Stack) => () => live(stack.ingress).map((p) => p.url);

/** Waits (bounded) until every running process answers 200 on /readyz. */
export const allReady = (stack: Stack, timeoutMs: number, intervalMs: number) =>
  eventually(
    async () => {
      for (const p of live([...stack.ingress, ...stack.processors, ...stack.projections])) {
        const res = await fetch(`${p.url}/readyz`);
        assert.equal(res.status, 200, `${p.url}/readyz: ${await res.text()}`);
      }
    },
    { timeoutMs, intervalMs },
  );

/** No process of the stack exited by itself (those the test killed with SIGKILL aside). */
export const noneExited = (stack: Stack) => {
  for (const p of [...stack.ingress, ...stack.processors, ...stack.projections]) {
    if (p.child.signalCode === 'SIGKILL') continue; // killed by the test
    assert.equal(p.child.exitCode, null, `a service process exited:\n${p.output().slice(-3000)}`);
  }
};

export const adminCall = async (base: string, method: string, path: string, body?: unknown) => {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${ADMIN_TOKEN}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.json() as Promise<Record<string, unknown>>;
};

/** A team with enough keys that the per-key limit (30/min) never refuses the load. */
export const teamWithKeys = async (base: string, keys: number) => {
  const team = await adminCall(base, 'POST', '/api/admin/teams', {
    name: `Faults ${randomUUID()}`,
    ownerEmail: 'owner@faults.test',
    ownerName: 'Olive Owner',
    capacityHours: 100_000,
  });
  const issued: string[] = [];
  for (let i = 0; i < keys; i++)
    issued.push(
      (await adminCall(base, 'POST', `/api/admin/teams/${String(team.teamId)}/keys`, { label: `load ${i}` }))
        .key as string,
    );
  return { teamId: String(team.teamId), keys: issued };
};

export interface Answer {
  status: number;
  callId?: string;
  /** Which ingress answered (index into the stack's list at send time). */
  ingress: string;
  retryAfter?: string;
  code?: string;
  detail?: string;
  /** How long the answer took. */
  ms: number;
  /** What was sent, so that the request can be retried as it was. */
  request: { apiKey: string; body: unknown; idempotencyKey?: string };
}

/**
 * Sends `rate` requests per second, spread over the ingress URLs `targets()` returns at each send,
 * until stopped. Connection errors (a killed ingress) count as status 0.
 */
export const steadyLoad = (
  targets: () => string[],
  keys: string[],
  rate: number,
  options: { idempotencyKeys?: boolean } = {},
) => {
  const answers: Answer[] = [];
  let n = 0;
  let stopped = false;
  const inFlight = new Set<Promise<void>>();
  const send = async () => {
    const urls = targets();
    const url = urls[n % urls.length]!;
    const key = keys[n % keys.length]!;
    n++;
    const request = {
      apiKey: key,
      body: { transcript: TRANSCRIPT, repName: 'Sam Seller', callTitle: `load ${n}` },
      ...(options.idempotencyKeys ? { idempotencyKey: `load-${randomUUID()}` } : {}),
    };
    answers.push(await ingestOnce(url, request));
  };
  const timer = setInterval(() => {
    if (stopped) return;
    const p = send().finally(() => inFlight.delete(p));
    inFlight.add(p);
  }, 1000 / rate);
  return {
    answers,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await Promise.all([...inFlight]);
      return answers;
    },
  };
};

/** One POST to the ingest endpoint; a connection error (a killed ingress) is status 0. */
export const ingestOnce = async (url: string, request: Answer['request']): Promise<Answer> => {
  const started = Date.now();
  try {
    const res = await fetch(`${url}/api/integrations/push-api/ingest`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': request.apiKey,
        ...(request.idempotencyKey ? { 'idempotency-key': request.idempotencyKey } : {}),
      },
      body: JSON.stringify(request.body),
      signal: AbortSignal.timeout(60_000),
    });
    const body = (await res.json().catch(() => ({}))) as { callId?: string; code?: string; detail?: string };
    return {
      status: res.status,
      callId: body.callId,
      ingress: url,
      retryAfter: res.headers.get('retry-after') ?? undefined,
      code: body.code,
      detail: body.detail,
      ms: Date.now() - started,
      request,
    };
  } catch {
    return { status: 0, ingress: url, ms: Date.now() - started, request };
  }
};

/**
 * What a careful client does with a 503 "may have been accepted": the same request with the same
 * Idempotency-Key again, after Retry-After, until it gets an answer other than 503 (bounded).
 */
export const retryUntilAnswered = async (
  targets: () => string[],
  request: Answer['request'],
  timeoutMs = 60_000,
): Promise<Answer> => {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; ; i++) {
    const urls = targets();
    const answer = await ingestOnce(urls[i % urls.length]!, request);
    if ((answer.status !== 503 && answer.status !== 0) || Date.now() > deadline) return answer;
    await sleep(answer.retryAfter ? Math.min(Number(answer.retryAfter) * 1000, 2000) : 500);
  }
};

export const byStatus = (answers: Answer[]) => {
  const counts: Record<string, number> = {};
  for (const a of answers) counts[a.status] = (counts[a.status] ?? 0) + 1;
  return counts;
};

export interface Outcome {
  completed: number;
  failed: Record<string, number>;
  missing: string[];
  pending: string[];
  /** Calls with some event type recorded more than once. */
  duplicates: string[];
  drainMs: number;
}

/** Waits (bounded) until every acknowledged call is finished, then counts what happened to each. */
export const outcomes = async (databaseUrl: string, callIds: string[], timeoutMs = 120_000): Promise<Outcome> => {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const started = Date.now();
  try {
    const read = async () => {
      const { rows } = await client.query<{ stream_id: string; type: string; data: { code?: string } }>(
        'SELECT stream_id, type, data FROM events WHERE stream_id = ANY($1::text[]) ORDER BY stream_id, revision',
        [callIds.map((id) => `call-${id}`)],
      );
      const byCall = new Map<string, { type: string; data: { code?: string } }[]>();
      for (const row of rows) byCall.set(row.stream_id.slice(5), [...(byCall.get(row.stream_id.slice(5)) ?? []), row]);
      return byCall;
    };
    let byCall = await read();
    const unfinished = () =>
      callIds.filter(
        (id) => !(byCall.get(id) ?? []).some((e) => e.type === 'CallCompleted' || e.type === 'CallFailed'),
      );
    while (unfinished().length > 0 && Date.now() - started < timeoutMs) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      byCall = await read();
    }
    const outcome: Outcome = {
      completed: 0,
      failed: {},
      missing: [],
      pending: [],
      duplicates: [],
      drainMs: Date.now() - started,
    };
    for (const id of callIds) {
      const events = byCall.get(id);
      if (!events) {
        outcome.missing.push(id);
        continue;
      }
      const types = events.map((e) => e.type);
      if (new Set(types).size !== types.length) outcome.duplicates.push(id);
      const last = events.at(-1)!;
      if (last.type === 'CallCompleted') outcome.completed++;
      else if (last.type === 'CallFailed')
        outcome.failed[last.data.code ?? '?'] = (outcome.failed[last.data.code ?? '?'] ?? 0) + 1;
      else outcome.pending.push(id);
    }
    return outcome;
  } finally {
    await client.end();
  }
};

export const report = (label: string, answers: Answer[], outcome: Outcome) => {
  const acknowledged = answers.filter((a) => a.status === 201).length;
  const slowest = Math.max(0, ...answers.map((a) => a.ms));
  console.log(
    `# ${label}: sent ${answers.length}, 201 ${acknowledged}, slowest answer ${(slowest / 1000).toFixed(1)} s, by status ${JSON.stringify(byStatus(answers))}, completed ${outcome.completed}, failed ${JSON.stringify(outcome.failed)}, ` +
      `missing ${outcome.missing.length}, pending ${outcome.pending.length}, duplicates ${outcome.duplicates.length}, drained in ${(outcome.drainMs / 1000).toFixed(1)} s`,
  );
};

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const stackEnv = (databaseUrl: string, kafkaBrokers: string, redisUrl: string) => ({
  DATABASE_URL: databaseUrl,
  KAFKA_BROKERS: kafkaBrokers,
  REDIS_URL: redisUrl,
  TOPIC_PREFIX: `f${randomUUID().slice(0, 8)}.`,
  TOPIC_PARTITIONS: '6',
  ADMIN_TOKEN,
  API_KEY_SECRET,
});

/** Whether nothing holds 127.0.0.1:`port` (a listen on it succeeds). */
const canListen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

/**
 * A port whose next one is free too (the broker's client and controller listeners), below Linux's
 * ephemeral range (32768–60999). There the kernel never hands a port out by itself, so neither
 * another test's `listen(0)` nor an outgoing connection takes it in the seconds the broker's JVM
 * needs to bind it; a port from `freePort` can be taken meanwhile, and its neighbour was never
 * checked at all, so the broker could fail to start.
 */
const freePortPair = async (): Promise<number> => {
  for (let tries = 0; tries < 50; tries++) {
    const port = 20_000 + 2 * Math.floor(Math.random() * 6_000);
    if ((await canListen(port)) && (await canListen(port + 1))) return port;
  }
  throw new Error('no two free neighbouring ports between 20000 and 32000');
};

/**
 * A Kafka broker of the test's own (docker/kafka.sh on free ports and its own directory), which
 * the test may pause (SIGSTOP), stop and start again on the same data.
 */
export const ownBroker = async () => {
  const script = fileURLToPath(new URL('../../../docker/kafka.sh', import.meta.url));
  const home = mkdtempSync(join(tmpdir(), 'kafka-faults-'));
  const port = await freePortPair();
  const env = {
    ...process.env,
    KAFKA_PORT: String(port),
    KAFKA_CONTROLLER_PORT: String(port + 1),
    KAFKA_HOME_DIR: home,
    KAFKA_NUM_PARTITIONS: '6',
    // A restart under this suite's load (processes, PostgreSQL, a second test file) has taken
    // longer than the script's default wait on a machine of two cores: wait longer, not fail.
    KAFKA_START_TIMEOUT: '240',
  };
  const run = (...args: string[]) =>
    new Promise<void>((resolve, reject) => {
      const child = spawn('bash', [script, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      child.stderr.on('data', (chunk) => (err += chunk));
      child.on('exit', (code) =>
        code === 0 ? resolve() : reject(new Error(`kafka.sh ${args.join(' ')} exited ${code}: ${err.slice(-2000)}`)),
      );
    });
  await run('start');
  return {
    brokers: `127.0.0.1:${port}`,
    pause: () => run('pause'),
    unpause: () => run('unpause'),
    /** SIGTERM and wait for the exit; the data stays. */
    stop: () => run('kill', 'TERM'),
    /** SIGKILL: the broker crashes, nothing flushed or closed. */
    crash: () => run('kill', 'KILL'),
    /** Starts again on the same data and waits until it answers. */
    resume: () => run('resume'),
    async close() {
      await run('unpause').catch(() => undefined);
      await run('stop').catch(() => undefined);
      rmSync(home, { recursive: true, force: true });
    },
  };
};

/** How many calls of the team the event store holds (to find calls stored behind a 503). */
export const storedCallsOfTeam = async (databaseUrl: string, teamId: string): Promise<number> => {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM events WHERE type = 'CallSubmitted' AND data->>'teamId' = $1",
      [teamId],
    );
    return rows[0]!.n;
  } finally {
    await client.end();
  }
};
