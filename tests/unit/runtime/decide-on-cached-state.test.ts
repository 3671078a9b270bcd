/**
 * AggregateRepository with `decideOnCachedState`: a command that appends is decided on the cached
 * state without reading the stream, and the append's expected version is the check; a stale cache
 * never yields a wrong answer — not for a command that appends (the conflict makes it read and
 * decide again), nor for one that appends nothing or is refused (the stream is read to confirm).
 * On a real embedded event store; a second repository plays another process writing the stream.
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

  /** The store, counting the stream reads made through it. */
  const counting = () => {
    let reads = 0;
    const counted: EventStore = {
      ...store,
      readStream: (...args) => {
        reads++;
        return store.readStream(...args);
      },
    };
    return { store: counted, reads: () => reads };
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
});
