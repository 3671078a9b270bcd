/**
 * AggregateRepository with `decideOnCachedState`: a command that appends is decided on the cached
 * state without reading the stream, and the append's expected version is the check; a stale cache
 * never yields a wrong answer — not for a command that appends (the conflict makes it read and
 * decide again), nor for one that appends nothing or is refused (the stream is read to confirm).
 * On a real embedded event store; a second repository plays another process writing the stream.
 * Also `handleMany` (several commands decided in order, appended in one transaction with their own
 * metadata, a refusal failing alone) and `expectNew` (a first command decided without a read; a
 * stream that exists after all is read and the command decided again, so nothing is doubled).
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import { DomainError } from '../../../shared/domain/decider.ts';
import type { EventStore } from '../../../shared/ports/event-store.ts';
import { AggregateRepository, MemoryStateCache } from '../../../services/runtime/aggregate-repository.ts';
import { tempDir } from '../../support/temp-dir.ts';
import { wallet, walletEvents, type WalletState as State } from './wallet-decider.ts';

describe('AggregateRepository, decideOnCachedState', () => {
  const dir = tempDir('cached-decisions-');
  const opened = openSqlite(dir.path);
  const store = createSqliteEventStore(opened.db);
  after(async () => {
    await store.close();
    opened.close();
    dir.remove();
  });

  /** The store, counting the stream reads and the appends made through it. */
  const counting = () => {
    let reads = 0;
    let appends = 0;
    const counted: EventStore = {
      ...store,
      readStream: (...args) => {
        reads++;
        return store.readStream(...args);
      },
      append: (...args) => {
        appends++;
        return store.append(...args);
      },
    };
    return { store: counted, reads: () => reads, appends: () => appends };
  };
  const repository = (eventStore: EventStore) =>
    new AggregateRepository(eventStore, wallet, walletEvents(), {
      cache: new MemoryStateCache<State>(),
      decideOnCachedState: true,
      conflictBackoff: { baseDelayMs: 0, maxDelayMs: 0 },
    });
  let n = 0;
  const fresh = () => `w${++n}-${Date.now()}`;

  test('with a current cache, commands that append read nothing', async () => {
    const id = fresh();
    const io = counting();
    const mine = repository(io.store);
    await mine.handle(id, { type: 'deposit', amount: 10 });
    const readsAfterFirst = io.reads();
    await mine.handle(id, { type: 'spend', amount: 3 });
    await mine.handle(id, { type: 'deposit', amount: 1 });
    assert.equal(io.reads(), readsAfterFirst, 'no read once the state is cached');
    assert.deepEqual((await mine.load(id)).state, { balance: 8, claimed: [] });
  });

  test('a stale cache and a command that appends: the expected version conflicts, the stream is read, the command decided again', async () => {
    const id = fresh();
    const mine = repository(store);
    const other = repository(store);
    await mine.handle(id, { type: 'deposit', amount: 5 });
    await other.handle(id, { type: 'spend', amount: 5 }); // mine's cache still says 5
    await assert.rejects(
      mine.handle(id, { type: 'spend', amount: 5 }),
      (e: unknown) => e instanceof DomainError && e.code === 'INSUFFICIENT',
    );
    const result = await mine.handle(id, { type: 'deposit', amount: 2 });
    assert.deepEqual(result.state, { balance: 2, claimed: [] });
    assert.equal(result.version, 2);
  });

  test('a stale cache and a refused command: the stream is read and the command decided on what it holds', async () => {
    const id = fresh();
    const mine = repository(store);
    const other = repository(store);
    await mine.handle(id, { type: 'deposit', amount: 1 });
    await other.handle(id, { type: 'deposit', amount: 100 }); // mine's cache says 1
    const spent = await mine.handle(id, { type: 'spend', amount: 50 });
    assert.deepEqual(spent.state, { balance: 51, claimed: [] }, 'not refused on the stale balance');
  });

  test('a stale cache and a command that appends nothing: the stream is read, so the answer is the stored one', async () => {
    const id = fresh();
    const io = counting();
    const mine = repository(io.store);
    const other = repository(store);
    await mine.handle(id, { type: 'claim', ticket: 'a' });
    // Current cache, nothing to append: one confirming read, the same answer.
    const before = io.reads();
    const again = await mine.handle(id, { type: 'claim', ticket: 'a' });
    assert.deepEqual(again.events, []);
    assert.equal(io.reads(), before + 1, 'one read confirms a decision that appended nothing');
    // Another writer claims b; mine, still caching [a], is asked to claim b: no event, and the state it answers has b.
    await other.handle(id, { type: 'claim', ticket: 'b' });
    const claimed = await mine.handle(id, { type: 'claim', ticket: 'b' });
    assert.deepEqual(claimed.events, []);
    assert.deepEqual(claimed.state.claimed, ['a', 'b']);
    assert.equal(claimed.version, 1);
  });

  test('a batch: commands queued while one is written are decided together; a mix of appends and refusals on a stale cache ends right', async () => {
    const id = fresh();
    const mine = repository(store);
    const other = repository(store);
    await mine.handle(id, { type: 'deposit', amount: 3 });
    await other.handle(id, { type: 'deposit', amount: 3 }); // stored 6, cached 3
    const results = await Promise.allSettled([
      mine.handle(id, { type: 'spend', amount: 2 }),
      mine.handle(id, { type: 'spend', amount: 2 }),
      mine.handle(id, { type: 'spend', amount: 2 }),
      mine.handle(id, { type: 'spend', amount: 2 }),
    ]);
    assert.deepEqual(
      results.map((r) => r.status),
      ['fulfilled', 'fulfilled', 'fulfilled', 'rejected'],
      'three spends of 2 fit in 6, the fourth is refused',
    );
    assert.deepEqual((await repository(store).load(id)).state, { balance: 0, claimed: [] });
  });

  // handleMany: several commands decided in order and appended in one transaction.
  test('commands decided in order on the state the ones before left, appended in one transaction with their own metadata', async () => {
    const id = fresh();
    await repository(store).handle(id, { type: 'deposit', amount: 1 });
    // A repository that has not seen the stream: it reads it first, while all three are queued.
    const io = counting();
    const mine = repository(io.store);
    const outcomes = await mine.handleMany(id, [
      { command: { type: 'deposit', amount: 4 }, metadata: { step: 'a' } },
      { command: { type: 'spend', amount: 5 }, metadata: { step: 'b' } },
      { command: { type: 'claim', ticket: 't' }, metadata: { step: 'c' } },
    ]);
    assert.equal(io.appends(), 1, 'one append for the three commands');
    assert.deepEqual(
      outcomes.map((o) => ('error' in o ? 'refused' : o.version)),
      [1, 2, 3],
    );
    const stored = await store.readStream(walletEvents().streamId(id));
    assert.deepEqual(
      stored.slice(1).map((e) => [e.type, e.metadata.step]),
      [
        ['Deposited', 'a'],
        ['Spent', 'b'],
        ['Claimed', 'c'],
      ],
    );
    assert.equal(new Set(stored.slice(1).map((e) => e.position)).size, 3);
  });

  test('a refused command fails alone; the others are appended', async () => {
    const id = fresh();
    const mine = repository(store);
    const outcomes = await mine.handleMany(id, [
      { command: { type: 'deposit', amount: 2 } },
      { command: { type: 'spend', amount: 5 } },
      { command: { type: 'spend', amount: 2 } },
    ]);
    assert.ok('events' in outcomes[0]!);
    assert.ok('error' in outcomes[1]! && outcomes[1].error instanceof DomainError);
    assert.equal((outcomes[1] as { error: DomainError }).error.code, 'INSUFFICIENT');
    assert.ok('events' in outcomes[2]!);
    assert.deepEqual((await mine.load(id)).state.balance, 0);
  });

  test('on a stale cache the whole batch is decided again on the stored state', async () => {
    const id = fresh();
    const mine = repository(store);
    const other = repository(store);
    await mine.handle(id, { type: 'deposit', amount: 3 });
    await other.handle(id, { type: 'spend', amount: 3 }); // mine's cache still says 3
    const outcomes = await mine.handleMany(id, [
      { command: { type: 'spend', amount: 3 } },
      { command: { type: 'deposit', amount: 7 } },
    ]);
    assert.ok('error' in outcomes[0]!, 'the spend is refused on the stored balance of 0');
    assert.ok('events' in outcomes[1]!);
    assert.deepEqual((await repository(store).load(id)).state.balance, 7);
  });

  test('expectNew: a new stream is written without a read', async () => {
    const id = fresh();
    const io = counting();
    const mine = repository(io.store);
    const result = await mine.handle(id, { type: 'deposit', amount: 5 }, undefined, { expectNew: true });
    assert.equal(io.reads(), 0, 'no read for a stream that does not exist');
    assert.equal(result.version, 0);
  });

  test('expectNew on a stream that exists (a redelivery): read, decided again, nothing doubled', async () => {
    const id = fresh();
    await repository(store).handle(id, { type: 'claim', ticket: 'r' });
    const io = counting();
    const mine = repository(io.store);
    const again = await mine.handle(id, { type: 'claim', ticket: 'r' }, undefined, { expectNew: true });
    assert.deepEqual(again.events, [], 'the second claim of the ticket appends nothing');
    assert.ok(io.reads() >= 1, 'the stream was read once the append found it');
    const stored = await store.readStream(walletEvents().streamId(id));
    assert.deepEqual(
      stored.map((e) => e.type),
      ['Claimed'],
    );
  });
});
