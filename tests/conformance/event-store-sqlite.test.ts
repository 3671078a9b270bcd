import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { createSqliteEventStore } from '../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
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
