/**
 * Keys fail closed only when the key directory cannot read: a directory older than its bound
 * because this process was busy (its poll could not run) reads the team events before it answers,
 * and accepts a valid key from that read; one whose reads hang answers 503 within the refresh wait.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { subscriptionsOver } from '../../../shared/adapters/event-store/polling-subscription.ts';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import type { EventStore } from '../../../shared/ports/event-store.ts';
import { ProblemError } from '../../../services/ingress/errors.ts';
import { TeamService } from '../../../services/ingress/teams/team-service.ts';
import { createTeamWriter } from '../../../services/runtime/team-writer.ts';
import { tempDir } from '../../support/temp-dir.ts';

const MAX_LAG_MS = 200;
const SECRET = 'k'.repeat(40);

/** Holds this thread, as a long synchronous task or a paused process does. */
const blockThread = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

describe('a key directory older than KEY_DIRECTORY_MAX_LAG_MS', () => {
  const closers: (() => Promise<void> | void)[] = [];
  after(async () => {
    for (const close of closers.reverse()) await close();
  });

  /**
   * A service over an embedded store whose feed reads (the directory's) can be made to hang;
   * its poll interval is far longer than the lag bound, so only a refresh reads in time.
   */
  const serviceWithKey = async () => {
    const dir = tempDir('stale-directory-');
    const opened = openSqlite(dir.path);
    const real = createSqliteEventStore(opened.db, { pollMs: 60_000 });
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    const feed = { hang: false, fail: false };
    /** `read`; while the feed hangs, `read` once the test lets the feed go; a failure once it fails. */
    const held = <T>(read: () => Promise<T>): Promise<T> =>
      feed.fail
        ? Promise.reject(new Error('the feed cannot be read (test)'))
        : feed.hang
          ? released.then(read)
          : read();
    const subscriptions = subscriptionsOver(
      {
        readFeed: (options) => held(async () => ({ events: await real.readAll(options), more: false })),
        headPosition: () => held(() => real.headPosition()),
        readCheckpoint: (id) => real.readCheckpoint(id),
        storeCheckpoint: (id, position) => real.storeCheckpoint(id, position),
      },
      () => () => undefined,
      60_000,
    );
    const store: EventStore = { ...real, subscribeToAll: (options) => subscriptions.subscribe(options) };
    const { directory, repository } = createTeamWriter(store);
    await directory.start(store);
    closers.push(async () => {
      feed.hang = false;
      release();
      await subscriptions.stopAll();
      await real.close();
      opened.close();
      dir.remove();
    });
    const service = new TeamService({ repository, directory, keySecret: SECRET, maxDirectoryLagMs: MAX_LAG_MS });
    const teamId = await service.createTeam({ name: 'Stale', ownerEmail: 'owner@stale.test' });
    const { key } = await service.issueKey(teamId);
    return { service, directory, key, teamId, feed };
  };

  test('after this process was held past the bound, a valid key is accepted from a read made then, not refused 503', async () => {
    const { service, directory, key, teamId } = await serviceWithKey();
    blockThread(MAX_LAG_MS * 2);
    assert.ok(directory.lagMs() > MAX_LAG_MS, `the directory is stale (${directory.lagMs()} ms)`);
    const owner = await service.authenticate(key);
    assert.equal(owner?.teamId, teamId);
    assert.ok(directory.lagMs() <= MAX_LAG_MS, `the directory read again (${directory.lagMs()} ms)`);
  });

  test('when its reads hang, every key is answered 503 SERVICE_UNAVAILABLE once the refresh wait is over', async () => {
    const { service, directory, key, feed } = await serviceWithKey();
    feed.hang = true;
    blockThread(MAX_LAG_MS * 2);
    await assert.rejects(
      service.authenticate(key),
      (error: unknown) =>
        error instanceof ProblemError &&
        error.code === 'SERVICE_UNAVAILABLE' &&
        /API keys cannot be verified/.test(error.message),
    );
    assert.ok(directory.lagMs() > MAX_LAG_MS, 'no read reached the end meanwhile');
  });

  test('a subscription that fails while a request waits for its read: 503, not the failure itself', async () => {
    const { service, directory, key, feed } = await serviceWithKey();
    feed.fail = true;
    blockThread(MAX_LAG_MS * 2);
    await assert.rejects(
      service.authenticate(key),
      (error: unknown) => error instanceof ProblemError && error.code === 'SERVICE_UNAVAILABLE',
    );
    assert.equal(directory.report(() => false).ready, false, '/readyz says the directory stopped');
  });
});
