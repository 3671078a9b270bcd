/**
 * A deal write an operator skipped for the deal projection, through the whole pipeline, on the
 * embedded default and on Kafka + PostgreSQL: the deal records refuse it (a trigger in SQLite, a
 * CHECK constraint in PostgreSQL), the deal projection stops on its DealRecorded and says so, and
 * the call's webhook deliveries wait; once it is skipped, its deal.outcome.updated is failed unsent
 * with the reason (its deal record is never written, and the topic never carries it) and the call's
 * later delivery, call.completed, goes out.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { type EmbeddedPipeline, openEmbeddedPipeline } from '../../support/embedded-pipeline.ts';
import { eventually } from '../../support/eventually.ts';
import type { PipelineOptions } from '../../support/pipeline-harness.ts';
import { openServersPipeline, serversSkip } from '../../support/servers-pipeline.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.ts';

const OPTIONS: PipelineOptions = { webhookDelivery: { retryScheduleMs: [100, 200], timeoutMs: 3_000 }, erasure: true };
const TRANSCRIPT = 'Rep: Hi Dana, what do you use today?\nDana: Spreadsheets.';

/** Makes the deal records refuse every write from now on, as a constraint an operator added would. */
const refuseDealRecords = async (pipeline: EmbeddedPipeline) => {
  if (pipeline.sqlite) {
    pipeline.sqlite.db.exec(
      "CREATE TRIGGER refuse_deal_records BEFORE INSERT ON deal_records BEGIN SELECT RAISE(ABORT, 'deal record refused by the test'); END",
    );
    return;
  }
  const { connectionString, schema } = pipeline.postgres!;
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    await client.query(`ALTER TABLE ${schema}.deal_records ADD CONSTRAINT refuse_deal_records CHECK (false) NOT VALID`);
  } finally {
    await client.end();
  }
};

const skippedDealWrite = (name: string, open: (options: PipelineOptions) => Promise<EmbeddedPipeline>, skip?: string) =>
  describe(`a skipped deal write and the webhooks: ${name}`, { skip }, () => {
    let pipeline: EmbeddedPipeline;
    let receiver: WebhookReceiver;
    before(async () => {
      pipeline = await open(OPTIONS);
      receiver = await startWebhookReceiver();
    });
    after(async () => {
      await receiver?.close();
      await pipeline?.close();
    });

    test("its deal.outcome.updated is not waited for once skipped: failed unsent, saying why, and the call's later deliveries go out", async () => {
      const { h } = pipeline;
      const { teamId, key } = await h.team();
      const created = await h.admin('POST', `/api/admin/teams/${teamId}/webhooks`, {
        url: receiver.url('/skipped-deal'),
        events: ['deal.outcome.updated', 'call.completed'],
      });
      assert.equal(created.statusCode, 201, created.body);
      const { webhookId } = created.json<{ webhookId: string }>();
      await eventually(async () =>
        assert.ok((await h.admin('GET', `/api/admin/teams/${teamId}/webhooks`)).body.includes(webhookId)),
      );
      await refuseDealRecords(pipeline);
      const accepted = await h.ingest({ key, body: { transcript: TRANSCRIPT, repName: 'Sam', dealSize: 1200 } });
      assert.equal(accepted.statusCode, 201, accepted.body);
      const { callId } = accepted.json<{ callId: string }>();
      const dealWrite = (await h.callEvents(callId)).find((e) => e.type === 'DealRecorded')!;
      await eventually(
        () => {
          const report = h.health.report().components['projection:deals'];
          assert.equal(report?.ready, false, JSON.stringify(report));
          assert.match(String(report.reason), new RegExp(`position ${dealWrite.position} `));
        },
        { timeoutMs: 20_000, intervalMs: 50 },
      );
      assert.deepEqual(
        receiver.received.map((r) => r.json.type),
        [],
        'while the deal projection is stopped on it, the deal write waits, and call.completed behind it',
      );

      const skipped = await h.admin('POST', '/api/admin/projections/deals/skip', {
        position: dealWrite.position.toString(),
        reason: 'deal record refused by the test',
      });
      assert.equal(skipped.statusCode, 201, skipped.body);
      const [completed] = await receiver.waitFor(1, (r) => r.json.type === 'call.completed', 15_000);
      assert.equal(completed!.json.data.callId, callId);
      assert.deepEqual(
        receiver.received.map((r) => r.json.type),
        ['call.completed'],
        'deal.outcome.updated is not sent: its deal record was never written, nor is it on deals.outcome-updated.v1',
      );
      type Listed = { type: string; status: string; attempts: number; lastError: string | null };
      const deliveries = await eventually(async () => {
        const listing = await h.admin('GET', `/api/admin/teams/${teamId}/webhooks/${webhookId}/deliveries`);
        const found = listing.json<{ deliveries: Listed[] }>().deliveries;
        assert.deepEqual(
          found.map((d) => [d.type, d.status]),
          [
            ['call.completed', 'delivered'],
            ['deal.outcome.updated', 'failed'],
          ],
        );
        return found;
      });
      const deal = deliveries[1]!;
      assert.equal(deal.attempts, 0, 'nothing was sent');
      assert.match(
        String(deal.lastError),
        new RegExp(`skipped its deal write \\(position ${dealWrite.position}\\)`),
        'the listing says why it was not sent',
      );
      const onTopic = (await h.eventLog.read(h.topics.dealOutcomeUpdated, { limit: 10_000 })).filter(
        (r) => r.key === callId,
      );
      assert.deepEqual(onTopic, [], 'the topic does not carry the skipped deal write either');
      await eventually(() => assert.equal(h.health.report().ready, true, JSON.stringify(h.health.report())), {
        timeoutMs: 20_000,
        intervalMs: 50,
      });
    });
  });

void skippedDealWrite('embedded (SQLite)', (options) => openEmbeddedPipeline({}, options));
void skippedDealWrite('Kafka + PostgreSQL', (options) => openServersPipeline({}, options), serversSkip);
