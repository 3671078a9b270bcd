/**
 * Supervised projections on mocked time with hand-failed subscriptions: a failure restarts from
 * the checkpoint after a growing pause (1 s … 30 s) that shrinks back after a minute of running; a
 * moved checkpoint is followed at once; an event the projection cannot take halts it until an
 * operator skips it, and its stop is recorded (again, until that succeeds); readiness says which (a subscription still starting is ready only up to the
 * threshold); nothing restarts after stop.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, mock, test } from 'node:test';
import pino from 'pino';
import type { RecordedEvent, Subscription, SubscriptionStatus } from '../../../shared/ports/event-store.ts';
import { ProjectionEventError, supervised, type SupervisedOptions } from '../../../services/projections/supervised.ts';
import { deferred, settled } from '../../support/deferred.ts';

/** A subscription the test fails or lets run; records whether it was stopped. */
interface FakeSubscription extends Subscription {
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

  test('after stop nothing restarts, and the subscription is stopped', async () => {
    const s = run();
    await failLatest(new Error('outage'));
    await s.stop();
    await tick(60_000);
    assert.equal(started.length, 1);
    assert.equal(started[0]!.stopped, true);
  });
});
