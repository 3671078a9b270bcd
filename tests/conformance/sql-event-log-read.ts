/**
 * A read of the SQL event log fetches exactly the records it sized against its byte bound: records
 * published between its two queries (to a partition that sorts before the last one it sized) do not
 * take the places of sized ones unmeasured, each possibly as large as a call.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import { partitionForKey } from '../../shared/adapters/event-log/partitioner.ts';
import type { SqlEventLog } from '../../shared/adapters/event-log/sql-event-log.ts';

/** The first key of the form `k<n>` that lands on `partition` of `partitions`. */
const keyOn = (partition: number, partitions: number): string => {
  for (let n = 0; ; n++) if (partitionForKey(`k${n}`, partitions) === partition) return `k${n}`;
};

export const sqlLogReadSized = (name: string, open: () => Promise<SqlEventLog>, options: { skip?: string } = {}) => {
  test(
    `SQL event log read (${name}): one read takes a record of each of 1,000 partitions`,
    { skip: options.skip, timeout: 60_000 },
    async (t) => {
      const log = await open();
      t.after(() => log.close());
      const topic = `t-${randomUUID()}`;
      const partitions = 1_000;
      await log.ensureTopics([{ name: topic, partitions }]);
      await log.publish(
        topic,
        Array.from({ length: partitions }, (_, partition) => ({
          key: keyOn(partition, partitions),
          value: `p${partition}`,
        })),
      );
      const read = await log.read(topic, { limit: 1_000 });
      assert.deepEqual(
        read.map((r) => r.value),
        Array.from({ length: partitions }, (_, partition) => `p${partition}`),
      );
    },
  );
  test(
    `SQL event log read (${name}): records published while it reads do not take the places of the records it sized`,
    { skip: options.skip, timeout: 30_000 },
    async (t) => {
      const log = await open();
      t.after(() => log.close());
      const topic = `t-${randomUUID()}`;
      await log.ensureTopics([{ name: topic, partitions: 2 }]);
      const [first, second] = [keyOn(0, 2), keyOn(1, 2)];
      await log.publish(topic, [{ key: first, value: 'p0 small' }]);
      await log.publish(
        topic,
        ['p1 a', 'p1 b', 'p1 c'].map((value) => ({ key: second, value })),
      );

      // Between the read's sizing and its fetch, three large records arrive on partition 0.
      const driver = (log as unknown as { driver: { query: (sql: string, params?: unknown[]) => Promise<unknown[]> } })
        .driver;
      const query = driver.query.bind(driver);
      let published = false;
      driver.query = async (sql, params) => {
        const rows = await query(sql, params);
        if (!published && /octet_length\(key\)/.test(sql)) {
          published = true;
          await log.publish(
            topic,
            ['x', 'y', 'z'].map((letter) => ({ key: first, value: letter.repeat(100_000) })),
          );
        }
        return rows;
      };

      const read = await log.read(topic, { limit: 4, maxBytes: 1_000 });
      assert.ok(published, 'the records were published between the two queries');
      assert.deepEqual(
        read.map((r) => [r.partition, r.value]),
        [
          [0, 'p0 small'],
          [1, 'p1 a'],
          [1, 'p1 b'],
          [1, 'p1 c'],
        ],
      );
    },
  );
};
