/**
 * One writer of team streams per process: the ingress's reservations and the processor's
 * settlements for one team, interleaved as fast as they come, never conflict with each other when
 * they share the process's team writer; with a writer each (how it was), they do on PostgreSQL.
 * On the embedded and the PostgreSQL event store, counting the version conflicts each reports.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createPostgresEventStore } from '../../../shared/adapters/event-store/postgres-event-store.ts';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import { type EventStore, ExpectedVersionConflictError } from '../../../shared/ports/event-store.ts';
import { TeamService } from '../../../services/ingress/teams/team-service.ts';
import { createTeamWriter, type TeamWriter } from '../../../services/runtime/team-writer.ts';
import { backend } from '../../support/backends.ts';
import { freshSchema } from '../../support/postgres.ts';
import { overriding } from '../../support/embedded-ingress.ts';
import { tempDir } from '../../support/temp-dir.ts';

const postgres = await backend('postgres');

type Opened = { store: EventStore; close(): Promise<void> };
const embedded = async (): Promise<Opened> => {
  const dir = tempDir();
  const opened = openSqlite(dir.path);
  const store = createSqliteEventStore(opened.db);
  return {
    store,
    async close() {
      await store.close();
      opened.close();
      dir.remove();
    },
  };
};
const onPostgres = async (): Promise<Opened> => {
  const fresh = freshSchema(postgres.url!);
  const store = await createPostgresEventStore({ connectionString: postgres.url!, schema: fresh.schema });
  return {
    store,
    async close() {
      await store.close();
      await fresh.drop();
    },
  };
};

const CALLS = 300;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Reserves and settles CALLS calls of one team, the two sides interleaved; returns the conflicts seen. */
const run = async (
  open: () => Promise<Opened>,
  shared: boolean,
): Promise<{ conflicts: number; remainingMinutes: number }> => {
  const opened = await open();
  const inner = opened.store;
  let conflicts = 0;
  const store = overriding(inner, {
    append: async (...args: Parameters<EventStore['append']>) => {
      try {
        return await inner.append(...args);
      } catch (error) {
        if (error instanceof ExpectedVersionConflictError) conflicts++;
        throw error;
      }
    },
  });
  try {
    const ingressWriter: TeamWriter = createTeamWriter(store);
    const processorWriter = shared ? ingressWriter : createTeamWriter(store);
    const teams = new TeamService({
      repository: ingressWriter.repository,
      directory: ingressWriter.directory,
      keySecret: 'k'.repeat(40),
    });
    const teamId = await teams.createTeam({ name: 'Acme', ownerEmail: 'o@acme.test', capacityHours: 1000 });
    await Promise.all(
      Array.from({ length: CALLS }, async (_, i) => {
        // Spread over about a second, as requests and finishing calls arrive.
        await sleep(Math.random() * 1000);
        await teams.reserve(teamId, `c${i}`, 10);
        await sleep(Math.random() * 5);
        await processorWriter.repository.handle(teamId, { type: 'SettleCapacity', callId: `c${i}`, actualMinutes: 4 });
      }),
    );
    const team = await teams.load(teamId);
    return { conflicts, remainingMinutes: team!.remainingMinutes };
  } finally {
    await opened.close();
  }
};

for (const [name, open, skip] of [
  ['embedded', embedded, undefined],
  ['postgres', onPostgres, postgres.skip],
] as const) {
  describe(`one team writer per process (${name})`, { skip }, () => {
    test('reservations and settlements through the one team writer never conflict, and every minute adds up', async () => {
      const { conflicts, remainingMinutes } = await run(open, true);
      assert.equal(conflicts, 0);
      assert.equal(remainingMinutes, 1000 * 60 - CALLS * 4);
    });
  });
}

test(
  'the same work through two writers in one process conflicts on PostgreSQL (why there is one)',
  { skip: postgres.skip },
  async () => {
    const { conflicts, remainingMinutes } = await run(onPostgres, false);
    console.log(`# two writers: ${conflicts} version conflicts for ${CALLS} reservations + ${CALLS} settlements`);
    assert.ok(conflicts > 0);
    assert.equal(remainingMinutes, 1000 * 60 - CALLS * 4, 'the retries still get every minute right');
  },
);
