import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { createSqliteEventStore } from '../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
import { attachWalSync, WalSync } from '../../shared/adapters/sqlite/wal-sync.ts';
import { eventually } from '../support/eventually.ts';
import { tempDir } from '../support/temp-dir.ts';
import { eventStoreConformance } from './event-store.ts';

eventStoreConformance('sqlite', {
  async fresh(options) {
    const dir = tempDir();
    const opened = openSqlite(dir.path);
    const store = createSqliteEventStore(opened.db, { beforeCommit: options?.beforeCommit });
    return {
      store,
      async cleanup() {
        await store.close();
        opened.close();
        dir.remove();
      },
    };
  },
});

test('sqlite: a database written before categories existed gets the category column and index at open, filled for its rows', async () => {
  const dir = tempDir();
  try {
    // The events table as an earlier version created it, with rows in it.
    const old = new Database(join(dir.path, 'calls.sqlite'));
    old.exec(`CREATE TABLE events (
      position INTEGER PRIMARY KEY AUTOINCREMENT, stream_id TEXT NOT NULL, revision INTEGER NOT NULL, id TEXT NOT NULL,
      type TEXT NOT NULL, data TEXT NOT NULL, metadata TEXT NOT NULL, recorded_at INTEGER NOT NULL, UNIQUE (stream_id, revision))`);
    const insert = old.prepare(
      "INSERT INTO events (stream_id, revision, id, type, data, metadata, recorded_at) VALUES (?, ?, ?, ?, '{}', '{}', 0)",
    );
    insert.run('call-1', 0, '00000000-0000-4000-8000-000000000001', 'CallSubmitted');
    insert.run('team-1', 0, '00000000-0000-4000-8000-000000000002', 'TeamCreated');
    insert.run('call-1', 1, '00000000-0000-4000-8000-000000000003', 'CallCompleted');
    insert.run('nodash', 0, '00000000-0000-4000-8000-000000000004', 'Other');
    old.close();

    const opened = openSqlite(dir.path);
    const store = createSqliteEventStore(opened.db);
    try {
      assert.deepEqual(
        (await store.readAll({ categories: ['call'] })).map((e) => [e.streamId, e.type]),
        [
          ['call-1', 'CallSubmitted'],
          ['call-1', 'CallCompleted'],
        ],
      );
      assert.deepEqual(
        (await store.readAll({ categories: ['team'] })).map((e) => e.position),
        [2n],
      );
      await store.append('team-1', [{ type: 'TeamRenamed', data: {} }], { expectedVersion: 0 });
      assert.deepEqual(
        (await store.readAll({ categories: ['team'] })).map((e) => e.type),
        ['TeamCreated', 'TeamRenamed'],
      );
      const plan = opened.db
        .prepare(
          "EXPLAIN QUERY PLAN SELECT * FROM events WHERE category = 'call' AND position > 0 ORDER BY position LIMIT 10",
        )
        .all() as { detail: string }[];
      assert.ok(
        plan.some((step) => step.detail.includes('events_category_position')),
        `the category read does not use the index: ${JSON.stringify(plan)}`,
      );
    } finally {
      await store.close();
      opened.close();
    }
  } finally {
    dir.remove();
  }
});

/** A store over a fresh database; `close` removes it all. */
const freshStore = (pollMs: number) => {
  const dir = tempDir();
  const opened = openSqlite(dir.path);
  const store = createSqliteEventStore(opened.db, { pollMs });
  return {
    store,
    db: opened.db,
    close: async () => {
      await store.close();
      opened.close();
      dir.remove();
    },
  };
};

/** A store over a fresh database, its follower of the `mine` category, what it handled and passed. */
const categoryFollower = async (pollMs: number) => {
  const { store, db, close } = freshStore(pollMs);
  await store.append('seed-1', [{ type: 'Seed', data: {} }]);
  const handled: string[] = [];
  const passed: bigint[] = [];
  const subscription = store.subscribeToAll({
    categories: ['mine'],
    handler: async (events) => void handled.push(...events.map((e) => e.type)),
    onPassed: async (position) => void passed.push(position),
  });
  await subscription.caughtUp();
  return {
    store,
    db,
    handled,
    passed,
    async close() {
      await subscription.stop();
      await close();
    },
  };
};

test('sqlite: a follower of a category is woken by appends to its category, not by appends to others', async () => {
  // A poll far away: whatever the follower does next, an append woke it.
  const follower = await categoryFollower(60_000);
  try {
    assert.deepEqual(follower.passed, [1n], 'caught up, it stands past the seed');
    await follower.store.append('other-1', [{ type: 'Other', data: {} }]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.deepEqual(follower.passed, [1n], 'an append to another category did not wake it');
    await follower.store.append('mine-1', [{ type: 'Mine', data: {} }]);
    await eventually(() => assert.deepEqual(follower.handled, ['Mine']), { timeoutMs: 10_000 });
  } finally {
    await follower.close();
  }
});

test('sqlite: a follower of a category moves past appends to other categories at its next poll', async () => {
  const follower = await categoryFollower(100);
  try {
    const other = await follower.store.append('other-1', [{ type: 'Other', data: {} }]);
    await eventually(() => assert.equal(follower.passed.at(-1), other.position));
    assert.deepEqual(follower.handled, []);
  } finally {
    await follower.close();
  }
});

test("sqlite: a follower handed the writer's commits gets what the database reads back, odd text included", async () => {
  const follower = await categoryFollower(60_000);
  // A second store over the same connection keeps no stretch of this one: its reads are the database's.
  const fromDisk = createSqliteEventStore(follower.db);
  try {
    const odd = 'a\u0000b\u200b\u202e\ud800 \udfff\u0007' + 'é'.repeat(3);
    await follower.store.append('mine-1', [
      { type: 'Mine', data: { text: odd, big: 1e308, tiny: -5e-324, nested: [{ odd }] }, metadata: { odd } },
      { id: 'event-\u0000-id', type: 'Mine', data: null },
    ]);
    // A stream id SQLite cannot store as it is (a lone surrogate becomes U+FFFD on the way in).
    await follower.store.append('mine-\ud800', [{ type: 'Mine', data: { odd } }]);
    await eventually(() => assert.equal(follower.handled.length, 3), { timeoutMs: 10_000 });
    const served = await follower.store.readAll({ categories: ['mine'] });
    const read = await fromDisk.readAll({ categories: ['mine'] });
    assert.deepEqual(served, read);
    assert.equal(served[2]!.streamId, 'mine-\ufffd');
    assert.equal((served[0]!.data as { text: string }).text, odd);
  } finally {
    await fromDisk.close();
    await follower.close();
  }
});

test('sqlite: events committed but not yet durable are handed to no reader, whether read or handed over by the writer', async () => {
  const { store, db, close } = freshStore(60_000);
  let release!: () => void;
  let held: Promise<void> | undefined;
  // The WAL sync waits while `held` is pending: commits stay committed and not durable.
  class HeldSync extends WalSync {
    override async afterCommit(): Promise<void> {
      if (held) await held;
      return super.afterCommit();
    }
  }
  attachWalSync(db, new HeldSync(`${db.name}-wal`));
  try {
    await store.append('mine-1', [{ type: 'First', data: {} }]);
    // A read brings the stretch to the committed head; the writer continues it from there.
    assert.deepEqual(
      (await store.readAll({ categories: ['mine'] })).map((e) => e.type),
      ['First'],
    );
    held = new Promise((resolve) => (release = resolve));
    await store.append('mine-1', [{ type: 'Second', data: {} }], { deferDurability: true });
    assert.deepEqual(
      (await store.readAll({ categories: ['mine'] })).map((e) => e.type),
      ['First'],
    );
    assert.deepEqual(
      (await store.readAll()).map((e) => e.type),
      ['First'],
    );
    assert.equal(await store.headPosition(), 1n);
    release();
    await eventually(async () =>
      assert.deepEqual(
        (await store.readAll({ categories: ['mine'] })).map((e) => e.type),
        ['First', 'Second'],
      ),
    );
    assert.deepEqual(
      (await store.readAll()).map((e) => e.type),
      ['First', 'Second'],
    );
  } finally {
    release?.();
    await close();
  }
});

test('sqlite: a stretch read once and then left is let go, and a later read still gets every event', async () => {
  const { store, close } = freshStore(60_000);
  try {
    await store.append('mine-1', [{ type: 'First', data: { n: 1 } }]);
    assert.deepEqual(
      (await store.readAll()).map((e) => e.type),
      ['First'],
    );
    await store.append('other-1', [{ type: 'Second', data: { n: 2 } }]);
    // Past the idle time: the next commit lets the whole feed's stretch go instead of continuing it.
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    await store.append('mine-1', [{ type: 'Third', data: { n: 3 } }]);
    await store.append('mine-2', [{ type: 'Fourth', data: { n: 4 } }]);
    assert.deepEqual(
      (await store.readAll()).map((e) => e.type),
      ['First', 'Second', 'Third', 'Fourth'],
    );
    assert.deepEqual(
      (await store.readAll({ after: 2n })).map((e) => e.type),
      ['Third', 'Fourth'],
    );
    assert.deepEqual(
      (await store.readAll({ categories: ['mine'] })).map((e) => e.type),
      ['First', 'Third', 'Fourth'],
    );
  } finally {
    await close();
  }
});

test('sqlite: one commit of more events than a function call takes arguments is handed to a follower whole', async () => {
  const follower = await categoryFollower(60_000);
  try {
    const count = 200_000;
    const events = Array.from({ length: count }, (_, i) => ({ type: 'Mine', data: { i } }));
    const result = await follower.store.append('mine-1', events);
    assert.equal(result.nextExpectedVersion, count - 1);
    await eventually(() => assert.equal(follower.handled.length, count), { timeoutMs: 60_000 });
  } finally {
    await follower.close();
  }
});
