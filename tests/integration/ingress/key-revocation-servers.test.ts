/**
 * A revoked key stops working in every ingress process, not only the one that revoked it: two
 * ingress instances with their own connections to one PostgreSQL event store.
 */
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createSqliteEventLog } from '../../../shared/adapters/event-log/sql-event-log.ts';
import { createPostgresEventStore } from '../../../shared/adapters/event-store/postgres-event-store.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import { ALL_TOPICS } from '../../../shared/topics.ts';
import { backend } from '../../support/backends.ts';
import { eventually } from '../../support/eventually.ts';
import { createHarness, type Harness } from '../../support/ingress-harness.ts';
import { freshSchema } from '../../support/postgres.ts';
import { tempDir } from '../../support/temp-dir.ts';

const postgres = await backend('postgres');

describe('key revocation across ingress processes (PostgreSQL)', { skip: postgres.skip }, () => {
  const cleanups: (() => unknown)[] = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  const ingress = async (schema: string): Promise<Harness> => {
    const eventStore = await createPostgresEventStore({ connectionString: postgres.url!, schema });
    // The log is not what this test is about: each instance gets an embedded one.
    const dir = tempDir();
    const opened = openSqlite(dir.path);
    const eventLog = createSqliteEventLog(opened.db);
    await eventLog.ensureTopics(ALL_TOPICS.map((name) => ({ name, partitions: 1 })));
    const harness = await createHarness({ eventStore, eventLog });
    cleanups.push(async () => {
      await harness.close();
      await eventLog.close();
      await eventStore.close();
      opened.close();
      dir.remove();
    });
    return harness;
  };

  test('a key revoked through one process is refused by the other within about a second', async (t) => {
    const fresh = freshSchema(postgres.url!);
    cleanups.push(() => fresh.drop());
    const a = await ingress(fresh.schema);
    const b = await ingress(fresh.schema);
    const { teamId, key, keyId } = await a.team();
    const body = { transcript: 'Rep: hello' };
    await eventually(async () => assert.equal((await b.ingest({ key, body })).statusCode, 201), { timeoutMs: 5000 });
    assert.equal((await a.admin('DELETE', `/api/admin/teams/${teamId}/keys/${keyId}`)).statusCode, 204);
    const revokedAt = Date.now();
    await eventually(
      async () => assert.equal((await b.ingest({ key, body, remoteAddress: '10.9.9.9' })).statusCode, 401),
      { timeoutMs: 5000, intervalMs: 20 },
    );
    t.diagnostic(`the other process refused the revoked key after ${Date.now() - revokedAt} ms`);
  });
});
