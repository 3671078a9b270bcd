/**
 * The event store conformance suite on KurrentDB: against KURRENTDB_URL, or a container of the
 * pinned image when a Docker engine answers (tests/support/backends.ts); otherwise skipped with one
 * line saying why. CI does not list kurrentdb in REQUIRE_BACKENDS, so a machine without either
 * skips it rather than failing.
 *
 * Every case works on a server shared with earlier runs: it names its own streams, categories,
 * checkpoints and snapshots. `fresh` therefore hands a new client over the same server.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import {
  createKurrentDbEventStore,
  openKurrentDbEventStore,
  translateKurrentDbError,
} from '../../shared/adapters/event-store/kurrentdb-event-store.ts';
import { EventStoreUnavailableError, ExpectedVersionConflictError } from '../../shared/ports/event-store.ts';
import { UnavailableError, WrongExpectedVersionError } from '@kurrent/kurrentdb-client';
import { backend, stopContainers } from '../support/backends.ts';
import { eventStoreConformance } from './event-store.ts';

const kurrentdb = await backend('kurrentdb');
after(() => stopContainers());

eventStoreConformance(
  'kurrentdb',
  {
    async fresh(options) {
      const store = createKurrentDbEventStore({
        connectionString: kurrentdb.url!,
        pollMs: 100,
        beforeCommit: options?.beforeCommit,
      });
      return { store, cleanup: () => store.close() };
    },
    async sameStorage() {
      const store = createKurrentDbEventStore({ connectionString: kurrentdb.url!, pollMs: 100 });
      return { store, cleanup: () => store.close() };
    },
  },
  { skip: kurrentdb.skip },
);

// No server needed: the one translation of client errors.
test('kurrentdb: client errors become the port errors (wrong expected version, unavailable, raw gRPC 14)', () => {
  const conflict = translateKurrentDbError(
    new WrongExpectedVersionError(undefined, { streamName: 'call-1', expected: 0n, current: 3n }),
    { streamId: 'call-1', expected: 0 },
  );
  assert.ok(conflict instanceof ExpectedVersionConflictError);
  assert.equal(conflict.actual, 3);
  const noStream = translateKurrentDbError(
    new WrongExpectedVersionError(undefined, { streamName: 'call-2', expected: 'stream_exists', current: 'no_stream' }),
    {
      streamId: 'call-2',
      expected: 'stream_exists',
    },
  );
  assert.ok(noStream instanceof ExpectedVersionConflictError);
  assert.equal(noStream.actual, -1);
  assert.ok(translateKurrentDbError(new UnavailableError()) instanceof EventStoreUnavailableError);
  const raw = Object.assign(new Error('14 UNAVAILABLE: No connection established'), { code: 14 });
  assert.ok(translateKurrentDbError(raw) instanceof EventStoreUnavailableError);
  const other = new Error('bad request');
  assert.equal(translateKurrentDbError(other), other);
});

test('kurrentdb: a server that does not answer is an EventStoreUnavailableError on every operation', async () => {
  // Port 9 (discard) on loopback: nothing listens there on a test machine.
  const store = createKurrentDbEventStore({ connectionString: 'kurrentdb://127.0.0.1:9?tls=false' });
  try {
    await assert.rejects(store.append('call-x', [{ type: 'A', data: {} }]), EventStoreUnavailableError);
    await assert.rejects(store.readStream('call-x'), EventStoreUnavailableError);
    await assert.rejects(store.readAll({ categories: ['call'] }), EventStoreUnavailableError);
    await assert.rejects(store.headPosition(), EventStoreUnavailableError);
    await assert.rejects(store.readCheckpoint('cp'), EventStoreUnavailableError);
  } finally {
    await store.close();
  }
  // Opened for the service, it says so at once.
  await assert.rejects(
    openKurrentDbEventStore({ connectionString: 'kurrentdb://127.0.0.1:9?tls=false' }),
    EventStoreUnavailableError,
  );
});
