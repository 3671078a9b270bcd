/**
 * GET /api/calls/:callId/events — the processing timeline the console shows: the call's events in
 * stream order with the time each was recorded, for the call's own team only.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eventually } from '../support/eventually.ts';
import type { PipelineHarness } from '../support/pipeline-harness.ts';
import { type EmbeddedPipeline, openEmbeddedPipeline } from '../support/embedded-pipeline.ts';

describe('GET /api/calls/:callId/events', () => {
  let pipeline: EmbeddedPipeline;
  let h: PipelineHarness;
  before(async () => {
    pipeline = await openEmbeddedPipeline();
    h = pipeline.h;
  });
  after(async () => {
    await pipeline?.close();
  });

  test("a completed call's events in stream order, each with its recorded time; another team's call and an unknown one are 404", async () => {
    const team = await h.team();
    const other = await h.team();
    const accepted = await h.ingest({ key: team.key, body: { transcript: 'Rep: hello\nDana: hi, send the proposal' } });
    const { callId } = accepted.json<{ callId: string }>();
    const stored = await h.callEvents(callId);
    const timeline = await eventually(async () => {
      const response = await h.ingress.app.inject({
        method: 'GET',
        url: `/api/calls/${callId}/events`,
        headers: { 'x-api-key': team.key },
      });
      if (response.statusCode !== 200) throw new Error(`${response.statusCode} ${response.body}`);
      const body = response.json<{ callId: string; events: { revision: number; type: string; at: string }[] }>();
      if (body.events.at(-1)?.type !== 'CallCompleted') throw new Error('not completed yet');
      return body;
    });
    assert.equal(timeline.callId, callId);
    assert.deepEqual(
      timeline.events.map((e) => [e.revision, e.type, e.at]),
      stored.map((e) => [e.revision, e.type, e.recordedAt.toISOString()]),
    );
    const foreign = await h.ingress.app.inject({
      method: 'GET',
      url: `/api/calls/${callId}/events`,
      headers: { 'x-api-key': other.key },
    });
    assert.equal(foreign.statusCode, 404);
    const unknown = await h.ingress.app.inject({
      method: 'GET',
      url: `/api/calls/00000000-0000-4000-8000-000000000000/events`,
      headers: { 'x-api-key': team.key },
    });
    assert.equal(unknown.statusCode, 404);
    const anonymous = await h.ingress.app.inject({ method: 'GET', url: `/api/calls/${callId}/events` });
    assert.equal(anonymous.statusCode, 401);
  });
});
