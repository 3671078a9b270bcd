/**
 * Start-up does not grow with the history: the team directory and the open-call tracker start from
 * their last snapshot and read only the feed after it, and what they hold then is exactly what a
 * fold of the whole feed gives. On the embedded event store and on PostgreSQL.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { createPostgresEventStore } from '../../../shared/adapters/event-store/postgres-event-store.ts';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import type { EventStore, SubscribeToAllOptions } from '../../../shared/ports/event-store.ts';
import { OpenCalls } from '../../../services/processor/open-calls.ts';
import { TeamDirectory } from '../../../services/ingress/teams/team-directory.ts';
import { TeamService } from '../../../services/ingress/teams/team-service.ts';
import { createTeamWriter } from '../../../services/runtime/team-writer.ts';
import { backend } from '../../support/backends.ts';
import { overriding } from '../../support/embedded-ingress.ts';
import { freshSchema } from '../../support/postgres.ts';
import { tempDir } from '../../support/temp-dir.ts';
import { callEvents } from '../../../shared/domain/call/call-catalogue.ts';
import { submittedData } from '../../conformance/read-models-fixtures.ts';

const postgres = await backend('postgres');

type Opened = { store: EventStore; close: () => Promise<void> };
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

/** The store, recording where each subscription starts and how many events it is handed. */
const observed = (store: EventStore) => {
  const seen = { after: [] as bigint[], handed: 0 };
  const wrapped = overriding(store, {
    subscribeToAll: (options: SubscribeToAllOptions) => {
      seen.after.push(options.after ?? 0n);
      return store.subscribeToAll({
        ...options,
        handler: async (events) => ((seen.handed += events.length), options.handler(events)),
      });
    },
  });
  return { store: wrapped, seen };
};

/** The same store without its snapshots: what a start that folds the whole feed holds. */
const withoutSnapshots = (store: EventStore) => overriding(store, { readSnapshot: async () => undefined });

const callSubmitted = (callId: string, teamId: string, i: number) =>
  callEvents.encode({
    type: 'CallSubmitted',
    data: submittedData({ callId, teamId, submittedAt: new Date(Date.UTC(2026, 10, 1, 0, 0, i)).toISOString() }),
  });

for (const [name, open, skip] of [
  ['embedded', embedded, undefined],
  ['postgres', onPostgres, postgres.skip],
] as const) {
  describe(`start-up from snapshots (${name})`, { skip }, () => {
    test('the team directory starts from its snapshot, reads only the feed after it, and holds what the whole feed gives', async () => {
      const { store, close } = await open();
      try {
        const writer = createTeamWriter(store);
        await writer.directory.start(store);
        const teams = new TeamService({
          repository: writer.repository,
          directory: writer.directory,
          keySecret: 'k'.repeat(40),
        });
        const teamId = await teams.createTeam({ name: 'Acme', ownerEmail: 'o@acme.test', capacityHours: 1000 });
        const { key } = await teams.issueKey(teamId, 'first');
        for (let i = 0; i < 200; i++) {
          await teams.reserve(teamId, `c${i}`, 3);
          if (i % 2 === 0)
            await writer.repository.handle(teamId, { type: 'SettleCapacity', callId: `c${i}`, actualMinutes: 2 });
        }
        await writer.directory.stop(); // stores the snapshot
        const snapshot = await store.readSnapshot('team-directory');
        assert.ok(snapshot && snapshot.position > 0n, 'a snapshot was stored at stop');

        // After the snapshot: another process revokes the first key, issues a second and reserves more.
        const other = createTeamWriter(store);
        const otherTeams = new TeamService({
          repository: other.repository,
          directory: other.directory,
          keySecret: 'k'.repeat(40),
        });
        await other.directory.start(store);
        const keyId = (await otherTeams.load(teamId))!.apiKeys.keys().next().value!;
        await otherTeams.revokeKey(teamId, keyId);
        const second = await otherTeams.issueKey(teamId, 'second');
        for (let i = 200; i < 210; i++) await otherTeams.reserve(teamId, `c${i}`, 3);
        const tail = (await store.headPosition()) - snapshot.position;

        const { store: watched, seen } = observed(store);
        const restarted = new TeamDirectory();
        await restarted.start(watched);
        assert.deepEqual(seen.after, [snapshot.position], 'the directory subscribed after its snapshot');
        assert.ok(seen.handed <= Number(tail), `read ${seen.handed} events; ${tail} were appended after the snapshot`);

        const reference = new TeamDirectory();
        await reference.start(withoutSnapshots(store));
        assert.deepEqual(
          JSON.stringify(restarted.get(teamId)?.version),
          JSON.stringify(reference.get(teamId)?.version),
        );
        const view = (d: TeamDirectory) => {
          const state = d.team(teamId)!;
          return {
            remaining: state.remainingMinutes,
            open: [...state.reservations.entries()].map(([k]) => k).sort(),
            keys: [...state.apiKeys.values()].map((k) => [k.keyId, k.revokedAt ?? null]),
          };
        };
        assert.deepEqual(view(restarted), view(reference));
        const restartedService = new TeamService({
          repository: createTeamWriter(store).repository,
          directory: restarted,
          keySecret: 'k'.repeat(40),
        });
        assert.equal(
          await restartedService.authenticate(key),
          undefined,
          'the key revoked after the snapshot is refused',
        );
        assert.equal(
          (await restartedService.authenticate(second.key))?.teamId,
          teamId,
          'the key issued after the snapshot works',
        );
        await Promise.all([restarted.stop(), reference.stop(), other.directory.stop()]);
      } finally {
        await close();
      }
    });

    test('the open-call tracker starts from its snapshot, reads only the feed after it, and holds what the whole feed gives', async () => {
      const { store, close } = await open();
      try {
        const teamId = randomUUID();
        const ids = Array.from({ length: 300 }, () => randomUUID());
        for (const [i, callId] of ids.entries()) {
          await store.append(`call-${callId}`, [callSubmitted(callId, teamId, i)]);
          if (i % 3 !== 0)
            await store.append(`call-${callId}`, [
              {
                type: 'ProcessingStarted',
                data: { mode: 'transcript', deadline: '2026-11-01T01:00:00.000Z', at: '2026-11-01T00:00:00.000Z' },
              },
            ]);
          if (i % 3 === 1)
            await store.append(`call-${callId}`, [
              { type: 'CallCompleted', data: { durationSeconds: 60, at: '2026-11-01T00:10:00.000Z' } },
            ]);
        }
        const first = new OpenCalls();
        await first.start(store);
        await first.stop();
        const snapshot = await store.readSnapshot('open-calls');
        assert.ok(snapshot && snapshot.position > 0n);

        // After the snapshot: some open calls finish, new ones arrive.
        for (const callId of ids.filter((_, i) => i % 3 === 2).slice(0, 20))
          await store.append(`call-${callId}`, [
            {
              type: 'CallFailed',
              data: { code: 'processing_timeout', reason: 'late', at: '2026-11-01T02:00:00.000Z' },
            },
          ]);
        const fresh = Array.from({ length: 15 }, () => randomUUID());
        for (const [i, callId] of fresh.entries())
          await store.append(`call-${callId}`, [callSubmitted(callId, teamId, 1000 + i)]);

        const { store: watched, seen } = observed(store);
        const opened: string[] = [];
        const restarted = new OpenCalls((call, change) => change === 'opened' && opened.push(call.callId));
        await restarted.start(watched);
        assert.deepEqual(seen.after, [snapshot.position]);
        assert.equal(seen.handed, 35, 'only the 35 events after the snapshot were read');

        const reference = new OpenCalls();
        await reference.start(withoutSnapshots(store));
        const sorted = (calls: OpenCalls) => calls.all().sort((a, b) => a.callId.localeCompare(b.callId));
        assert.deepEqual(sorted(restarted), sorted(reference));
        assert.equal(restarted.all().length, 300 - 100 - 20 + 15);
        assert.ok(
          restarted.all().some((call) => call.deadline === '2026-11-01T01:00:00.000Z'),
          'deadlines come back from the snapshot',
        );
        assert.ok(
          fresh.every((id) => opened.includes(id)),
          'calls submitted after the snapshot are announced',
        );
        await Promise.all([restarted.stop(), reference.stop()]);
      } finally {
        await close();
      }
    });
  });
}
