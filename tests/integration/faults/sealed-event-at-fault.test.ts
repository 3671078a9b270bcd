/**
 * A stored call event whose sealed personal fields do not open with its call's key (corrupt bytes)
 * is proven bad (docs/decisions/0025-what-blames-the-data.md): the projections that read call data
 * stop on that event, /readyz names its position, an operator skips it (admin API), and the calls
 * after it reach the history. The event was opened before any projection was handed it, so the
 * projections restarted on it for ever, named no event, and the skip answered 500. On the embedded
 * default and on PostgreSQL + Kafka.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { openEmbeddedPipeline, type EmbeddedPipeline } from '../../support/embedded-pipeline.ts';
import { openServersPipeline, serversSkip } from '../../support/servers-pipeline.ts';
import { eventually } from '../../support/eventually.ts';

const TRANSCRIPT = 'Rep: Hello Dana.\nDana: Pricing is my worry.\nRep: We can start with a pilot.';

/** A copy of base64 `text` with one character in its middle changed. */
const corrupted = (text: string): string => {
  const i = Math.floor(text.length / 2);
  return text.slice(0, i) + (text[i] === 'A' ? 'B' : 'A') + text.slice(i + 1);
};

const suite = (name: string, open: () => Promise<EmbeddedPipeline>, skip?: string) =>
  describe(`a call event whose sealed fields do not open: ${name}`, { skip }, () => {
    let p: EmbeddedPipeline;
    let team: { teamId: string; key: string };
    before(async () => {
      p = await open();
      team = await p.h.team();
    });
    after(async () => p?.close());

    const submit = async () => {
      const res = await p.h.ingest({ key: team.key, body: { transcript: TRANSCRIPT, notes: 'some notes' } });
      assert.equal(res.statusCode, 201, res.body);
      return res.json<{ callId: string }>().callId;
    };
    const get = (callId: string) =>
      p.h.ingress.app.inject({ method: 'GET', url: `/api/calls/${callId}`, headers: { 'x-api-key': team.key } });
    const readyz = async () =>
      (await p.h.ingress.app.inject({ method: 'GET', url: '/readyz' })).json<{
        components: Record<string, { ready: boolean; reason?: string; position?: string }>;
      }>();

    test('stops the projections on it, /readyz names it, and after a skip the later calls reach the history', async () => {
      const first = await submit();
      await eventually(async () => assert.equal((await get(first)).statusCode, 200), {
        timeoutMs: 30_000,
        intervalMs: 250,
      });

      // The call's stored CallSubmitted, its sealed fields corrupted, appended as a later event of the call.
      const stored = (await p.storedEvents!.readStream(`call-${first}`))[0]!;
      const data = { ...(stored.data as Record<string, string>) };
      data.sealed = corrupted(data.sealed!);
      await p.storedEvents!.append(`call-${first}`, [{ type: 'DealRecorded', data }]);
      const bad = (await p.storedEvents!.readStream(`call-${first}`)).at(-1)!;

      const later = await submit();
      await p.h.callEvents(later, undefined, 30_000);
      const stopped = await eventually(
        async () => {
          const ready = await readyz();
          for (const projection of ['call-history', 'deals']) {
            const report = ready.components[`projection:${projection}`];
            assert.equal(report?.ready, false, `${projection}: ${JSON.stringify(report)}`);
            assert.equal(report.position, bad.position.toString(), `${projection}: ${JSON.stringify(report)}`);
            assert.match(report.reason!, /do not open with its key/);
          }
          return ready;
        },
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      console.log(`# call-history: ${stopped.components['projection:call-history']?.reason}`);
      assert.equal((await get(later)).statusCode, 404, 'the later call waits behind the bad event');

      for (const projection of ['call-history', 'deals', 'webhooks']) {
        const skipped = await p.h.admin('POST', `/api/admin/projections/${projection}/skip`, {
          position: bad.position.toString(),
          reason: 'corrupt sealed fields',
        });
        // The webhook projection stops on it only when a webhook is registered: 409 otherwise.
        if (projection === 'webhooks') assert.ok([201, 409].includes(skipped.statusCode), skipped.body);
        else assert.equal(skipped.statusCode, 201, `${projection}: ${skipped.body}`);
      }
      await eventually(async () => assert.equal((await get(later)).statusCode, 200), {
        timeoutMs: 30_000,
        intervalMs: 250,
      });
      await eventually(
        async () => {
          const ready = await readyz();
          for (const projection of ['call-history', 'deals'])
            assert.equal(ready.components[`projection:${projection}`]?.ready, true, projection);
        },
        { timeoutMs: 30_000, intervalMs: 100 },
      );
      // The call whose event was corrupted still reads as it was.
      assert.equal((await get(first)).statusCode, 200);
    });
  });

void suite('embedded (SQLite)', () => openEmbeddedPipeline({}, { erasure: true }));
void suite('PostgreSQL + Kafka', () => openServersPipeline({}, { erasure: true }), serversSkip);
