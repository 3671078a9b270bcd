import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { createSqliteEventLog } from '../../shared/adapters/event-log/sql-event-log.ts';
import { SqliteDriver } from '../../shared/adapters/event-log/sql-event-log-sqlite.ts';
import { SqlGroupMembership } from '../../shared/adapters/event-log/sql-group-membership.ts';
import { openSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
import { eventLogConformance } from './event-log.ts';
import { eventually } from './event-log-support.ts';
import { sqlLogPruning } from './sql-event-log-pruning.ts';
import { sqlLogReadSized } from './sql-event-log-read.ts';

const dir = mkdtempSync(join(tmpdir(), 'event-log-sqlite-'));
const sqlite = openSqlite(dir);
after(() => {
  sqlite.close();
  rmSync(dir, { recursive: true, force: true });
});

// Every instance shares the one connection, like two services in one process.
eventLogConformance('sqlite', async () => ({ log: createSqliteEventLog(sqlite.db, { sessionTimeoutMs: 1000 }) }));

void sqlLogPruning('sqlite', async (retentionMs) =>
  createSqliteEventLog(sqlite.db, { sessionTimeoutMs: 1000, retentionMs }),
);

void sqlLogReadSized('sqlite', async () => createSqliteEventLog(sqlite.db, { sessionTimeoutMs: 1000 }));

describe('SQL event log: partition leases', () => {
  test(
    'a member that stopped heartbeating loses its partitions, and its late commits are refused',
    { timeout: 30_000 },
    async (t) => {
      const log = createSqliteEventLog(sqlite.db, { sessionTimeoutMs: 1000 });
      t.after(() => log.close());
      const topic = `t-${randomUUID()}`;
      const group = `g-${randomUUID()}`;
      const partitions = [0, 1].map((partition) => ({ topic, partition }));
      await log.ensureTopics([{ name: topic, partitions: 2 }]);
      const member = (memberId: string) =>
        new SqlGroupMembership(new SqliteDriver(sqlite.db), {
          groupId: group,
          memberId,
          topics: [topic],
          sessionTimeoutMs: 60_000,
        });

      // A member that will crash: registered, holding both leases.
      const ghost = member('ghost');
      await ghost.heartbeat();
      assert.deepEqual(await ghost.acquire(partitions), partitions);
      assert.deepEqual(await member('rival').acquire(partitions), [], 'a lease of a live member was taken');

      const handled = new Set<string>();
      const consumer = await log.consume({
        groupId: group,
        topics: [topic],
        handler: async (r) => void handled.add(r.value),
      });
      t.after(() => consumer.stop());
      await log.publish(
        topic,
        Array.from({ length: 20 }, (_, i) => ({ key: `k${i}`, value: `v${i}` })),
      );

      // The ghost's session ends (as if 60 s passed without a heartbeat).
      sqlite.db
        .prepare('UPDATE log_members SET expires_at_ms = 0 WHERE group_id = ? AND member_id = ?')
        .run(group, 'ghost');
      await eventually(() => consumer.assignment().length === 2, 'the live member took both partitions', 10_000);
      await eventually(() => handled.size === 20, 'the live member handled every record', 10_000);
      await eventually(
        async () => (await log.committedOffset(group, topic, 0)) !== undefined,
        'the live member committed',
        10_000,
      );

      const before = await log.committedOffset(group, topic, 0);
      const refused = await ghost.commit([{ ref: partitions[0]!, offset: 0n }]);
      assert.deepEqual(refused, [partitions[0]], 'a member without the lease committed');
      assert.equal(await log.committedOffset(group, topic, 0), before);
    },
  );
});
