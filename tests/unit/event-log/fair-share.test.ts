import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fairShare, type Member } from '../../../shared/adapters/event-log/sql-group-membership.ts';
import type { PartitionRef } from '../../../shared/ports/event-log.ts';

const key = (r: PartitionRef) => `${r.topic}/${r.partition}`;
const shares = (members: Member[], counts: Record<string, number>) =>
  new Map(members.map((m) => [m.memberId, fairShare(members, m.memberId, new Map(Object.entries(counts)))]));

describe('fairShare (SQL event log group split)', () => {
  test('every partition goes to exactly one member, and shares differ by at most one', () => {
    for (let n = 1; n <= 5; n++) {
      const members = Array.from({ length: n }, (_, i) => ({ memberId: `m${i}`, topics: ['a', 'b'] }));
      const split = shares(members, { a: 4, b: 3 });
      const all = [...split.values()].flat().map(key);
      assert.equal(all.length, 7, `${n} members`);
      assert.equal(new Set(all).size, 7, `${n} members: a partition went to two members`);
      const sizes = [...split.values()].map((s) => s.length);
      assert.ok(Math.max(...sizes) - Math.min(...sizes) <= 1, `${n} members: unbalanced ${sizes}`);
    }
  });

  test('does not depend on the order members are listed in', () => {
    const members = [
      { memberId: 'c', topics: ['a'] },
      { memberId: 'a', topics: ['a'] },
      { memberId: 'b', topics: ['a'] },
    ];
    const one = shares(members, { a: 6 });
    const other = shares([...members].reverse(), { a: 6 });
    for (const m of members) assert.deepEqual(one.get(m.memberId), other.get(m.memberId));
  });

  test('a topic goes only to the members subscribed to it', () => {
    const members = [
      { memberId: 'm1', topics: ['a'] },
      { memberId: 'm2', topics: ['a', 'b'] },
    ];
    const split = shares(members, { a: 2, b: 3 });
    assert.ok(!split.get('m1')!.some((r) => r.topic === 'b'));
    assert.deepEqual(
      split
        .get('m2')!
        .filter((r) => r.topic === 'b')
        .map((r) => r.partition),
      [0, 1, 2],
    );
  });

  test('a member that is not live gets nothing', () => {
    assert.deepEqual(fairShare([{ memberId: 'm1', topics: ['a'] }], 'gone', new Map([['a', 3]])), []);
  });
});
