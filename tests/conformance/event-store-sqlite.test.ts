import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { createSqliteEventStore } from '../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
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

/** A store over a fresh database, its follower of the `mine` category, what it handled and passed. */
const categoryFollower = async (pollMs: number) => {
  const dir = tempDir();
  const opened = openSqlite(dir.path);
  const store = createSqliteEventStore(opened.db, { pollMs });
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
    handled,
    passed,
    async close() {
      await subscription.stop();
      await store.close();
      opened.close();
      dir.remove();
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
