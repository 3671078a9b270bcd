/**
 * What the webhook delivery worker checks before it sends, with the projections it depends on held
 * back (embedded, no servers): a pending retry of an erased call's delivery is not sent, though the
 * webhook projection has not applied CallErased yet; a deal.outcome.updated is not sent before the
 * deal projection has written its deal record, and a long wait for it is noted.
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { pino } from 'pino';
import { createPersonalData } from '../../../shared/adapters/crypto/personal-data.ts';
import { createSqliteDataKeys } from '../../../shared/adapters/data-keys/sqlite-data-keys.ts';
import { createSqliteEventLog } from '../../../shared/adapters/event-log/sql-event-log.ts';
import { createSealedEventStore } from '../../../shared/adapters/event-store/sealed-event-store.ts';
import { createSqliteEventStore } from '../../../shared/adapters/event-store/sqlite-event-store.ts';
import { createSqliteReadModels } from '../../../shared/adapters/read-models/sqlite-read-models.ts';
import { openSqlite } from '../../../shared/adapters/sqlite/sqlite-database.ts';
import type { RecordedEvent } from '../../../shared/ports/event-store.ts';
import type { ProjectionWriter } from '../../../shared/ports/read-models.ts';
import type { WebhookStore } from '../../../shared/ports/webhook-store.ts';
import { TEST_KEY_ENCRYPTION_KEY } from '../../support/embedded-pipeline.ts';
import { eventually } from '../../support/eventually.ts';
import { createPipelineHarness, type PipelineOptions } from '../../support/pipeline-harness.ts';
import { tempDir } from '../../support/temp-dir.ts';
import { startWebhookReceiver } from '../../support/webhook-receiver.ts';

const TRANSCRIPT = 'Rep: Hi Dana, what do you use today?\nDana: Spreadsheets.';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Holds a projection's batches that hold an event of `type` until `release()`. */
type Applies = { apply(events: readonly RecordedEvent[], ...rest: never[]): Promise<void> };
const holdBatches = (writer: ProjectionWriter | WebhookStore, type: string) => {
  let held = true;
  const target = writer as Applies;
  const apply = target.apply.bind(target);
  target.apply = async (events, ...rest) => {
    while (held && events.some((e) => e.type === type)) await sleep(20);
    return apply(events, ...rest);
  };
  return {
    release: () => {
      held = false;
    },
  };
};

/** The embedded pipeline with erasure, its read models exposed so a test can hold a projection back. */
const openPipeline = async (
  hold: (readModels: ReturnType<typeof createSqliteReadModels>) => void,
  options: PipelineOptions,
) => {
  const dir = tempDir();
  const opened = openSqlite(dir.path);
  const storedEvents = createSqliteEventStore(opened.db);
  const personalData = createPersonalData(createSqliteDataKeys(opened.db, TEST_KEY_ENCRYPTION_KEY));
  const eventStore = createSealedEventStore(storedEvents, personalData);
  const eventLog = createSqliteEventLog(opened.db);
  const readModels = createSqliteReadModels(opened.db);
  hold(readModels);
  const h = await createPipelineHarness(
    { eventStore, eventLog, readModels, personalData, storedEvents },
    {},
    {
      sharedDatabase: true,
      erasure: true,
      ...options,
    },
  );
  const close = async () => {
    await h.close();
    await readModels.close();
    await eventLog.close();
    await personalData.close();
    await eventStore.close();
    opened.close();
    dir.remove();
  };
  return { h, readModels, close };
};

test('a pending retry of an erased call is not sent while the webhook projection has not applied CallErased', async (t) => {
  let webhooksHold: { release: () => void } | undefined;
  const logs: Record<string, unknown>[] = [];
  const { h, close } = await openPipeline(
    (readModels) => {
      webhooksHold = holdBatches(readModels.webhooks, 'CallErased');
    },
    // The first retry comes after the DELETE below.
    {
      webhookDelivery: { retryScheduleMs: [1_500, 100, 100], timeoutMs: 3_000 },
      projectionsLogger: pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) }),
    },
  );
  const receiver = await startWebhookReceiver();
  after(async () => {
    webhooksHold?.release();
    await receiver.close();
    await close();
  });
  receiver.respondWith(() => 500);
  const { teamId, key } = await h.team();
  const created = await h.admin('POST', `/api/admin/teams/${teamId}/webhooks`, {
    url: receiver.url('/erased'),
    events: ['deal.outcome.updated', 'call.erased'],
  });
  assert.equal(created.statusCode, 201, created.body);
  const { webhookId } = created.json<{ webhookId: string }>();
  await eventually(async () =>
    assert.ok((await h.admin('GET', `/api/admin/teams/${teamId}/webhooks`)).body.includes(webhookId)),
  );

  const personal = `PERSONAL-NOTE-${Date.now()}`;
  const accepted = await h.ingest({
    key,
    body: { transcript: TRANSCRIPT, repName: 'Sam Secret', dealSize: 5, dealNotes: personal },
  });
  assert.equal(accepted.statusCode, 201, accepted.body);
  const { callId } = accepted.json<{ callId: string }>();
  const [first] = await receiver.waitFor(1, (r) => r.json.type === 'deal.outcome.updated', 10_000);
  assert.ok(first!.body.includes(personal), 'the first attempt carried the deal notes');
  // The failed attempt's line names what it delivered: an operator finds the call from it.
  const retried = await eventually(() => {
    const line = logs.find((l) => l.msg === 'webhook delivery will be retried');
    assert.ok(line, 'the failed attempt is logged');
    return line;
  });
  assert.deepEqual(
    [retried.subject, retried.type, retried.eventId, retried.webhookId],
    [callId, 'deal.outcome.updated', first!.headers['webhook-id'], webhookId],
  );

  const erased = await h.ingress.app.inject({
    method: 'DELETE',
    url: `/api/calls/${callId}`,
    headers: { 'x-api-key': key },
  });
  assert.equal(erased.statusCode, 202, erased.body);
  const sentBefore = receiver.received.length;
  receiver.respondWith(() => 200);
  // Past every retry of the schedule.
  await sleep(2_500);
  const later = receiver.received.slice(sentBefore);
  assert.deepEqual(
    later.filter((r) => r.body.includes(personal) || r.body.includes('Sam Secret')).map((r) => r.json.type),
    [],
    'no delivery after the erasure carries its personal data',
  );
  const listing = await h.admin('GET', `/api/admin/teams/${teamId}/webhooks/${webhookId}/deliveries`);
  assert.ok(
    !listing.body.includes('deal.outcome.updated'),
    `the erased call's delivery left the outbox: ${listing.body}`,
  );

  // Once the projection applies CallErased, the notice goes out, and nothing personal with it.
  webhooksHold!.release();
  const [notice] = await receiver.waitFor(1, (r) => r.json.type === 'call.erased', 10_000);
  assert.equal(notice!.json.data.callId, callId);
  assert.ok(!receiver.received.slice(sentBefore).some((r) => r.body.includes(personal)));
  t.diagnostic(`${receiver.received.length} requests received`);
});

test('deal.outcome.updated is sent only once its deal record is written, however far the deal projection lags; a long wait is noted in the listing and readiness', async () => {
  let dealsHold: { release: () => void } | undefined;
  const { h, readModels, close } = await openPipeline(
    (models) => {
      dealsHold = holdBatches(models.deals, 'DealRecorded');
    },
    { webhookDelivery: { retryScheduleMs: [100, 200], timeoutMs: 3_000, dealRecordLongWaitMs: 500 } },
  );
  const receiver = await startWebhookReceiver();
  after(async () => {
    dealsHold?.release();
    await receiver.close();
    await close();
  });
  const { teamId, key } = await h.team();
  const created = await h.admin('POST', `/api/admin/teams/${teamId}/webhooks`, {
    url: receiver.url('/deals'),
    events: ['deal.outcome.updated', 'call.completed'],
  });
  assert.equal(created.statusCode, 201, created.body);
  const { webhookId } = created.json<{ webhookId: string }>();
  await eventually(async () =>
    assert.ok((await h.admin('GET', `/api/admin/teams/${teamId}/webhooks`)).body.includes(webhookId)),
  );
  const accepted = await h.ingest({ key, body: { transcript: TRANSCRIPT, repName: 'Sam', dealSize: 1200 } });
  assert.equal(accepted.statusCode, 201, accepted.body);
  const { callId } = accepted.json<{ callId: string }>();
  await h.callEvents(callId);
  // The webhook projection has the call; the deal projection is held at its DealRecorded.
  await sleep(1_500);
  assert.equal(await readModels.deals.get(callId), undefined, 'the deal record is held back');
  assert.deepEqual(
    receiver.received.map((r) => r.json.type),
    [],
    'nothing is sent before the deal record exists (call.completed waits behind the deal, in order)',
  );
  type Listed = { type: string; status: string; attempts: number; lastError: string | null };
  const dealDelivery = async () =>
    (await h.admin('GET', `/api/admin/teams/${teamId}/webhooks/${webhookId}/deliveries`))
      .json<{ deliveries: Listed[] }>()
      .deliveries.find((d) => d.type === 'deal.outcome.updated');
  // Past the long wait (500 ms here): the wait is said where an operator looks.
  await eventually(async () => {
    const waiting = await dealDelivery();
    assert.deepEqual([waiting?.status, waiting?.attempts], ['pending', 0]);
    assert.match(String(waiting?.lastError), /^waiting since \S+ for its deal record/);
  });
  const noted = h.health.report().components['webhook-delivery'];
  assert.equal(noted?.ready, true, 'a lagging deal projection is not a failure of the delivery worker');
  assert.match(String(noted?.reason), /^1 deal\.outcome\.updated deliveries wait for their deal record/);

  dealsHold!.release();
  const got = await receiver.waitFor(2, undefined, 10_000);
  assert.deepEqual(
    got.map((r) => r.json.type),
    ['deal.outcome.updated', 'call.completed'],
  );
  const record = await readModels.deals.get(callId);
  assert.equal(got[0]!.json.data.eventId, record?.eventId, 'the deal record written is the one told of');
  await eventually(async () => {
    const deal = await dealDelivery();
    assert.deepEqual(
      [deal?.status, deal?.attempts, deal?.lastError],
      ['delivered', 1, null],
      'waiting spent no attempt',
    );
  });
  assert.equal(h.health.report().components['webhook-delivery']?.reason, undefined, 'the note ends with the wait');
});
