/**
 * The scaled-out stack (two ingress, two processors, one projections, each a process, on
 * PostgreSQL + Redis) on a Kafka broker of the test's own, under a steady load, while the broker
 * hangs (SIGSTOP 10 s, then 30 s), while it restarts on the same data (three times) and after it
 * crashes (SIGKILL) and restarts. What must hold:
 * no 500; a 503 always with Retry-After, and a 503 that says "nothing was accepted" never stored;
 * no answer waits much longer than the publish deadline (KAFKA_PUBLISH_TIMEOUT_MS, 10 s by
 * default); every 201 finishes exactly once; the stack resumes by itself. Every request carries an
 * Idempotency-Key, and each 503 "may have been accepted" is retried with it as a careful client
 * would: then every stored call was acknowledged by exactly one 201 (no duplicates, nothing
 * extra). The number of producers replaced after the broker refused their sequence state is
 * printed. Each prints its figures.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { backend } from '../../support/backends.ts';
import { eventually } from '../../support/eventually.ts';
import {
  byStatus,
  outcomes,
  ownBroker,
  ingressUrls,
  noneExited,
  allReady,
  report,
  retryUntilAnswered,
  scratchDatabase,
  sleep,
  type Stack,
  stackEnv,
  startStack,
  steadyLoad,
  storedCallsOfTeam,
  teamWithKeys,
} from './scaled-out.ts';

const kafka = await backend('kafka');
const postgres = await backend('postgres');
const redis = await backend('redis');
const skip = kafka.skip ?? postgres.skip ?? redis.skip;

const RATE = 40;
/** The ingress's publish deadline (the default of KAFKA_PUBLISH_TIMEOUT_MS), plus room for the rest of a request. */
const PUBLISH_DEADLINE_MS = 10_000;
const SLOWEST_ANSWER_MS = PUBLISH_DEADLINE_MS + 10_000;

describe('scaled out: the Kafka broker hangs and restarts under load', { skip, timeout: 20 * 60_000 }, () => {
  let database: Awaited<ReturnType<typeof scratchDatabase>>;
  let broker: Awaited<ReturnType<typeof ownBroker>>;
  let stack: Stack;
  let team: { teamId: string; keys: string[] };
  let acknowledgedSoFar = 0;

  const targets = () => ingressUrls(stack)();
  const ready = () => allReady(stack, 90_000, 500);

  /** Runs the load around `fault`, then checks every answer and every acknowledged call. */
  const underLoad = async (label: string, fault: () => Promise<void>) => {
    const load = steadyLoad(targets, team.keys, RATE, { idempotencyKeys: true });
    await sleep(3000);
    const faultStarted = Date.now();
    await fault();
    const faultMs = Date.now() - faultStarted;
    // Keep the load on until the stack accepts again: that is "resumes by itself".
    const resumed = Date.now();
    await eventually(
      () => {
        const recent = load.answers.filter((a) => a.status === 201).length;
        assert.ok(recent > 0);
        const last = load.answers.slice(-10);
        assert.ok(
          last.length === 10 && last.every((a) => a.status === 201),
          `still refusing: ${JSON.stringify(byStatus(last))}`,
        );
      },
      { timeoutMs: 90_000, intervalMs: 250 },
    );
    const resumeMs = Date.now() - resumed;
    await sleep(2000);
    const answers = await load.stop();
    for (const a of answers.filter((x) => x.status >= 500))
      assert.ok(a.retryAfter, `a ${a.status} without Retry-After: ${a.detail}`);
    const unexpected = answers.filter((a) => ![201, 503].includes(a.status));
    const maybeAccepted = answers.filter((a) => a.status === 503 && /may have been accepted/i.test(a.detail ?? ''));
    const retried = await Promise.all(maybeAccepted.map((a) => retryUntilAnswered(targets, a.request)));
    assert.deepEqual(
      retried.filter((a) => a.status !== 201).map((a) => `${a.status} ${a.detail ?? ''}`),
      [],
      'a retry with the same Idempotency-Key gets its 201',
    );
    const acknowledged = [...answers, ...retried].filter((a) => a.status === 201).map((a) => a.callId!);
    const outcome = await outcomes(database.url, [...new Set(acknowledged)], 180_000);
    report(label, answers, outcome);
    const replaced = [...stack.ingress, ...stack.processors, ...stack.projections].reduce(
      (n, p) => n + (p.output().match(/replacing the producer/g)?.length ?? 0),
      0,
    );
    console.log(
      `# ${label}: ${maybeAccepted.length} answers "may have been accepted" retried with their Idempotency-Key: ${retried.filter((a) => a.status === 201).length} × 201; producers replaced so far ${replaced}`,
    );
    console.log(
      `# ${label}: fault lasted ${(faultMs / 1000).toFixed(1)} s; accepting again ${(resumeMs / 1000).toFixed(1)} s after it ended`,
    );
    acknowledgedSoFar += new Set(acknowledged).size;
    const stored = await storedCallsOfTeam(database.url, team.teamId);
    console.log(`# ${label}: calls stored ${stored}, acknowledged by a 201 ${acknowledgedSoFar} (so far)`);
    assert.deepEqual(unexpected.map((a) => `${a.status} ${a.detail ?? ''}`).slice(0, 5), []);
    const slow = answers.filter((a) => a.ms > SLOWEST_ANSWER_MS);
    assert.deepEqual(
      slow.map((a) => `${a.status} after ${a.ms} ms from ${a.ingress}: ${a.detail ?? ''}`).slice(0, 5),
      [],
      `answers slower than the publish deadline (${PUBLISH_DEADLINE_MS} ms) allows`,
    );
    assert.deepEqual(outcome.missing, [], 'acknowledged calls missing from the event store');
    assert.deepEqual(outcome.pending, [], 'acknowledged calls never finished');
    assert.deepEqual(outcome.duplicates, [], 'a step recorded twice');
    assert.equal(
      stored,
      acknowledgedSoFar,
      'every stored call was acknowledged by one 201: none answered "nothing was accepted" was stored, no retry made a second call',
    );
    noneExited(stack);
    await ready();
  };

  before(async () => {
    database = await scratchDatabase(postgres.url!);
    broker = await ownBroker();
    stack = await startStack(stackEnv(database.url, broker.brokers, redis.url!));
    team = await teamWithKeys(stack.ingress[0]!.url, 200);
    await ready();
  });
  after(async () => {
    await stack?.stopAll();
    await broker?.close();
    await database?.drop();
  });

  test('the broker hangs for 10 s (SIGSTOP), then resumes', () =>
    underLoad('broker paused 10 s', async () => {
      await broker.pause();
      await sleep(10_000);
      await broker.unpause();
    }));

  test('the broker hangs for 30 s (SIGSTOP), then resumes', () =>
    underLoad('broker paused 30 s', async () => {
      await broker.pause();
      await sleep(30_000);
      await broker.unpause();
    }));

  for (const round of [1, 2, 3]) {
    test(`the broker restarts on the same data (SIGTERM, 12 s down), round ${round}`, () =>
      underLoad(`broker restart ${round}`, async () => {
        await broker.stop();
        await sleep(12_000);
        await broker.resume();
      }));
  }

  test('the broker crashes (SIGKILL) and restarts on the same data 12 s later', () =>
    underLoad('broker crash', async () => {
      await broker.crash();
      await sleep(12_000);
      await broker.resume();
    }));
});
