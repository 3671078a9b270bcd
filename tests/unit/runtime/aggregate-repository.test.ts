/**
 * AggregateRepository on an in-memory event store whose appends the test holds and releases by
 * hand: commands that queue while a batch is written are decided and appended together; a version
 * conflict makes it read and decide again, a bounded number of times; other errors are not
 * retried; the state cache is only ever moved forward, and a load reads only past it.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { DomainError } from '../../../shared/domain/decider.ts';
import {
  type AppendResult,
  type EventStore,
  type ExpectedVersion,
  ExpectedVersionConflictError,
  type NewEvent,
  type ReadStreamOptions,
  type RecordedEvent,
  EventStoreUnavailableError,
} from '../../../shared/ports/event-store.ts';
import {
  AggregateRepository,
  BoundedStateCache,
  MemoryStateCache,
  type RepositoryOptions,
} from '../../../services/runtime/aggregate-repository.ts';
import { type Deferred, deferred, settled } from '../../support/deferred.ts';
import { wallet, type WalletEvent, walletEvents, type WalletState } from './wallet-decider.ts';

/** Streams in a Map; every append and read recorded; an append can be held until the test releases it. */
class MemoryStore {
  readonly streams = new Map<string, RecordedEvent[]>();
  readonly appends: { streamId: string; types: string[]; expectedVersion: ExpectedVersion | undefined }[] = [];
  readonly reads: { streamId: string; fromRevision: number }[] = [];
  /** Errors the next appends throw (before any check), in order. */
  readonly failures: unknown[] = [];
  private position = 0n;
  private gate: Deferred<void> | undefined;

  /** Holds the next append until the returned function is called. */
  holdNextAppend(): () => void {
    const gate = deferred();
    this.gate = gate;
    return () => gate.resolve();
  }

  /** Another process's write, outside the repository under test. */
  write(streamId: string, events: WalletEvent[]): void {
    const stream = this.streams.get(streamId) ?? [];
    for (const e of events) {
      stream.push({
        id: randomUUID(),
        streamId,
        revision: stream.length,
        position: ++this.position,
        type: e.type,
        data: e.data,
        metadata: {},
        recordedAt: new Date(0),
      });
    }
    this.streams.set(streamId, stream);
  }

  async append(
    streamId: string,
    events: NewEvent[],
    options?: { expectedVersion?: ExpectedVersion },
  ): Promise<AppendResult> {
    this.appends.push({ streamId, types: events.map((e) => e.type), expectedVersion: options?.expectedVersion });
    const gate = this.gate;
    this.gate = undefined;
    if (gate) await gate.promise;
    if (this.failures.length > 0) throw this.failures.shift();
    const actual = (this.streams.get(streamId)?.length ?? 0) - 1;
    const expected = options?.expectedVersion ?? 'any';
    if (expected !== 'any' && (expected === 'no_stream' ? actual !== -1 : expected !== actual))
      throw new ExpectedVersionConflictError(streamId, expected, actual);
    this.write(streamId, events as WalletEvent[]);
    return { nextExpectedVersion: actual + events.length, position: this.position };
  }

  async readStream(streamId: string, options?: ReadStreamOptions): Promise<RecordedEvent[]> {
    const fromRevision = options?.fromRevision ?? 0;
    this.reads.push({ streamId, fromRevision });
    return (this.streams.get(streamId) ?? []).slice(fromRevision);
  }

  /** As the port, for the repository (it uses append and readStream only). */
  asEventStore(): EventStore {
    const port: Pick<EventStore, 'append' | 'readStream'> = {
      append: (...a) => this.append(...a),
      readStream: (...a) => this.readStream(...a),
    };
    return port as EventStore;
  }
}

const setup = (options: RepositoryOptions<WalletState> = {}) => {
  const store = new MemoryStore();
  const repository = new AggregateRepository(store.asEventStore(), wallet, walletEvents(), {
    conflictBackoff: { baseDelayMs: 0, maxDelayMs: 0 },
    ...options,
  });
  return { store, repository };
};

describe('AggregateRepository: batching', () => {
  test('commands queued while a batch is written are decided together and appended in one append, with one expected version', async () => {
    const { store, repository } = setup();
    const release = store.holdNextAppend();
    const first = repository.handle('w', { type: 'deposit', amount: 10 });
    await settled();
    assert.equal(store.appends.length, 1, 'the first command is being written');
    const queued = [
      repository.handle('w', { type: 'spend', amount: 4 }),
      repository.handle('w', { type: 'deposit', amount: 1 }),
      repository.handle('w', { type: 'spend', amount: 3 }),
    ];
    await settled();
    assert.equal(store.appends.length, 1, 'nothing else is appended while the first batch is held');
    release();
    const results = await Promise.all([first, ...queued]);
    assert.deepEqual(
      store.appends.map((a) => [a.types, a.expectedVersion]),
      [
        [['Deposited'], 'no_stream'],
        [['Spent', 'Deposited', 'Spent'], 0],
      ],
    );
    // Each command answers with its own events and the state and version right after them.
    assert.deepEqual(
      results.map((r) => [r.events.map((e) => e.type), r.state.balance, r.version]),
      [
        [['Deposited'], 10, 0],
        [['Spent'], 6, 1],
        [['Deposited'], 7, 2],
        [['Spent'], 4, 3],
      ],
    );
  });

  test('a command the domain refuses fails alone; the rest of its batch is appended', async () => {
    const { store, repository } = setup();
    const release = store.holdNextAppend();
    const first = repository.handle('w', { type: 'deposit', amount: 5 });
    await settled();
    const batch = [
      repository.handle('w', { type: 'spend', amount: 4 }),
      repository.handle('w', { type: 'spend', amount: 4 }), // 1 left: refused
      repository.handle('w', { type: 'deposit', amount: 2 }),
    ];
    release();
    const settledResults = await Promise.allSettled([first, ...batch]);
    assert.deepEqual(
      settledResults.map((r) => r.status),
      ['fulfilled', 'fulfilled', 'rejected', 'fulfilled'],
    );
    const refused = settledResults[2] as PromiseRejectedResult;
    assert.ok(refused.reason instanceof DomainError && refused.reason.code === 'INSUFFICIENT');
    assert.deepEqual(store.appends[1]!.types, ['Spent', 'Deposited']);
    assert.deepEqual((await repository.load('w')).state.balance, 3);
  });

  test('at most 500 commands are decided in one batch; the rest go in the next', async () => {
    const { store, repository } = setup();
    const release = store.holdNextAppend();
    const first = repository.handle('w', { type: 'deposit', amount: 1 });
    await settled();
    const queued = Array.from({ length: 501 }, () => repository.handle('w', { type: 'deposit', amount: 1 }));
    release();
    await Promise.all([first, ...queued]);
    assert.deepEqual(
      store.appends.map((a) => a.types.length),
      [1, 500, 1],
    );
    assert.equal((await repository.load('w')).state.balance, 502);
  });

  test('different aggregates are not batched together nor wait for each other', async () => {
    const { store, repository } = setup();
    store.holdNextAppend(); // a's append never finishes in this test
    void repository.handle('a', { type: 'deposit', amount: 1 });
    await settled();
    const b = await repository.handle('b', { type: 'deposit', amount: 2 });
    assert.equal(b.state.balance, 2);
    assert.deepEqual(
      store.appends.map((a) => a.streamId),
      ['wallet-a', 'wallet-b'],
    );
  });
});

describe('AggregateRepository: conflict retry', () => {
  test('when another writer got there first, the stream is read again and the command decided on what it holds', async () => {
    const { store, repository } = setup();
    await repository.handle('w', { type: 'deposit', amount: 5 });
    const release = store.holdNextAppend();
    const spending = repository.handle('w', { type: 'spend', amount: 5 });
    await settled();
    store.write('wallet-w', [{ type: 'Spent', data: { amount: 3 } }]); // lands while ours is held
    release();
    await assert.rejects(
      spending,
      (e: unknown) => e instanceof DomainError && e.code === 'INSUFFICIENT',
      'decided again on balance 2, not 5',
    );
    const deposit = await repository.handle('w', { type: 'deposit', amount: 1 });
    assert.deepEqual([deposit.state.balance, deposit.version], [3, 2]);
    assert.deepEqual(
      store.appends.map((a) => [a.types, a.expectedVersion]),
      [
        [['Deposited'], 'no_stream'],
        [['Spent'], 0],
        [['Deposited'], 1],
      ],
    );
  });

  test('a conflict, then success: the retried append carries the new expected version', async () => {
    const { store, repository } = setup();
    store.write('wallet-w', [{ type: 'Deposited', data: { amount: 9 } }]);
    store.failures.push(new ExpectedVersionConflictError('wallet-w', 0, 1));
    const result = await repository.handle('w', { type: 'spend', amount: 2 });
    assert.deepEqual([result.state.balance, result.version], [7, 1]);
    assert.deepEqual(
      store.appends.map((a) => a.expectedVersion),
      [0, 0],
    );
  });

  test('retries are bounded: after maxRetries conflicts the conflict is thrown, to every command of the batch', async () => {
    const { store, repository } = setup({ maxRetries: 2 });
    for (let i = 0; i < 5; i++) store.failures.push(new ExpectedVersionConflictError('wallet-w', 'no_stream', 0));
    await assert.rejects(repository.handle('w', { type: 'deposit', amount: 1 }), ExpectedVersionConflictError);
    assert.equal(store.appends.length, 3, 'one attempt and two retries');
  });

  test('an error other than a conflict is not retried and fails the whole batch', async () => {
    const { store, repository } = setup();
    const release = store.holdNextAppend();
    store.failures.push(new EventStoreUnavailableError('down'));
    const results = Promise.allSettled([repository.handle('w', { type: 'deposit', amount: 1 })]);
    await settled();
    const batch = Promise.allSettled([
      repository.handle('w', { type: 'deposit', amount: 2 }),
      repository.handle('w', { type: 'deposit', amount: 3 }),
    ]);
    store.failures.push(new EventStoreUnavailableError('still down'));
    release();
    assert.deepEqual(
      (await results).map((r) => r.status),
      ['rejected'],
    );
    assert.deepEqual(
      (await batch).map((r) => (r.status === 'rejected' ? (r.reason as Error).message : 'ok')),
      ['still down', 'still down'],
    );
    assert.equal(store.appends.length, 2, 'each batch tried once');
    // The repository is usable afterwards.
    assert.equal((await repository.handle('w', { type: 'deposit', amount: 4 })).state.balance, 4);
  });
});

describe('AggregateRepository: the state cache', () => {
  test('a load reads only the events past the cached version, and caches the result', async () => {
    const cache = new MemoryStateCache<WalletState>();
    const { store, repository } = setup({ cache });
    store.write('wallet-w', [
      { type: 'Deposited', data: { amount: 5 } },
      { type: 'Deposited', data: { amount: 6 } },
    ]);
    assert.deepEqual(await repository.load('w'), { state: { balance: 11, claimed: [] }, version: 1 });
    store.write('wallet-w', [{ type: 'Spent', data: { amount: 1 } }]);
    assert.deepEqual(await repository.load('w'), { state: { balance: 10, claimed: [] }, version: 2 });
    assert.deepEqual(
      store.reads.map((r) => r.fromRevision),
      [0, 2],
    );
    assert.deepEqual(cache.get('w'), { state: { balance: 10, claimed: [] }, version: 2 });
  });

  test('a handled command leaves its state in the cache, so the next one reads only newer events', async () => {
    const cache = new MemoryStateCache<WalletState>();
    const { store, repository } = setup({ cache });
    await repository.handle('w', { type: 'deposit', amount: 3 });
    assert.deepEqual(cache.get('w'), { state: { balance: 3, claimed: [] }, version: 0 });
    await repository.handle('w', { type: 'deposit', amount: 4 });
    assert.deepEqual(
      store.reads.map((r) => r.fromRevision),
      [0, 1],
    );
  });

  test('without a cache every load reads the whole stream', async () => {
    const { store, repository } = setup();
    await repository.handle('w', { type: 'deposit', amount: 3 });
    await repository.handle('w', { type: 'deposit', amount: 4 });
    assert.deepEqual(
      store.reads.map((r) => r.fromRevision),
      [0, 0],
    );
  });

  test('MemoryStateCache never replaces a state with an older one', () => {
    const cache = new MemoryStateCache<string>();
    cache.set('a', { state: 'v2', version: 2 });
    cache.set('a', { state: 'v1', version: 1 });
    cache.set('a', { state: 'other v2', version: 2 });
    assert.deepEqual(cache.get('a'), { state: 'v2', version: 2 });
    cache.set('a', { state: 'v3', version: 3 });
    assert.deepEqual(cache.get('a'), { state: 'v3', version: 3 });
  });

  test('BoundedStateCache keeps at most its capacity, dropping the least recently stored, and never an older state', () => {
    const cache = new BoundedStateCache<string>(2);
    cache.set('a', { state: 'a0', version: 0 });
    cache.set('b', { state: 'b0', version: 0 });
    cache.set('a', { state: 'a1', version: 1 }); // a is now the most recently stored
    cache.set('c', { state: 'c0', version: 0 }); // drops b
    assert.equal(cache.size, 2);
    assert.equal(cache.get('b'), undefined);
    assert.deepEqual(cache.get('a'), { state: 'a1', version: 1 });
    cache.set('a', { state: 'a0 again', version: 0 });
    assert.deepEqual(cache.get('a'), { state: 'a1', version: 1 });
    cache.delete('a');
    assert.equal(cache.get('a'), undefined);
    assert.equal(cache.size, 1);
  });
});
