/**
 * Supervised projections on mocked time with hand-failed subscriptions: a failure restarts from
 * the checkpoint after a growing pause (1 s … 30 s) that shrinks back after a minute of running; a
 * moved checkpoint is followed at once; an event the projection cannot take halts it until an
 * operator skips it, and its stop is recorded (again, until that succeeds); an event it keeps
 * failing on with an error that proves nothing leaves it stuck on that event after 5 failures in a
 * row: still retried, reported and recorded once, and an operator's skip of it is taken while it
 * waits to restart; readiness says which (a subscription still starting is ready only up to the
 * threshold); nothing restarts after stop.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, mock, test } from 'node:test';
import pino from 'pino';
import type { RecordedEvent, Subscription, SubscriptionStatus } from '../../../shared/ports/event-store.ts';
import {
  ProjectionEventError,
  supervised,
  type SupervisedOptions,
  UnexplainedEventError,
} from '../../../services/projections/supervised.ts';
import { deferred, settled } from '../../support/deferred.ts';

/** A subscription the test fails or lets run; records whether it was stopped. */
interface FakeSubscription extends Subscription {
  /** Where it has got to: set by a test that lets it go past an event. */
  position: bigint;
  fail(error: unknown): void;
  stopped: boolean;
  state: SubscriptionStatus;
}

const fakeSubscription = (): FakeSubscription => {
  const done = deferred();
  void done.promise.catch(() => undefined);
  const sub: FakeSubscription = {
    done: done.promise,
    position: 0n,
    stopped: false,
    state: { state: 'live', since: new Date() },
    fail: (error) => done.reject(error),
    async stop() {
      sub.stopped = true;
      done.resolve();
    },
    caughtUp: async () => undefined,
    status: () => sub.state,
  };
  return sub;
};

const badEvent: Pick<RecordedEvent, 'position' | 'streamId' | 'revision' | 'type' | 'id'> = {
  position: 42n,
  streamId: 'call-1',
  revision: 3,
  type: 'CallAnalysed',
  id: 'e1',
};
const never = () => false;

describe('supervised', () => {
  let started: FakeSubscription[];
  let logs: { level: number; msg: string }[];
  const start = () => {
    const sub = fakeSubscription();
    started.push(sub);
    return sub;
  };
  const logger = () =>
    pino(
      { level: 'info' },
      { write: (line: string) => void logs.push(JSON.parse(line) as { level: number; msg: string }) },
    );
  const run = (options?: SupervisedOptions) => supervised('history', start, logger(), options);
  /** Fails the newest subscription and lets the supervisor react. */
  const failLatest = async (error: unknown) => {
    started.at(-1)!.fail(error);
    await settled();
  };
  const tick = async (ms: number) => {
    mock.timers.tick(ms);
    await settled();
  };

  beforeEach(() => {
    mock.timers.enable({ apis: ['setTimeout', 'Date'], now: Date.parse('2026-11-20T10:00:00.000Z') });
    started = [];
    logs = [];
  });
  afterEach(() => mock.timers.reset());

  test('a failure restarts the subscription after 1 s, then 2, 4, 8, 16, 30, 30 s', async () => {
    const s = run();
    const pauses: number[] = [];
    for (let failure = 0; failure < 7; failure++) {
      await failLatest(new Error(`outage ${failure}`));
      const count = started.length;
      let waited = 0;
      while (started.length === count) {
        await tick(1000);
        waited += 1000;
      }
      pauses.push(waited);
    }
    assert.deepEqual(pauses, [1000, 2000, 4000, 8000, 16_000, 30_000, 30_000]);
    assert.ok(logs.some((l) => l.level === 50 && l.msg === 'history failed; restarting from its checkpoint'));
    await s.stop();
  });

  test('the pause shrinks back to 1 s once a restarted subscription has run for a minute', async () => {
    const s = run();
    await failLatest(new Error('a'));
    await tick(1000);
    await failLatest(new Error('b'));
    await tick(2000);
    assert.equal(started.length, 3);
    await tick(60_001); // the third runs for over a minute
    await failLatest(new Error('c'));
    await tick(999);
    assert.equal(started.length, 3);
    await tick(1);
    assert.equal(started.length, 4, 'restarted after 1 s, not 4 s');
    await s.stop();
  });

  test('readiness: not ready while restarting, with the first error’s time; ready when live; the restart forgotten after a minute live', async () => {
    const s = run();
    assert.deepEqual(s.report(never), { ready: true, state: 'live' });
    await failLatest(new Error('connection refused'));
    started[0]!.state = { state: 'failed', since: new Date(), error: 'connection refused' };
    assert.deepEqual(s.report(never), {
      ready: false,
      reason: 'restarting since 2026-11-20T10:00:00.000Z: connection refused',
    });
    await tick(1000);
    assert.deepEqual(s.report(never), { ready: true, state: 'live' }, 'the restarted subscription is live');
    started[1]!.state = { state: 'retrying', since: new Date(), error: 'timeout' };
    assert.equal(s.report(never).ready, false, 'retrying soon after a restart is still restarting');
    assert.deepEqual(
      s.report(() => true),
      { ready: false, reason: 'retrying since 2026-11-20T10:00:01.000Z: timeout' },
    );
    started[1]!.state = { state: 'live', since: new Date() };
    await tick(60_001);
    assert.deepEqual(s.report(never), { ready: true, state: 'live' });
    started[1]!.state = { state: 'retrying', since: new Date(), error: 'timeout' };
    assert.deepEqual(
      s.report(never),
      { ready: true, state: 'retrying' },
      'a brief retry a minute after the restart is no restart',
    );
    await s.stop();
  });

  test('readiness: a subscription still starting is ready until the threshold, then not, saying since when', async () => {
    const s = run();
    started[0]!.state = { state: 'starting', since: new Date() };
    const overOneSecond = (since: Date) => Date.now() - since.getTime() > 1000;
    assert.deepEqual(s.report(overOneSecond), { ready: true, state: 'starting' });
    await tick(1001);
    assert.deepEqual(s.report(overOneSecond), {
      ready: false,
      reason: 'starting since 2026-11-20T10:00:00.000Z: not following the feed yet',
    });
    started[0]!.state = { state: 'live', since: new Date() };
    assert.deepEqual(s.report(overOneSecond), { ready: true, state: 'live' });
    await s.stop();
  });

  test('restarting again soon after: readiness keeps the time of the first failure', async () => {
    const s = run();
    await failLatest(new Error('first'));
    await tick(1000);
    await failLatest(new Error('second'));
    started[1]!.state = { state: 'failed', since: new Date(), error: 'second' };
    assert.deepEqual(s.report(never), { ready: false, reason: 'restarting since 2026-11-20T10:00:00.000Z: second' });
    await s.stop();
  });

  test('a moved checkpoint (a replay was activated) is followed at once', async () => {
    const s = run();
    await failLatest(Object.assign(new Error('checkpoint moved'), { code: 'CHECKPOINT_MISMATCH' }));
    assert.equal(started.length, 1);
    await tick(0);
    assert.equal(started.length, 2);
    assert.deepEqual(s.report(never), { ready: true, state: 'live' });
    await s.stop();
  });

  test('an event it cannot project halts it until an operator skips the event, then it resumes', async () => {
    const skipped = { now: false };
    const asked: bigint[] = [];
    const halted: ProjectionEventError[] = [];
    const s = run({
      isSkipped: async (position) => (asked.push(position), skipped.now),
      skipPollMs: 500,
      onHalted: (error) => void halted.push(error),
    });
    const error = new ProjectionEventError('history', badEvent, new Error('bad score'));
    await failLatest(error);
    assert.deepEqual(halted, [error], 'told once');
    assert.deepEqual(s.report(never), {
      ready: false,
      reason: error.message,
      position: '42',
      streamId: 'call-1',
      eventType: 'CallAnalysed',
    });
    for (let i = 0; i < 3; i++) await tick(500);
    assert.deepEqual(asked, [42n, 42n, 42n], 'asked every skipPollMs');
    assert.equal(started.length, 1, 'not restarted into the same failure');
    skipped.now = true;
    await tick(500);
    await tick(0);
    assert.equal(started.length, 2, 'resumed once skipped');
    assert.deepEqual(s.report(never), { ready: true, state: 'live' });
    assert.equal(halted.length, 1);
    assert.equal(logs.filter((l) => l.level === 50).length, 1, 'logged at error level once');
    await s.stop();
  });

  test('a stop that could not be recorded is recorded again at each look for the skip, until it is', async () => {
    const skipped = { now: false };
    const attempts: bigint[] = [];
    const s = run({
      isSkipped: async () => skipped.now,
      skipPollMs: 500,
      onHalted: async (error) => {
        attempts.push(error.event.position);
        if (attempts.length < 3) throw new Error('store unavailable');
      },
    });
    await failLatest(new ProjectionEventError('history', badEvent, new Error('bad score')));
    assert.deepEqual(attempts, [42n]);
    await tick(500);
    assert.deepEqual(attempts, [42n, 42n], 'tried again at the next look');
    await tick(500);
    assert.deepEqual(attempts, [42n, 42n, 42n]);
    for (let i = 0; i < 3; i++) await tick(500);
    assert.equal(attempts.length, 3, 'recorded: not again');
    assert.equal(
      logs.filter((l) => l.level === 40 && l.msg.includes('could not be recorded')).length,
      1,
      'the failing record is logged once',
    );
    skipped.now = true;
    await tick(500);
    await tick(0);
    assert.equal(started.length, 2, 'resumed once skipped');
    await s.stop();
  });

  test('without a way to skip, an event error is restarted like any failure', async () => {
    const s = run();
    await failLatest(new ProjectionEventError('history', badEvent, new Error('bad')));
    await tick(1000);
    assert.equal(started.length, 2);
    await s.stop();
  });

  /** Fails the newest subscription on `event` with a bug, then lets the pause before its restart pass. */
  const failOnEventAndRestart = async (event = badEvent) => {
    await failLatest(
      new UnexplainedEventError('history', event, new TypeError("Cannot read properties of undefined (reading 'x')")),
    );
    const count = started.length;
    while (started.length === count) await tick(500);
  };

  test('an event it keeps failing on with a bug: retried, and stuck on it after 5 failures in a row, reported with the error and recorded once', async () => {
    const stuck: { position: bigint; failures: number; since: string }[] = [];
    const s = run({
      isSkipped: async () => false,
      skipPollMs: 500,
      onStuck: (error, failures, since) =>
        void stuck.push({ position: error.event.position, failures, since: since.toISOString() }),
    });
    for (let i = 0; i < 3; i++) await failOnEventAndRestart();
    await failLatest(
      new UnexplainedEventError(
        'history',
        badEvent,
        new TypeError("Cannot read properties of undefined (reading 'x')"),
      ),
    );
    started.at(-1)!.state = { state: 'failed', since: new Date(), error: 'TypeError' };
    const before = s.report(never);
    assert.equal(before.ready, false);
    assert.match(
      String(before.reason),
      /^restarting since .*: history failed on event CallAnalysed at position 42 \(stream call-1, revision 3\): TypeError: Cannot read properties of undefined \(reading 'x'\)$/,
    );
    assert.equal(before.position, undefined, 'no event to skip yet');
    while (started.length === 4) await tick(500);
    assert.deepEqual(stuck, [], 'not stuck after 4');

    await failOnEventAndRestart();
    assert.equal(started.length, 6, 'still retried');
    assert.deepEqual(stuck, [{ position: 42n, failures: 5, since: '2026-11-20T10:00:00.000Z' }]);
    assert.deepEqual(s.report(never), {
      ready: false,
      reason:
        "stuck since 2026-11-20T10:00:00.000Z, 5 failures in a row: history failed on event CallAnalysed at position 42 (stream call-1, revision 3): TypeError: Cannot read properties of undefined (reading 'x')",
      position: '42',
      streamId: 'call-1',
      eventType: 'CallAnalysed',
      stuck: true,
    });
    await failOnEventAndRestart();
    assert.equal(stuck.length, 1, 'recorded once');
    assert.match(String(s.report(never).reason), /, 6 failures in a row: /);
    assert.equal(
      logs.filter((l) => l.level === 50 && l.msg.startsWith('history is stuck on an event')).length,
      1,
      'logged as stuck once',
    );
    await s.stop();
  });

  test('stuck: an operator skip of the event is taken while it waits to restart, at once', async () => {
    const skipped = { now: false };
    const asked: bigint[] = [];
    const s = run({ isSkipped: async (position) => (asked.push(position), skipped.now), skipPollMs: 500 });
    for (let i = 0; i < 5; i++) await failOnEventAndRestart();
    assert.equal(s.report(never).stuck, true);
    // The fifth failure's restart comes after 16 s; the skip is looked for every 500 ms meanwhile.
    await failLatest(new UnexplainedEventError('history', badEvent, new TypeError('again')));
    const count = started.length;
    asked.length = 0;
    await tick(500);
    await tick(500);
    assert.deepEqual(asked, [42n, 42n]);
    assert.equal(started.length, count, 'waiting');
    skipped.now = true;
    await tick(500);
    await tick(0);
    assert.equal(started.length, count + 1, 'restarted once skipped, not after the pause');
    assert.deepEqual(s.report(never), { ready: true, state: 'live' });
    await s.stop();
  });

  test('a stuck event that could not be recorded is recorded again at each look for the skip, until it is', async () => {
    const attempts: number[] = [];
    const s = run({
      isSkipped: async () => false,
      skipPollMs: 500,
      onStuck: async (_error, failures) => {
        attempts.push(failures);
        if (attempts.length < 3) throw new Error('store unavailable');
      },
    });
    for (let i = 0; i < 4; i++) await failOnEventAndRestart();
    await failLatest(new UnexplainedEventError('history', badEvent, new TypeError('again')));
    assert.deepEqual(attempts, [5]);
    await tick(500);
    await tick(500);
    assert.deepEqual(attempts, [5, 5, 5], 'tried again at each look, with what it was stuck with');
    for (let i = 0; i < 3; i++) await tick(500);
    assert.equal(attempts.length, 3, 'recorded: not again');
    assert.equal(logs.filter((l) => l.level === 40 && l.msg.includes('stuck event could not be recorded')).length, 1);
    await s.stop();
  });

  test('stuck no more once past the event; failures on another event start counting again', async () => {
    const stuck: bigint[] = [];
    const s = run({ isSkipped: async () => false, onStuck: (error) => void stuck.push(error.event.position) });
    for (let i = 0; i < 5; i++) await failOnEventAndRestart();
    assert.equal(s.report(never).stuck, true);
    started.at(-1)!.position = 42n; // it handled the event after all
    assert.equal(s.report(never).stuck, undefined);
    const next = { ...badEvent, position: 50n, id: 'e2' };
    for (let i = 0; i < 4; i++) await failOnEventAndRestart(next);
    assert.equal(s.report(never).stuck, undefined, 'four on the next event');
    await failOnEventAndRestart(next);
    assert.equal(s.report(never).position, '50');
    assert.deepEqual(stuck, [42n, 50n]);
    await s.stop();
  });

  test('failures in a row on different events, or not on an event, never make it stuck', async () => {
    const s = run({ isSkipped: async () => false });
    for (let i = 0; i < 6; i++) await failOnEventAndRestart({ ...badEvent, position: BigInt(40 + (i % 2)) });
    for (let i = 0; i < 2; i++) {
      await failLatest(new Error('checkpoint unreadable'));
      const count = started.length;
      while (started.length === count) await tick(500);
    }
    assert.equal(s.report(never).stuck, undefined);
    assert.equal(s.report(never).position, undefined);
    await s.stop();
  });

  test('after stop nothing restarts, and the subscription is stopped', async () => {
    const s = run();
    await failLatest(new Error('outage'));
    await s.stop();
    await tick(60_000);
    assert.equal(started.length, 1);
    assert.equal(started[0]!.stopped, true);
  });
});
