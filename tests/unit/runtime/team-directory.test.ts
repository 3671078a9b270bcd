/**
 * The team directory on a real embedded event store: it folds every team's events from the feed,
 * answers key lookups from memory, drops a revoked key once the event arrives, keeps a state only
 * when it is newer (the repository's cache rule), skips feed events it already folded or that
 * follow a gap, starts from its snapshot and reads only what came after, and says when it is not
 * ready.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import { evolveTeam, initialTeamState, type TeamState } from '../../../shared/domain/team/team-state.ts';
import { encodeTeamState } from '../../../shared/domain/team/team-state-codec.ts';
import type { TeamEvent } from '../../../shared/domain/team/team-events.ts';
import type {
  EventStore,
  Json,
  Snapshot,
  SubscribeToAllOptions,
  Subscription,
} from '../../../shared/ports/event-store.ts';
import {
  TEAM_DIRECTORY_SNAPSHOT,
  TeamDirectory,
  teamSnapshotName,
} from '../../../services/ingress/teams/team-directory.ts';
import { eventually } from '../../support/eventually.ts';
import { tempDir } from '../../support/temp-dir.ts';
import { hash, keyIssued, reserved, teamCreated } from '../domain/team/fixtures.ts';

const never = () => false;
const revoked = (keyId: string): TeamEvent => ({
  type: 'ApiKeyRevoked',
  data: { keyId, at: '2026-11-21T10:00:00.000Z' },
});
const createdAs = (teamId: string, capacityMinutes: number): TeamEvent => {
  const created = teamCreated(capacityMinutes);
  return created.type === 'TeamCreated' ? { ...created, data: { ...created.data, teamId } } : created;
};
const fold = (events: TeamEvent[]): TeamState => events.reduce(evolveTeam, initialTeamState);

describe('TeamDirectory', () => {
  const dirs: { remove(): void }[] = [];
  const closers: (() => Promise<void>)[] = [];
  after(async () => {
    for (const close of closers.reverse()) await close();
    for (const dir of dirs) dir.remove();
  });

  /** A fresh store, recording the subscriptions started on it and the snapshots stored. */
  const freshStore = () => {
    const dir = tempDir('team-directory-');
    dirs.push(dir);
    const opened = openSqlite(dir.path);
    const real = createSqliteEventStore(opened.db);
    closers.push(async () => {
      await real.close();
      opened.close();
    });
    const subscriptions: SubscribeToAllOptions[] = [];
    const following: Subscription[] = [];
    /** The directory's own snapshots (the position and the list of teams). */
    const snapshots: Snapshot[] = [];
    /** The teams whose state was stored, one entry per store. */
    const teamStates: string[] = [];
    const store: EventStore = {
      ...real,
      subscribeToAll: (options) => {
        subscriptions.push(options);
        const subscription = real.subscribeToAll(options);
        following.push(subscription);
        return subscription;
      },
      storeSnapshot: (name, snapshot) => {
        if (name === TEAM_DIRECTORY_SNAPSHOT) snapshots.push(snapshot);
        else teamStates.push((snapshot.data as { teamId: string }).teamId);
        return real.storeSnapshot(name, snapshot);
      },
    };
    const append = (teamId: string, events: TeamEvent[]) =>
      real.append(
        `team-${teamId}`,
        events.map((e) => ({ type: e.type, data: e.data as Json })),
      );
    return { store, append, subscriptions, following, snapshots, teamStates };
  };
  const started = async (store: EventStore) => {
    const directory = new TeamDirectory({ snapshotEveryMs: 3_600_000 });
    await directory.start(store);
    closers.push(() => directory.stop());
    return directory;
  };

  test('start folds every team’s events; keys resolve to their team; other streams are ignored', async () => {
    const { store, append } = freshStore();
    await append('t1', [teamCreated(), keyIssued('k1', hash('a')), reserved('c1', 30)]);
    await append('t2', [createdAs('t2', 120), keyIssued('k2', hash('b'))]);
    await store.append('call-t9', [
      { type: 'CallSubmitted', data: {} },
      { type: 'TeamCreated', data: createdAs('t9', 60).data as Json },
    ]);
    const directory = await started(store);
    assert.deepEqual(directory.ownerOf(hash('a')), { teamId: 't1', keyId: 'k1' });
    assert.deepEqual(directory.ownerOf(hash('b')), { teamId: 't2', keyId: 'k2' });
    assert.equal(directory.ownerOf(hash('c')), undefined);
    assert.equal(directory.team('t1')?.remainingMinutes, 570);
    assert.equal(directory.get('t1')?.version, 2);
    assert.deepEqual(
      directory
        .activeTeams()
        .map((t) => t.teamId)
        .sort(),
      ['t1', 't2'],
    );
    assert.equal(directory.team('t3'), undefined);
  });

  test('a key revoked by another writer stops resolving once the event reaches the directory', async () => {
    const { store, append, following } = freshStore();
    await append('t1', [teamCreated(), keyIssued('k1', hash('a')), keyIssued('k2', hash('b'))]);
    const directory = await started(store);
    assert.ok(directory.ownerOf(hash('a')));
    await append('t1', [revoked('k1')]);
    // The directory's own subscription carries it: wait until it has read past the append.
    await following.at(-1)!.caughtUp();
    assert.equal(directory.ownerOf(hash('a')), undefined);
    assert.deepEqual(directory.ownerOf(hash('b')), { teamId: 't1', keyId: 'k2' }, 'the other key still works');
  });

  test('as a state cache: a state replaces the held one only when newer, and the key index follows it', async () => {
    const { store, append } = freshStore();
    const events = [teamCreated(), keyIssued('k1', hash('a'))];
    await append('t1', events);
    const directory = await started(store);
    const held = directory.get('t1')!;
    directory.set('t1', { state: fold([teamCreated()]), version: 0 });
    assert.equal(directory.get('t1'), held, 'an older state is ignored');
    const newer = fold([...events, revoked('k1')]);
    directory.set('t1', { state: newer, version: 2 });
    assert.equal(directory.get('t1')?.version, 2);
    assert.equal(directory.ownerOf(hash('a')), undefined, 'the key index follows the newer state');
  });

  test('feed events already folded by this process’s own commands are not folded twice', async () => {
    const { store, append, following } = freshStore();
    await append('t1', [teamCreated()]);
    const directory = await started(store);
    // This process's command folded the reservation in first (as the repository does)…
    const mine = [teamCreated(), reserved('c1', 60)];
    directory.set('t1', { state: fold(mine), version: 1 });
    // …then it reaches the feed.
    await append('t1', [reserved('c1', 60)]);
    await following.at(-1)!.caughtUp();
    assert.equal(directory.team('t1')?.remainingMinutes, 540, 'reserved once, not twice');
    assert.equal(directory.get('t1')?.version, 1);
  });

  test('a snapshot at stop; the next start begins from it and reads only the events after it', async () => {
    const { store, append, subscriptions, snapshots } = freshStore();
    await append('t1', [teamCreated(), keyIssued('k1', hash('a'))]);
    const first = new TeamDirectory({ snapshotEveryMs: 3_600_000 });
    await first.start(store);
    await first.stop();
    assert.equal(snapshots.length, 1);
    const covered = snapshots[0]!.position;
    assert.ok(covered > 0n);
    await append('t1', [reserved('c1', 15)]);
    const second = await started(store);
    assert.equal(subscriptions.at(-1)!.after, covered, 'follows the feed from the snapshot');
    assert.deepEqual(second.ownerOf(hash('a')), { teamId: 't1', keyId: 'k1' }, 'the snapshot’s state');
    assert.equal(second.team('t1')?.remainingMinutes, 585, 'plus the events after it');
    assert.equal(second.get('t1')?.version, 2);
  });

  test('a feed event past a gap (the directory is behind) is not folded onto the older state', async () => {
    const { store, append, subscriptions } = freshStore();
    await append('t1', [teamCreated(), reserved('c1', 10)]);
    const [, second] = await store.readAll({ maxCount: 10 });
    // A snapshot that holds t1 at revision 0 but covers the feed up to revision 1.
    await store.storeSnapshot(TEAM_DIRECTORY_SNAPSHOT, {
      position: second!.position,
      data: { teams: [{ teamId: 't1', version: 0, state: encodeTeamState(fold([teamCreated()])) }] },
    });
    await append('t1', [reserved('c2', 20)]);
    const directory = await started(store);
    assert.equal(subscriptions.at(-1)!.after, second!.position);
    assert.equal(directory.get('t1')?.version, 0, 'revision 2 does not follow revision 0');
    assert.equal(directory.team('t1')?.remainingMinutes, 600);
  });

  test('snapshot() stores only when the feed moved on since the last one', async () => {
    const { store, append, snapshots, following } = freshStore();
    await append('t1', [teamCreated()]);
    const directory = await started(store);
    await directory.snapshot();
    await directory.snapshot();
    assert.equal(snapshots.length, 1);
    await append('t1', [reserved('c1', 5)]);
    await following.at(-1)!.caughtUp();
    await directory.snapshot();
    assert.equal(snapshots.length, 2);
    assert.ok(snapshots[1]!.position > snapshots[0]!.position);
  });

  test('while a team is dropped for an event that does not decode, no list is stored: a start reads that team again', async () => {
    const { store, append, snapshots, following } = freshStore();
    await append('t1', [teamCreated(), keyIssued('k1', hash('a'))]);
    await append('t2', [createdAs('t2', 60), keyIssued('k2', hash('b'))]);
    const directory = await started(store);
    await directory.snapshot();
    assert.equal(snapshots.length, 1);
    // t1 gets an event this version cannot decode: the team leaves the directory (its keys fail closed).
    await store.append('team-t1', [{ type: 'CapacityAdded', data: { minutes: 'a great many' } }]);
    await append('t2', [reserved('c1', 5)]);
    await following.at(-1)!.caughtUp();
    assert.equal(directory.ownerOf(hash('a')), undefined);
    await directory.snapshot();
    assert.equal(snapshots.length, 1, 'the list before the undecodable event stays the one a start begins from');
    const restarted = await started(store);
    assert.equal(restarted.ownerOf(hash('a')), undefined, 'a start that folds the feed meets the event again');
    assert.deepEqual(restarted.ownerOf(hash('b')), { teamId: 't2', keyId: 'k2' });
  });

  test('snapshot() serves the event loop between teams, and stores every team as it was when it began', async () => {
    const { store, append, snapshots } = freshStore();
    const teamIds = ['t1', 't2', 't3', 't4'];
    for (const teamId of teamIds) await append(teamId, [createdAs(teamId, 600)]);
    const directory = await started(store);
    let turns = 0;
    let snapshotting = true;
    const count = () => {
      if (!snapshotting) return;
      turns++;
      setImmediate(count);
    };
    setImmediate(count);
    await directory.snapshot();
    snapshotting = false;
    assert.ok(turns >= teamIds.length - 1, `the loop ran ${turns} times while ${teamIds.length} teams were encoded`);
    const stored = (snapshots.at(-1)!.data as { teams: { teamId: string }[] }).teams.map((t) => t.teamId);
    assert.deepEqual(stored.sort(), teamIds);
  });

  test('an unreadable snapshot costs only time: the directory folds the feed from the start', async () => {
    const { store, append, subscriptions } = freshStore();
    await append('t1', [teamCreated(), keyIssued('k1', hash('a'))]);
    const state = encodeTeamState(fold([teamCreated()]));
    await store.storeSnapshot(TEAM_DIRECTORY_SNAPSHOT, {
      position: 1n,
      data: { teams: [{ teamId: 't1', version: 'zero', state }] },
    });
    const directory = await started(store);
    assert.equal(subscriptions.at(-1)!.after, 0n);
    assert.deepEqual(directory.ownerOf(hash('a')), { teamId: 't1', keyId: 'k1' });
  });

  test('a snapshot stores again only the teams that changed since the last one, and a start reads them back', async () => {
    const { store, append, teamStates, following, subscriptions } = freshStore();
    for (const teamId of ['t1', 't2', 't3']) await append(teamId, [createdAs(teamId, 600)]);
    const directory = await started(store);
    await directory.snapshot();
    assert.deepEqual([...teamStates].sort(), ['t1', 't2', 't3']);
    await append('t2', [reserved('c1', 30)]);
    await following.at(-1)!.caughtUp();
    await directory.snapshot();
    assert.deepEqual(teamStates.slice(3), ['t2'], 'only the team that changed');
    await append('t3', [reserved('c2', 45)]);
    const second = await started(store);
    assert.ok(subscriptions.at(-1)!.after! > 0n, 'started from the snapshot');
    assert.equal(second.team('t1')?.remainingMinutes, 600);
    assert.equal(second.team('t2')?.remainingMinutes, 570, 'its state as stored the second time');
    assert.equal(second.team('t3')?.remainingMinutes, 555, 'plus the events after the snapshot');
  });

  test('a crash between the teams and the list leaves team states newer than the list: a start skips what they hold', async () => {
    const { store, append, subscriptions } = freshStore();
    await append('t1', [teamCreated(), keyIssued('k1', hash('a'))]);
    const first = await started(store);
    await first.snapshot();
    const list = await store.readSnapshot(TEAM_DIRECTORY_SNAPSHOT);
    await append('t1', [reserved('c1', 15), revoked('k1')]);
    // The state stored as a snapshot in progress would, without the list that follows it.
    const all = (await store.readAll({ categories: ['team'] })).map((e) => ({ type: e.type, data: e.data }));
    await store.storeSnapshot(teamSnapshotName('t1'), {
      position: (await store.headPosition()) - 1n,
      data: { teamId: 't1', version: 2, state: encodeTeamState(fold(all.slice(0, 3) as TeamEvent[])) },
    });
    const second = await started(store);
    assert.equal(subscriptions.at(-1)!.after, list!.position, 'from the list, not from the team state');
    assert.equal(second.get('t1')?.version, 3);
    assert.equal(second.team('t1')?.remainingMinutes, 585);
    assert.equal(second.ownerOf(hash('a')), undefined, 'the revocation after the stored state is folded');
  });

  test('a team state older than the list says is not trusted: the directory folds the feed from the start', async () => {
    const { store, append, subscriptions } = freshStore();
    await append('t1', [teamCreated(), reserved('c1', 10)]);
    await store.storeSnapshot(teamSnapshotName('t1'), {
      position: 2n,
      data: { teamId: 't1', version: 0, state: encodeTeamState(fold([teamCreated()])) },
    });
    await store.storeSnapshot(TEAM_DIRECTORY_SNAPSHOT, {
      position: 2n,
      data: { teams: [{ teamId: 't1', version: 1 }] },
    });
    const directory = await started(store);
    assert.equal(subscriptions.at(-1)!.after, 0n);
    assert.equal(directory.get('t1')?.version, 1);
    assert.equal(directory.team('t1')?.remainingMinutes, 590);
  });

  test('a snapshot stored whole by an earlier version starts the directory; the next one stores each team on its own', async () => {
    const { store, append, subscriptions, teamStates } = freshStore();
    await append('t1', [teamCreated(), keyIssued('k1', hash('a'))]);
    await store.storeSnapshot(TEAM_DIRECTORY_SNAPSHOT, {
      position: 2n,
      data: {
        teams: [
          { teamId: 't1', version: 1, state: encodeTeamState(fold([teamCreated(), keyIssued('k1', hash('a'))])) },
        ],
      },
    });
    await append('t1', [reserved('c1', 20)]);
    const directory = await started(store);
    assert.equal(subscriptions.at(-1)!.after, 2n);
    assert.deepEqual(directory.ownerOf(hash('a')), { teamId: 't1', keyId: 'k1' });
    assert.equal(directory.team('t1')?.remainingMinutes, 580);
    await directory.snapshot();
    assert.deepEqual(teamStates, ['t1']);
    assert.equal(((await store.readSnapshot(teamSnapshotName('t1')))!.data as { version: number }).version, 2);
  });

  test("a team's newer state replaces an older one that another process stored further along the feed", async () => {
    const { store, append, subscriptions } = freshStore();
    await append('t1', [createdAs('t1', 600)]);
    // Process B follows the feed behind A: its handler is held while A moves on.
    let held: Promise<void> | undefined;
    let release!: () => void;
    const lagging: EventStore = {
      ...store,
      subscribeToAll: (options) =>
        store.subscribeToAll({
          ...options,
          handler: async (events) => {
            if (held) await held;
            return options.handler(events);
          },
        }),
    };
    const a = await started(store);
    const b = await started(lagging);
    held = new Promise((resolve) => (release = resolve));
    await append('t2', [createdAs('t2', 600)]);
    await eventually(() => assert.ok(a.get('t2')));
    await a.snapshot();
    // B writes to t1 itself (its repository puts the state straight into its directory), then
    // snapshots while still behind A's position.
    const reservation = reserved('c1', 30);
    await store.append('team-t1', [{ type: reservation.type, data: reservation.data as Json }], { expectedVersion: 0 });
    b.set('t1', { state: evolveTeam(b.get('t1')!.state, reservation), version: 1 });
    await b.snapshot();
    release();
    held = undefined;
    await eventually(() => assert.ok(b.get('t2')));
    await b.snapshot();
    const list = await store.readSnapshot(TEAM_DIRECTORY_SNAPSHOT);
    const c = await started(store);
    assert.equal(subscriptions.at(-1)!.after, list!.position, 'from the list, not from the start of the feed');
    assert.equal(c.get('t1')?.version, 1);
    assert.equal(c.team('t1')?.remainingMinutes, 570);
  });

  test('readiness: not ready before it starts, ready when following the feed; lag counts from the last read that reached the end', async () => {
    const { store, following } = freshStore();
    const directory = new TeamDirectory({ snapshotEveryMs: 3_600_000 });
    assert.deepEqual(directory.report(never), { ready: false, reason: 'not started' });
    assert.equal(directory.lagMs(), 0);
    await directory.start(store);
    closers.push(() => directory.stop());
    const report = directory.report(never);
    assert.equal(report.ready, true);
    const caughtUpAt = following.at(-1)!.status().caughtUpAt!.getTime();
    assert.equal(directory.lagMs(caughtUpAt + 5000), 5000);
    const stale = directory.report(never, -1);
    assert.equal(stale.ready, false, 'more lag than allowed');
  });

  test('a feed that fails on an error it does not retry itself is followed again from the last applied event', async () => {
    const { store, append } = freshStore();
    await append('t1', [teamCreated(), keyIssued('k1', hash('a'))]);
    let failNext = false;
    const flaky: EventStore = {
      ...store,
      subscribeToAll: (options) =>
        store.subscribeToAll({
          ...options,
          handler: async (events) => {
            if (failNext) {
              failNext = false;
              throw new Error('a batch the subscription does not retry (test)');
            }
            return options.handler(events);
          },
        }),
    };
    const failures: unknown[] = [];
    const directory = new TeamDirectory({
      snapshotEveryMs: 3_600_000,
      onFailed: (error) => failures.push(error),
    });
    await directory.start(flaky);
    closers.push(() => directory.stop());
    failNext = true;
    await append('t1', [keyIssued('k2', hash('b'))]);
    await eventually(() => assert.equal(failures.length, 1, 'the feed failed once'), { timeoutMs: 10_000 });
    await eventually(() => assert.deepEqual(directory.ownerOf(hash('b')), { teamId: 't1', keyId: 'k2' }), {
      timeoutMs: 10_000,
    });
    assert.equal(directory.report(() => false).ready, true, JSON.stringify(directory.report(() => false)));
  });
});
