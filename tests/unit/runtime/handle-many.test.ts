/**
 * AggregateRepository.handleMany and `expectNew`, on a real embedded event store:
 * - several commands are decided one after the other and appended in one transaction, each event
 *   with its own command's metadata; a refused command fails alone; a stale cache ends right;
 * - a first command with `expectNew` reads nothing, and when the stream exists after all (a
 *   redelivered record) the stream is read and the command decided again, so nothing is doubled.
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

describe('AggregateRepository, handleMany and expectNew', () => {
  const dir = tempDir('handle-many-');
  const opened = openSqlite(dir.path);
  const store = createSqliteEventStore(opened.db);
  after(async () => {
    await store.close();
    opened.close();
    dir.remove();
  });

  /** The store, counting stream reads and appends made through it. */
  const counting = () => {
    const seen = { reads: 0, appends: 0 };
    const counted: EventStore = {
      ...store,
      readStream: (...args) => {
        seen.reads++;
        return store.readStream(...args);
      },
      append: (...args) => {
        seen.appends++;
        return store.append(...args);
      },
    };
    return { store: counted, seen };
  };
  const repository = (eventStore: EventStore) =>
    new AggregateRepository(eventStore, wallet, walletEvents(), {
      cache: new MemoryStateCache<State>(),
      decideOnCachedState: true,
      conflictBackoff: { baseDelayMs: 0, maxDelayMs: 0 },
    });
  let n = 0;
  const fresh = () => `m${++n}-${Date.now()}`;

  test('commands decided in order on the state the ones before left, appended in one transaction with their own metadata', async () => {
    const id = fresh();
    const io = counting();
    const mine = repository(io.store);
    await mine.handle(id, { type: 'deposit', amount: 1 });
    const appendsBefore = io.seen.appends;
    const outcomes = await mine.handleMany(id, [
      { command: { type: 'deposit', amount: 4 }, metadata: { step: 'a' } },
      { command: { type: 'spend', amount: 5 }, metadata: { step: 'b' } },
      { command: { type: 'claim', ticket: 't' }, metadata: { step: 'c' } },
    ]);
    assert.equal(io.seen.appends, appendsBefore + 1, 'one append for the three commands');
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
    assert.equal(io.seen.reads, 0, 'no read for a stream that does not exist');
    assert.equal(result.version, 0);
  });

  test('expectNew on a stream that exists (a redelivery): read, decided again, nothing doubled', async () => {
    const id = fresh();
    await repository(store).handle(id, { type: 'claim', ticket: 'r' });
    const io = counting();
    const mine = repository(io.store);
    const again = await mine.handle(id, { type: 'claim', ticket: 'r' }, undefined, { expectNew: true });
    assert.deepEqual(again.events, [], 'the second claim of the ticket appends nothing');
    assert.ok(io.seen.reads >= 1, 'the stream was read once the append found it');
    const stored = await store.readStream(walletEvents().streamId(id));
    assert.deepEqual(
      stored.map((e) => e.type),
      ['Claimed'],
    );
  });
});
