/**
 * The event store conformance suite: every adapter passes it unchanged.
 * `eventStoreConformance(name, factory)` is called once per adapter from a `*.test.ts` file.
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { after, describe, test } from 'node:test';
import {
  type EventStore,
  type ExpectedVersion,
  ExpectedVersionConflictError,
  type NewEvent,
  type RecordedEvent,
} from '../../shared/ports/event-store.ts';
import { FEED_READ_MAX_BYTES } from '../../shared/adapters/event-store/polling-subscription.ts';
import { eventually } from '../support/eventually.ts';

export interface StoreHandle {
  store: EventStore;
  /** Closes the store and removes what the test created. */
  cleanup?: () => Promise<void>;
}

export interface EventStoreFactory {
  /** A store over fresh, empty storage. `beforeCommit` is awaited inside each write transaction. */
  fresh(options?: { beforeCommit?: () => Promise<void> }): Promise<StoreHandle>;
  /**
   * A second store over the same storage as `handle` (another process's view), or undefined when the
   * adapter allows one opener only (SQLite); late-commit tests then use the one store.
   */
  sameStorage?(handle: StoreHandle): Promise<StoreHandle>;
}

export interface EventStoreConformanceOptions {
  skip?: string;
}

const event = (type: string, n: number): NewEvent => ({
  type,
  data: { n, text: `héllo ${n}` },
  metadata: { by: 'test' },
});
const stream = (prefix = 'call') => `${prefix}-${randomUUID()}`;
/** A category no other test (or earlier run on a shared server) has used. */
const category = () => `c${randomUUID().replaceAll('-', '')}`;

export const eventStoreConformance = (
  name: string,
  factory: EventStoreFactory,
  options: EventStoreConformanceOptions = {},
) => {
  describe(`event store conformance: ${name}`, { skip: options.skip }, () => {
    const handles: StoreHandle[] = [];
    const open = async (o?: { beforeCommit?: () => Promise<void> }) => {
      const handle = await factory.fresh(o);
      handles.push(handle);
      return handle;
    };
    after(async () => {
      for (const h of handles.reverse()) await h.cleanup?.();
    });

    test('append then read a stream back in order, with revisions from 0', async () => {
      const { store } = await open();
      const id = stream();
      const result = await store.append(id, [event('A', 1), event('B', 2)], { expectedVersion: 'no_stream' });
      assert.equal(result.nextExpectedVersion, 1);
      await store.append(id, [event('C', 3)], { expectedVersion: 1 });
      const read = await store.readStream(id);
      assert.deepEqual(
        read.map((e) => [e.type, e.revision, e.data]),
        [
          ['A', 0, { n: 1, text: 'héllo 1' }],
          ['B', 1, { n: 2, text: 'héllo 2' }],
          ['C', 2, { n: 3, text: 'héllo 3' }],
        ],
      );
      assert.deepEqual(read[0]!.metadata, { by: 'test' });
      assert.ok(read[0]!.recordedAt instanceof Date && !Number.isNaN(read[0]!.recordedAt.getTime()));
      assert.ok(read[0]!.position < read[1]!.position && read[1]!.position < read[2]!.position);
      assert.equal(result.position, read[1]!.position);
    });

    test('an unknown stream reads as empty', async () => {
      const { store } = await open();
      assert.deepEqual(await store.readStream(stream()), []);
    });

    test('readStream honours fromRevision and maxCount', async () => {
      const { store } = await open();
      const id = stream();
      await store.append(
        id,
        [1, 2, 3, 4, 5].map((n) => event('E', n)),
      );
      const read = await store.readStream(id, { fromRevision: 1, maxCount: 3 });
      assert.deepEqual(
        read.map((e) => e.revision),
        [1, 2, 3],
      );
    });

    test('the given event id is kept; a missing one is generated', async () => {
      const { store } = await open();
      const id = stream();
      const given = randomUUID();
      await store.append(id, [{ ...event('A', 1), id: given }, event('B', 2)]);
      const [a, b] = await store.readStream(id);
      assert.equal(a!.id, given);
      assert.match(b!.id, /^[0-9a-f-]{36}$/);
    });

    test('expected version: no_stream, exact, stream_exists and any', async () => {
      const { store } = await open();
      const id = stream();
      await assert.rejects(
        store.append(id, [event('A', 1)], { expectedVersion: 'stream_exists' }),
        ExpectedVersionConflictError,
      );
      await assert.rejects(store.append(id, [event('A', 1)], { expectedVersion: 0 }), ExpectedVersionConflictError);
      await store.append(id, [event('A', 1)], { expectedVersion: 'no_stream' });
      const conflict = await store
        .append(id, [event('A', 1)], { expectedVersion: 'no_stream' })
        .catch((e: unknown) => e);
      assert.ok(conflict instanceof ExpectedVersionConflictError);
      assert.equal(conflict.streamId, id);
      assert.equal(conflict.actual, 0);
      assert.equal(conflict.code, 'EXPECTED_VERSION_CONFLICT');
      await assert.rejects(store.append(id, [event('B', 2)], { expectedVersion: 5 }), ExpectedVersionConflictError);
      await store.append(id, [event('B', 2)], { expectedVersion: 0 });
      await store.append(id, [event('C', 3)], { expectedVersion: 'stream_exists' });
      await store.append(id, [event('D', 4)], { expectedVersion: 'any' });
      assert.deepEqual(
        (await store.readStream(id)).map((e) => e.type),
        ['A', 'B', 'C', 'D'],
      );
    });

    test('a conflicting append writes nothing', async () => {
      const { store } = await open();
      const id = stream();
      await store.append(id, [event('A', 1)]);
      await assert.rejects(store.append(id, [event('X', 2), event('Y', 3)], { expectedVersion: 'no_stream' }));
      assert.deepEqual(
        (await store.readStream(id)).map((e) => e.type),
        ['A'],
      );
    });

    test('concurrent appends with the same expected version: exactly one wins, the others conflict', async () => {
      const { store } = await open();
      const id = stream();
      await store.append(id, [event('A', 0)]);
      const results = await Promise.allSettled(
        Array.from({ length: 20 }, (_, n) => store.append(id, [event('B', n)], { expectedVersion: 0 })),
      );
      assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
      for (const r of results) if (r.status === 'rejected') assert.ok(r.reason instanceof ExpectedVersionConflictError);
      assert.equal((await store.readStream(id)).length, 2);
    });

    test('many concurrent appends to different streams all land (group commit keeps each check)', async () => {
      const { store } = await open();
      const ids = Array.from({ length: 200 }, () => stream());
      const results = await Promise.all(
        ids.map((id, n) => store.append(id, [event('A', n)], { expectedVersion: 'no_stream' })),
      );
      assert.equal(new Set(results.map((r) => r.position)).size, 200);
      for (const id of ids.slice(0, 10)) assert.equal((await store.readStream(id)).length, 1);
    });

    test('appends issued together, mixing streams, sizes and expected versions, each answer what they wrote', async () => {
      const { store } = await open();
      const [a, b, c] = [stream(), stream(), stream()];
      await store.append(b, [event('B0', 0)]);
      // Issued in one turn, so a group-committing store decides them in one batch. Which of two
      // appends to one stream wins may depend on the order the store takes them in; what each
      // answers must match what it wrote.
      const requests: Array<[string, string[], ExpectedVersion]> = [
        [a, ['A0', 'A1', 'A2'], 'no_stream'],
        [b, ['B1'], 0],
        [b, ['Bx'], 0],
        [a, ['A3', 'A4'], 2],
        [c, ['Cx'], 'stream_exists'],
        [c, ['C0'], 'any'],
        [b, ['B2'], 'stream_exists'],
      ];
      const results = await Promise.allSettled(
        requests.map(([id, types, expectedVersion]) =>
          store.append(
            id,
            types.map((type, n) => event(type, n)),
            { expectedVersion },
          ),
        ),
      );
      const feed = (await store.readAll({ maxCount: 10_000 })).filter((e) => [a, b, c].includes(e.streamId));
      results.forEach((result, n) => {
        const [id, types] = requests[n]!;
        const written = feed.filter((e) => types.includes(e.type));
        if (result.status === 'rejected') {
          assert.ok(result.reason instanceof ExpectedVersionConflictError, `append ${n}: ${String(result.reason)}`);
          assert.equal(written.length, 0, `append ${n} conflicted but wrote`);
          return;
        }
        assert.deepEqual(
          written.map((e) => [e.streamId, e.type]),
          types.map((type) => [id, type]),
          `append ${n}: its events, in order, in its stream`,
        );
        const revisions = written.map((e) => e.revision);
        assert.deepEqual(
          revisions,
          revisions.map((_, k) => revisions[0]! + k),
          `append ${n}: consecutive revisions`,
        );
        assert.equal(result.value.position, written.at(-1)!.position, `append ${n}: position of its last event`);
        assert.equal(result.value.nextExpectedVersion, written.at(-1)!.revision, `append ${n}: its last revision`);
      });
      // Of the two appends to b at version 0 exactly one wins; b's third append always lands.
      assert.equal([results[1], results[2]].filter((r) => r?.status === 'fulfilled').length, 1);
      assert.equal(results[6]!.status, 'fulfilled');
      assert.equal(results[5]!.status, 'fulfilled');
      for (const id of [a, b, c]) {
        const revisions = (await store.readStream(id)).map((e) => e.revision);
        assert.deepEqual(
          revisions,
          revisions.map((_, k) => k),
          `${id}: revisions from 0 without gaps`,
        );
      }
    });

    test('readAll returns the global feed in position order after a position', async () => {
      const { store } = await open();
      const [s1, s2] = [stream(), stream()];
      await store.append(s1, [event('A', 1)]);
      await store.append(s2, [event('B', 2)]);
      await store.append(s1, [event('C', 3)]);
      const all = await store.readAll({ maxCount: 10_000 });
      const mine = all.filter((e) => e.streamId === s1 || e.streamId === s2);
      assert.deepEqual(
        mine.map((e) => e.type),
        ['A', 'B', 'C'],
      );
      const afterFirst = await store.readAll({ after: mine[0]!.position, maxCount: 10_000 });
      assert.deepEqual(
        afterFirst.filter((e) => e.streamId === s1 || e.streamId === s2).map((e) => e.type),
        ['B', 'C'],
      );
      assert.equal((await store.readAll({ maxCount: 1 })).length, 1);
    });

    test('subscribeToAll catches up, then receives live events, each exactly once in order', async () => {
      const { store } = await open();
      const id = stream();
      await store.append(id, [event('A', 1), event('B', 2)]);
      const seen: RecordedEvent[] = [];
      const sub = store.subscribeToAll({ batchSize: 1, handler: async (events) => void seen.push(...events) });
      await sub.caughtUp();
      await store.append(id, [event('C', 3)]);
      await eventually(() =>
        assert.deepEqual(
          seen.filter((e) => e.streamId === id).map((e) => e.type),
          ['A', 'B', 'C'],
        ),
      );
      await sub.stop();
      assertStrictlyIncreasing(seen);
    });

    test('a snapshot is read back as stored, and an older one never replaces a newer one', async () => {
      const { store } = await open();
      const name = `snap-${randomUUID()}`;
      assert.equal(await store.readSnapshot(name), undefined);
      const data = { calls: [{ callId: 'c1', name: 'Müller 🎧 "quoted"', nested: { n: 1.5, list: [true, null] } }] };
      await store.storeSnapshot(name, { position: 10n, data });
      assert.deepEqual(await store.readSnapshot(name), { position: 10n, data });
      await store.storeSnapshot(name, { position: 7n, data: { stale: true } });
      assert.deepEqual(
        await store.readSnapshot(name),
        { position: 10n, data },
        'an older snapshot was stored over a newer one',
      );
      await store.storeSnapshot(name, { position: 12n, data: { calls: [] } });
      assert.deepEqual(await store.readSnapshot(name), { position: 12n, data: { calls: [] } });
    });

    test('headPosition is the position of the last committed event', async () => {
      const { store } = await open();
      const before = await store.headPosition();
      const appended = await store.append(stream(), [event('A', 1), event('B', 2)]);
      assert.ok(appended.position > before, `head ${before} before an append that ended at ${appended.position}`);
      assert.equal(await store.headPosition(), appended.position);
    });

    test('a durable checkpoint resumes a subscription after its last handled batch', async () => {
      const { store } = await open();
      const id = stream();
      const checkpointId = `cp-${randomUUID()}`;
      await store.append(id, [event('A', 1), event('B', 2)]);
      const first: string[] = [];
      const sub1 = store.subscribeToAll({
        checkpointId,
        handler: async (events) => void first.push(...events.filter((e) => e.streamId === id).map((e) => e.type)),
      });
      await sub1.caughtUp();
      await sub1.stop();
      assert.deepEqual(first, ['A', 'B']);
      assert.equal(await store.readCheckpoint(checkpointId), sub1.position);
      await store.append(id, [event('C', 3)]);
      const second: string[] = [];
      const sub2 = store.subscribeToAll({
        checkpointId,
        handler: async (events) => void second.push(...events.filter((e) => e.streamId === id).map((e) => e.type)),
      });
      await sub2.caughtUp();
      await sub2.stop();
      assert.deepEqual(second, ['C']);
    });

    test('a stop that comes while a batch is handled still checkpoints it: the next start does not hand it again', async () => {
      const { store } = await open();
      const id = stream();
      const checkpointId = `cp-${randomUUID()}`;
      await store.append(id, [event('A', 1), event('B', 2)]);
      let stopping: Promise<void> | undefined;
      const first: string[] = [];
      const sub1 = store.subscribeToAll({
        checkpointId,
        handler: async (events) => {
          const mine = events.filter((e) => e.streamId === id);
          if (mine.length === 0) return;
          // The stop comes while this batch is handled (a SIGTERM mid-batch); the batch finishes.
          stopping = sub1.stop();
          await new Promise((resolve) => setTimeout(resolve, 20));
          first.push(...mine.map((e) => e.type));
        },
      });
      await eventually(() => assert.ok(stopping, 'the batch was handed'));
      await stopping;
      assert.deepEqual(first, ['A', 'B']);
      await store.append(id, [event('C', 3)]);
      const second: string[] = [];
      const sub2 = store.subscribeToAll({
        checkpointId,
        handler: async (events) => void second.push(...events.filter((e) => e.streamId === id).map((e) => e.type)),
      });
      await sub2.caughtUp();
      await sub2.stop();
      assert.deepEqual(second, ['C'], 'the batch handled before the stop is not handed again');
    });

    test('a handler error stops the subscription and is reported through done', async () => {
      const { store } = await open();
      await store.append(stream(), [event('A', 1)]);
      const sub = store.subscribeToAll({
        handler: async () => {
          throw new Error('projection broke');
        },
      });
      await assert.rejects(sub.done, /projection broke/);
    });

    test('readAll with categories returns only those categories, in feed order with their global positions', async () => {
      const { store } = await open();
      const [a, b, c] = [category(), category(), category()];
      const [a1, b1, c1, a2] = [
        `${a}-${randomUUID()}`,
        `${b}-${randomUUID()}`,
        `${c}-${randomUUID()}`,
        `${a}-${randomUUID()}`,
      ];
      await store.append(a1, [event('A1', 1)]);
      await store.append(b1, [event('B1', 2)]);
      await store.append(c1, [event('C1', 3)]);
      await store.append(a2, [event('A2', 4), event('A3', 5)]);
      await store.append(`${a}x-${randomUUID()}`, [event('NOT_A', 6)]); // a longer category sharing the prefix
      const whole = await store.readAll({ maxCount: 100_000 });
      const onlyA = await store.readAll({ categories: [a], maxCount: 100_000 });
      assert.deepEqual(
        onlyA.map((e) => e.type),
        ['A1', 'A2', 'A3'],
      );
      const positionOf = new Map(whole.map((e) => [e.id, e.position]));
      for (const e of onlyA)
        assert.equal(e.position, positionOf.get(e.id), 'a category read gives the global position');
      assert.deepEqual(
        (await store.readAll({ categories: [c, a], maxCount: 100_000 })).map((e) => e.type),
        ['A1', 'C1', 'A2', 'A3'],
      );
      assert.deepEqual(
        (await store.readAll({ categories: [a], after: onlyA[0]!.position, maxCount: 1 })).map((e) => e.type),
        ['A2'],
      );
      assert.deepEqual(await store.readAll({ categories: [category()] }), []);
      assert.deepEqual(
        (await store.readStream(a2)).map((e) => e.type),
        ['A2', 'A3'],
      );
    });

    test('paging through several categories in any page size gives each of their events once, in feed order, beside readers of one of them', async () => {
      const { store } = await open();
      const [a, b, other] = [category(), category(), category()];
      // Uneven runs of each category, so a page often ends inside a run of one of them.
      const plan = 'aabaaabbbabaaoaabbbbba'.split('');
      for (const [i, which] of plan.entries()) {
        const cat = which === 'a' ? a : which === 'b' ? b : other;
        await store.append(`${cat}-${randomUUID()}`, [event(`${which}${i}`, i)]);
      }
      const expected = plan.flatMap((which, i) => (which === 'o' ? [] : [`${which}${i}`]));
      for (const pageSize of [1, 2, 3, 5, 8]) {
        const seen: string[] = [];
        let after = 0n;
        for (;;) {
          // A follower of one category reads first, at its own position, as the projections do.
          await store.readAll({ categories: [a], after: 0n, maxCount: pageSize + 1 });
          const page = await store.readAll({ categories: [b, a], after, maxCount: pageSize });
          if (page.length === 0) break;
          assert.ok(page.length <= pageSize);
          seen.push(...page.map((e) => e.type));
          after = page[page.length - 1]!.position;
        }
        assert.deepEqual(seen, expected, `pages of ${pageSize}`);
      }
    });

    test('a read hands about 4 MB of events at most (at least one, however large); pages and a subscription still give each event once, in order', async () => {
      const { store } = await open();
      const [a, b] = [category(), category()];
      // About 1.47 MB each: incompressible text, and text a server stores compressed to a fraction
      // of what it hands out (the budget counts what is read, not what is stored).
      const large = (n: number) => ({
        n,
        text: n % 2 === 0 ? randomBytes(1_100_000).toString('base64') : `${n} `.repeat(735_000),
      });
      const expected: string[] = [];
      for (let i = 0; i < 7; i++) {
        await store.append(`${i % 2 === 0 ? a : b}-${randomUUID()}`, [{ type: `L${i}`, data: large(i) }]);
        expected.push(`L${i}`);
      }
      // One event larger than the budget by itself is still read, alone.
      await store.append(`${a}-${randomUUID()}`, [
        { type: 'L7', data: { text: randomBytes(3_500_000).toString('base64') } },
      ]);
      await store.append(`${b}-${randomUUID()}`, [event('S8', 8)]);
      expected.push('L7', 'S8');
      const mine = (events: RecordedEvent[]) =>
        events.filter((e) => e.streamId.startsWith(a) || e.streamId.startsWith(b));
      for (const categories of [undefined, [a, b], [b, a]]) {
        const seen: string[] = [];
        let after = 0n;
        for (;;) {
          const page = await store.readAll({ after, maxCount: 100, ...(categories ? { categories } : {}) });
          if (page.length === 0) break;
          const bytes = page.reduce((sum, e) => sum + JSON.stringify(e.data).length, 0);
          assert.ok(
            page.length === 1 || bytes <= FEED_READ_MAX_BYTES * 1.25,
            `a page of ${page.length} events, ${bytes} bytes`,
          );
          seen.push(...mine(page).map((e) => e.type));
          after = page[page.length - 1]!.position;
        }
        assert.deepEqual(seen, expected, `pages of ${categories ? categories.join(',') : 'the whole feed'}`);
      }
      const batches: string[][] = [];
      const sub = store.subscribeToAll({
        categories: [a, b],
        handler: async (events) => void batches.push(mine([...events]).map((e) => e.type)),
      });
      await sub.caughtUp();
      await sub.stop();
      assert.deepEqual(batches.flat(), expected);
      assert.ok(batches.length >= 4, `${batches.length} batches`);
    });

    test('a read of many events a server compresses well still stops at its budget', async () => {
      const { store } = await open();
      const c = category();
      // 160 KB of one letter each, stored in about 1 KB: 60 of them are 9.6 MB as read.
      for (let i = 0; i < 60; i++)
        await store.append(`${c}-${randomUUID()}`, [{ type: `R${i}`, data: { text: 'a'.repeat(160_000) } }]);
      const page = await store.readAll({ categories: [c], maxCount: 500 });
      const bytes = page.reduce((sum, e) => sum + JSON.stringify(e.data).length, 0);
      assert.ok(
        page.length < 60 && bytes <= FEED_READ_MAX_BYTES * 1.25,
        `one read: ${page.length} events, ${bytes} bytes`,
      );
    });

    test('a read of several categories whose large events are committed but not yet durable hands what is durable, and the rest once it is', async () => {
      const { store } = await open();
      const [a, b] = [category(), category()];
      await store.append(`${b}-${randomUUID()}`, [event('B0', 0)]);
      // Three in one append, more than one read's budget: committed, and on the embedded store not
      // yet durable when the append resolves (the WAL's sync comes after).
      await store.append(
        `${a}-${randomUUID()}`,
        [1, 2, 3].map((n) => ({ type: `A${n}`, data: { text: randomBytes(1_100_000).toString('base64') } })),
        { deferDurability: true },
      );
      const first = await store.readAll({ categories: [a, b], maxCount: 100 });
      assert.equal(first[0]?.type, 'B0');
      const seen: string[] = [];
      await eventually(async () => {
        seen.length = 0;
        for (let after = 0n; ;) {
          const page = await store.readAll({ categories: [a, b], after, maxCount: 100 });
          if (page.length === 0) break;
          seen.push(...page.map((e) => e.type));
          after = page[page.length - 1]!.position;
        }
        assert.deepEqual(seen, ['B0', 'A1', 'A2', 'A3']);
      });
    });

    test('categories must name categories: an empty list or a name with a dash is refused', async () => {
      const { store } = await open();
      await assert.rejects(store.readAll({ categories: [] }), TypeError);
      await assert.rejects(store.readAll({ categories: ['call-1'] }), TypeError);
      assert.throws(() => store.subscribeToAll({ categories: ['$ce'], handler: async () => {} }), TypeError);
    });

    test('subscribeToAll with categories hands only those categories, catches up, follows live, and its checkpoint reaches the head', async () => {
      const { store } = await open();
      const [mine, other] = [category(), category()];
      const mineId = `${mine}-${randomUUID()}`;
      await store.append(mineId, [event('M1', 1)]);
      await store.append(`${other}-${randomUUID()}`, [event('O1', 2)]);
      const checkpointId = `cp-${randomUUID()}`;
      const seen: RecordedEvent[] = [];
      const passed: bigint[] = [];
      const sub = store.subscribeToAll({
        categories: [mine],
        checkpointId,
        batchSize: 1,
        onPassed: async (position) => void passed.push(position),
        handler: async (events) => void seen.push(...events),
      });
      await sub.caughtUp();
      assert.deepEqual(
        seen.map((e) => e.type),
        ['M1'],
      );
      await store.append(`${other}-${randomUUID()}`, [event('O2', 3)]);
      await store.append(mineId, [event('M2', 4)]);
      const last = await store.append(`${other}-${randomUUID()}`, [event('O3', 5)]);
      await eventually(() =>
        assert.deepEqual(
          seen.map((e) => e.type),
          ['M1', 'M2'],
        ),
      );
      await sub.caughtUp();
      assert.ok(
        seen.every((e) => e.streamId === mineId),
        'an event of another category was handed',
      );
      assertStrictlyIncreasing(seen);
      // Caught up, it stands at the head of the whole feed, though the last events were not its own.
      await eventually(async () => assert.equal(await store.readCheckpoint(checkpointId), last.position));
      await eventually(() => assert.equal(sub.position, last.position));
      assert.equal(passed.at(-1), last.position, 'onPassed was told the head it moved to');
      assertStrictlyIncreasing(passed.map((position) => ({ position }) as RecordedEvent));
      await sub.stop();
      // Resumed from the checkpoint, it hands only what came after.
      await store.append(mineId, [event('M3', 6)]);
      const resumed: string[] = [];
      const again = store.subscribeToAll({
        categories: [mine],
        checkpointId,
        handler: async (events) => void resumed.push(...events.map((e) => e.type)),
      });
      await again.caughtUp();
      await again.stop();
      assert.deepEqual(resumed, ['M3']);
    });

    test('the global feed never skips an event that commits late', async () => {
      let release!: () => void;
      let holding!: () => void;
      const held = new Promise<void>((resolve) => (holding = resolve));
      const gate = new Promise<void>((resolve) => (release = resolve));
      let holdNext = false;
      const slow = await open({
        beforeCommit: async () => {
          if (!holdNext) return;
          holdNext = false;
          holding();
          await gate;
        },
      });
      const other = factory.sameStorage ? await factory.sameStorage(slow) : slow;
      if (other !== slow) handles.push(other);
      const [early, late] = [stream('early'), stream('late')];
      const seen: RecordedEvent[] = [];
      const sub = slow.store.subscribeToAll({ handler: async (events) => void seen.push(...events) });
      await sub.caughtUp();

      // The first transaction takes its position and is held open before COMMIT…
      holdNext = true;
      const first = slow.store.append(early, [event('EARLY', 1)]);
      await held;
      // …while a later append is issued (on another connection where the adapter allows one).
      const second = other.store.append(late, [event('LATE', 2)]);
      // Let the subscription poll the feed three times while the first append is held: each
      // caughtUp() wakes it and resolves after a read that started after the call.
      for (let polls = 0; polls < 3; polls++) await sub.caughtUp();
      const whileHeld = [...seen];
      const feedWhileHeld = [
        ...(await slow.store.readAll({ maxCount: 10_000 })),
        ...(await other.store.readAll({ maxCount: 10_000 })),
      ];
      assert.equal(
        feedWhileHeld.filter((e) => e.streamId === early).length,
        0,
        'readAll returned an uncommitted event',
      );
      release();
      await Promise.all([first, second]);
      await eventually(() => assert.equal(seen.filter((e) => e.streamId === early || e.streamId === late).length, 2));
      await sub.stop();

      const mine = seen.filter((e) => e.streamId === early || e.streamId === late);
      assert.equal(whileHeld.filter((e) => e.streamId === early).length, 0, 'an uncommitted event was delivered');
      assert.deepEqual(new Set(mine.map((e) => e.type)), new Set(['EARLY', 'LATE']), 'each event exactly once');
      assertStrictlyIncreasing(seen);
      const feed = (await slow.store.readAll({ maxCount: 10_000 })).filter(
        (e) => e.streamId === early || e.streamId === late,
      );
      assert.deepEqual(
        feed.map((e) => e.type),
        mine.map((e) => e.type),
        'subscription order equals feed order',
      );
    });
  });
};

const assertStrictlyIncreasing = (events: RecordedEvent[]) => {
  for (let i = 1; i < events.length; i++) {
    assert.ok(
      events[i]!.position > events[i - 1]!.position,
      `position ${events[i]!.position} after ${events[i - 1]!.position}`,
    );
  }
};
