/**
 * Pruning of the SQL event log (docs/decisions/0014-erasure-crypto-shredding.md): a record goes
 * once it is older than the retention and every consumer group of its partition committed past it;
 * a partition no group consumes loses its records by age alone, unless its topic keeps its records
 * (the dead-letter topic); the end offsets never move back.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';
import type { SqlEventLog } from '../../shared/adapters/event-log/sql-event-log.ts';
import { PRUNE_BATCH } from '../../shared/adapters/event-log/sql-event-log-core.ts';
import { eventually } from './event-log-support.ts';

const MINUTE = 60_000;

export const sqlLogPruning = (
  name: string,
  open: (retentionMs: number) => Promise<SqlEventLog>,
  options: { skip?: string } = {},
) =>
  test(
    `SQL event log pruning (${name}): old records every group committed past go; the rest stay`,
    { skip: options.skip, timeout: 30_000 },
    async (t) => {
      const log = await open(MINUTE);
      t.after(() => log.close());
      const consumed = `t-${randomUUID()}`;
      const unconsumed = `t-${randomUUID()}`;
      // As the dead-letter topic: no group consumes it, and its records wait for an operator.
      const kept = `t-${randomUUID()}`;
      const group = `g-${randomUUID()}`;
      await log.ensureTopics([
        { name: consumed, partitions: 1 },
        { name: unconsumed, partitions: 1 },
        { name: kept, partitions: 1, keepRecords: true },
      ]);
      await log.publish(kept, [{ key: 'k', value: 'set aside' }]);
      await log.publish(
        consumed,
        Array.from({ length: 5 }, (_, i) => ({ key: 'k', value: `early ${i}` })),
      );
      await log.publish(unconsumed, [{ key: 'k', value: 'nobody reads me' }]);
      let handled = 0;
      const consumer = await log.consume({ groupId: group, topics: [consumed], handler: async () => void handled++ });
      await eventually(
        async () => (await log.committedOffset(group, consumed, 0)) === 5n,
        'the group committed its five records',
        15_000,
      );
      await consumer.stop();
      await log.publish(consumed, [
        { key: 'k', value: 'late 5' },
        { key: 'k', value: 'late 6' },
      ]);

      assert.equal(await log.prune(new Date()), 0, 'nothing is older than the retention yet');
      // The storage is shared with other tests' topics: at least the five committed records and the unconsumed one.
      assert.ok((await log.prune(new Date(Date.now() + 2 * MINUTE))) >= 6);
      assert.deepEqual(
        (await log.read(consumed, { limit: 100 })).map((r) => [r.offset, r.value]),
        [
          [5n, 'late 5'],
          [6n, 'late 6'],
        ],
      );
      assert.deepEqual(await log.read(unconsumed, { limit: 100 }), []);
      assert.deepEqual(
        (await log.read(kept, { limit: 100 })).map((r) => r.value),
        ['set aside'],
        'a topic made with keepRecords keeps its records whatever their age',
      );
      assert.deepEqual(await log.endOffsets(consumed), [{ partition: 0, offset: 7n }]);
      assert.deepEqual(await log.endOffsets(unconsumed), [{ partition: 0, offset: 1n }]);
      assert.equal(handled, 5);
      // Publishing goes on after the pruned offsets.
      const [position] = await log.publish(unconsumed, [{ key: 'k', value: 'next' }]);
      assert.equal(position!.offset, 1n);
      // A backlog of more than one batch goes whole, a batch at a time.
      const backlog = `t-${randomUUID()}`;
      await log.ensureTopics([{ name: backlog, partitions: 1 }]);
      const many = 2 * PRUNE_BATCH + 7;
      await log.publish(
        backlog,
        Array.from({ length: many }, (_, i) => ({ key: 'k', value: `old ${i}` })),
      );
      assert.ok((await log.prune(new Date(Date.now() + 2 * MINUTE))) >= many);
      assert.deepEqual(await log.read(backlog, { limit: 10 }), []);
      assert.deepEqual(await log.endOffsets(backlog), [{ partition: 0, offset: BigInt(many) }]);
    },
  );
