/**
 * GET /api/usage after processing: a completed call's reservation is settled to its real length,
 * which moves from reserved to used.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eventually } from '../support/eventually.ts';
import { eventData, type PipelineHarness } from '../support/pipeline-harness.ts';
import { type EmbeddedPipeline, openEmbeddedPipeline } from '../support/embedded-pipeline.ts';

describe('GET /api/usage after processing', () => {
  let pipeline: EmbeddedPipeline;
  let h: PipelineHarness;
  before(async () => {
    pipeline = await openEmbeddedPipeline();
    h = pipeline.h;
  });
  after(async () => {
    await pipeline?.close();
  });

  test('a completed call moves its minutes from reserved to used; auto-recharge shows in hours', async () => {
    const { teamId, key } = await h.team({ capacityHours: 10 });
    assert.equal(
      (await h.admin('POST', `/api/admin/teams/${teamId}/capacity`, { autoRecharge: { enabled: true, hours: 2 } }))
        .statusCode,
      200,
    );
    const accepted = await h.ingest({
      key,
      body: { transcript: 'Rep: Hi Dana, what do you use today?\nDana: Spreadsheets.', duration: 600 },
    });
    const { callId } = accepted.json<{ callId: string }>();
    const events = await h.callEvents(callId);
    assert.ok(eventData(events, 'CallCompleted'));
    const settled = await eventually(async () => {
      const team = (await h.eventStore.readStream(`team-${teamId}`)).find((e) => e.type === 'CapacitySettled');
      if (!team) throw new Error('not settled yet');
      return team.data as { actualMinutes: number };
    });
    // The ingress's team directory follows the event feed, which shows the settlement once it is on disk.
    await eventually(async () => {
      const usage = (
        await h.ingress.app.inject({ method: 'GET', url: '/api/usage', headers: { 'x-api-key': key } })
      ).json<Record<string, unknown>>();
      assert.deepEqual(usage, {
        teamId,
        remainingMinutes: 600 - settled.actualMinutes,
        reservedMinutes: 0,
        usedMinutes: settled.actualMinutes,
        autoRecharge: { enabled: true, hours: 2 },
        rateLimit: {
          limit: 30,
          remaining: 29,
          resetSeconds: (usage.rateLimit as { resetSeconds: number }).resetSeconds,
        },
      });
    });
    assert.ok(settled.actualMinutes >= 1);
  });
});
