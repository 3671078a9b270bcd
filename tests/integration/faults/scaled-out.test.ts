/**
 * Faults under load on the scaled-out stack (two ingress, two processors, one projections, each
 * its own process, on Kafka + PostgreSQL + Redis). Each test runs a steady load, injects one
 * fault, and checks what the README's "Guarantees" promise: no 500, a 503 always with
 * Retry-After (an outage, or a team stream four writers still contended after the retries),
 * every 201 finishes exactly once (no missing call, no step recorded twice), and the stack serves
 * again by itself. Each prints its figures.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { backend } from '../../support/backends.ts';
import type { ServiceProcess } from '../../support/service-process.ts';
import {
  type Answer,
  byStatus,
  outcomes,
  ingressUrls,
  live,
  noneExited,
  allReady,
  report,
  scratchDatabase,
  scratchRedis,
  sleep,
  type Stack,
  stackEnv,
  startStack,
  steadyLoad,
  teamWithKeys,
} from './scaled-out.ts';

const kafka = await backend('kafka');
const postgres = await backend('postgres');
const redis = await backend('redis');
const skip = kafka.skip ?? postgres.skip ?? redis.skip;

const RATE = 40;

describe('scaled out on Kafka + PostgreSQL + Redis: faults under load', { skip, timeout: 15 * 60_000 }, () => {
  let database: Awaited<ReturnType<typeof scratchDatabase>>;
  let ownRedis: Awaited<ReturnType<typeof scratchRedis>>;
  let stack: Stack;
  let keys: string[];

  const targets = () => ingressUrls(stack)();
  const ready = () => allReady(stack, 60_000, 250);
  const checkAnswers = (answers: Answer[], allowed: number[]) => {
    const unexpected = answers.filter((a) => !allowed.includes(a.status));
    for (const a of answers.filter((x) => x.status >= 500))
      console.log(`# ${a.status} from ${a.ingress}: ${a.code} ${a.detail}`);
    assert.deepEqual(unexpected.slice(0, 5), [], `unexpected answers ${JSON.stringify(byStatus(answers))}`);
    for (const a of answers.filter((x) => x.status === 503)) assert.ok(a.retryAfter, 'a 503 without Retry-After');
  };
  const acknowledged = (answers: Answer[]) => answers.filter((a) => a.status === 201).map((a) => a.callId!);
  const everyCallFinished = async (label: string, answers: Answer[]) => {
    const outcome = await outcomes(database.url, acknowledged(answers));
    report(label, answers, outcome);
    assert.deepEqual(outcome.missing, [], 'acknowledged calls missing from the event store');
    assert.deepEqual(outcome.pending, [], 'acknowledged calls never finished');
    assert.deepEqual(outcome.duplicates, [], 'a step recorded twice');
    assert.equal(outcome.completed, acknowledged(answers).length, `failed: ${JSON.stringify(outcome.failed)}`);
  };

  before(async () => {
    database = await scratchDatabase(postgres.url!);
    ownRedis = await scratchRedis();
    const url = new URL(database.url);
    url.searchParams.set('application_name', 'scaled-out-stack');
    stack = await startStack(stackEnv(url.toString(), kafka.url!, ownRedis.url));
    keys = (await teamWithKeys(stack.ingress[0]!.url, 150)).keys;
    await ready();
  });
  after(async () => {
    await stack?.stopAll();
    ownRedis?.close();
    await database?.drop();
  });

  test('kill -9 one processor mid-pipeline: the survivor takes its partitions and finishes its calls', async () => {
    const load = steadyLoad(targets, keys, RATE);
    await sleep(4000);
    await stack.processors[0]!.kill9();
    await sleep(6000);
    const answers = await load.stop();
    checkAnswers(answers, [201, 503]);
    await everyCallFinished('kill -9 processor', answers);
    noneExited(stack);
    await stack.start('processor');
    await ready();
  });

  test('PostgreSQL connections terminated twice under load: only 201 or 503 + Retry-After, no process exits, every 201 finishes', async () => {
    const load = steadyLoad(targets, keys, RATE);
    await sleep(3000);
    const first = await database.terminateConnections();
    await sleep(3000);
    const second = await database.terminateConnections();
    await sleep(4000);
    const answers = await load.stop();
    console.log(`# terminated ${first} then ${second} connections`);
    assert.ok(first > 0 && second > 0);
    checkAnswers(answers, [201, 503]);
    noneExited(stack);
    await everyCallFinished('pg_terminate_backend ×2', answers);
    await ready();
  });

  test('Redis down: the per-process fallback keeps accepting, never a 500; Redis counts again once back', async () => {
    const load = steadyLoad(targets, keys, RATE);
    await sleep(2000);
    ownRedis.stop();
    await sleep(5000);
    await ownRedis.start();
    await sleep(3000);
    const answers = await load.stop();
    checkAnswers(answers, [201, 503]);
    noneExited(stack);
    await everyCallFinished('Redis down 5 s', answers);
    await ready();
  });

  test('kill -9 one ingress: every 201 it returned finishes; a new ingress serves at once', async () => {
    const victim = stack.ingress[0]!;
    const load = steadyLoad(targets, keys, RATE);
    await sleep(3000);
    await victim.kill9();
    await sleep(3000);
    const replacement = await stack.start('ingress');
    const first = await fetch(`${replacement.url}/api/integrations/push-api/ingest`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': keys[0]! },
      body: JSON.stringify({ transcript: 'Rep: hello\nDana: hi' }),
    });
    assert.equal(first.status, 201, await first.text());
    await sleep(2000);
    const answers = await load.stop();
    // Requests in flight to the killed process get no answer (status 0): the client knows nothing was acknowledged.
    checkAnswers(answers, [201, 0, 503]);
    const fromVictim = answers.filter((a) => a.ingress === victim.url && a.status === 201);
    console.log(`# the killed ingress acknowledged ${fromVictim.length} calls before it died`);
    await everyCallFinished('kill -9 ingress', answers);
    noneExited(stack);
    await ready();
  });

  test('SIGTERM under load: every process finishes its in-flight work and exits 0 within the 15 s limit; nothing acknowledged is lost', async () => {
    const load = steadyLoad(targets, keys, RATE);
    await sleep(3000);
    const stopAll = (processes: ServiceProcess[]) =>
      Promise.all(
        processes.map(async (p) => {
          const started = Date.now();
          const code = await p.stop();
          return { code, ms: Date.now() - started, output: p.output() };
        }),
      );
    // The ingress processes first, while requests still arrive; then the workers, mid-pipeline.
    const ingress = await stopAll(live(stack.ingress));
    const answers = await load.stop();
    const workers = await stopAll(live([...stack.processors, ...stack.projections]));
    const stops = [...ingress, ...workers];
    console.log(
      `# SIGTERM: exit codes ${stops.map((x) => x.code).join(',')}, slowest ${(Math.max(...stops.map((x) => x.ms)) / 1000).toFixed(1)} s`,
    );
    for (const stop of stops) assert.equal(stop.code, 0, stop.output.slice(-3000));
    // Requests sent after the ingress processes closed get no answer (status 0).
    checkAnswers(answers, [201, 0, 503]);
    await stack.start('processor');
    await everyCallFinished('SIGTERM, then one processor started again', answers);
  });
});
