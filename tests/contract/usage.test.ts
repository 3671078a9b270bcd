/**
 * GET /api/usage after processing: a completed call's reservation is settled to its real length,
 * which moves from reserved to used.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createSqliteEventLog } from '../../shared/adapters/event-log/sql-event-log.ts';
import { createSqliteEventStore } from '../../shared/adapters/event-store/sqlite-event-store.ts';
import { createSqliteReadModels } from '../../shared/adapters/read-models/sqlite-read-models.ts';
import { openSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
import { eventually } from '../support/eventually.ts';
import { createPipelineHarness, eventData, type PipelineHarness } from '../support/pipeline-harness.ts';
import { tempDir } from '../support/temp-dir.ts';

describe('GET /api/usage after processing', () => {
  const dir = tempDir();
  const opened = openSqlite(dir.path);
  const eventStore = createSqliteEventStore(opened.db);
  const eventLog = createSqliteEventLog(opened.db);
  const readModels = createSqliteReadModels(opened.db);
  let h: PipelineHarness;
  before(async () => {
    h = await createPipelineHarness({ eventStore, eventLog, readModels });
  });
  after(async () => {
    await h.close();
    await readModels.close();
    await eventLog.close();
    await eventStore.close();
    opened.close();
    dir.remove();
  });

  test('a completed call moves its minutes from reserved to used; auto-recharge shows in hours', async () => {
    const { teamId, key } = await h.team({ capacityHours: 10 });
    assert.equal((await h.admin('POST', `/api/admin/teams/${teamId}/capacity`, { autoRecharge: { enabled: true, hours: 2 } })).statusCode, 200);
    const accepted = await h.ingest({ key, body: { transcript: 'Rep: Hi Dana, what do you use today?\nDana: Spreadsheets.', duration: 600 } });
    const { callId } = accepted.json<{ callId: string }>();
    const events = await h.callEvents(callId);
    assert.ok(eventData(events, 'CallCompleted'));
    const settled = await eventually(async () => {
      const team = (await h.eventStore.readStream(`team-${teamId}`)).find((e) => e.type === 'CapacitySettled');
      if (!team) throw new Error('not settled yet');
      return team.data as { actualMinutes: number };
    });
    const usage = (await h.ingress.app.inject({ method: 'GET', url: '/api/usage', headers: { 'x-api-key': key } })).json<Record<string, unknown>>();
    assert.deepEqual(usage, {
      teamId,
      remainingMinutes: 600 - settled.actualMinutes,
      reservedMinutes: 0,
      usedMinutes: settled.actualMinutes,
      autoRecharge: { enabled: true, hours: 2 },
      rateLimit: { limit: 30, remaining: 29, resetSeconds: (usage.rateLimit as { resetSeconds: number }).resetSeconds },
    });
    assert.ok(settled.actualMinutes >= 1);
  });
});
