/**
 * Signed outbound webhooks (Standard Webhooks), through the admin API and the whole pipeline, on
 * the embedded default and on Kafka + PostgreSQL: registration, listing and deletion; deliveries
 * of call.completed, call.failed and deal.outcome.updated verified with the published
 * `standardwebhooks` library, also through a secret rotation; webhook.test; retries on a short
 * schedule (500 then 200; failed, then redelivered); 410 disables the webhook; a receiver that
 * never answers holds back no other team's deliveries.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { fromRecord } from '../../shared/cloudevents.ts';
import { webhookAttempts } from '../../shared/observability/metrics.ts';
import { createSqliteEventLog } from '../../shared/adapters/event-log/sql-event-log.ts';
import { createSqliteEventStore } from '../../shared/adapters/event-store/sqlite-event-store.ts';
import { createSqliteReadModels } from '../../shared/adapters/read-models/sqlite-read-models.ts';
import { openSqlite } from '../../shared/adapters/sqlite/sqlite-database.ts';
import { createHarness } from '../support/ingress-harness.ts';
import { tempDir } from '../support/temp-dir.ts';
import { type EmbeddedPipeline, openEmbeddedPipeline } from '../support/embedded-pipeline.ts';
import { eventually } from '../support/eventually.ts';
import { openServersPipeline, serversSkip } from '../support/servers-pipeline.ts';
import type { PipelineHarness, PipelineOptions } from '../support/pipeline-harness.ts';
import { type ReceivedWebhook, startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

// With erasure, as the service runs: personal fields are sealed in the store and DELETE /api/calls/:callId is served.
const OPTIONS: PipelineOptions = { webhookDelivery: { retryScheduleMs: [100, 200], timeoutMs: 3_000 }, erasure: true };
const TRANSCRIPT =
  'Rep: Hi Dana, what do you use today?\nDana: Spreadsheets, and pricing worries me.\nRep: Shall we meet on Friday to go through it?';

interface Created {
  webhookId: string;
  url: string;
  events: string[];
  secret: string;
}

const webhooksContract = (
  name: string,
  openPipeline: (options: PipelineOptions) => Promise<EmbeddedPipeline>,
  skip?: string,
) =>
  describe(`webhooks: ${name}`, { skip }, () => {
    let pipeline: EmbeddedPipeline;
    let h: PipelineHarness;
    let receiver: WebhookReceiver;
    before(async () => {
      pipeline = await openPipeline(OPTIONS);
      h = pipeline.h;
      receiver = await startWebhookReceiver();
    });
    after(async () => {
      await receiver?.close();
      await pipeline?.close();
    });

    const base = (teamId: string) => `/api/admin/teams/${teamId}/webhooks`;
    const register = async (teamId: string, url: string, events: string[]): Promise<Created> => {
      const created = await h.admin('POST', base(teamId), { url, events });
      assert.equal(created.statusCode, 201, created.body);
      return created.json<Created>();
    };
    const listed = async (teamId: string) =>
      (await h.admin('GET', base(teamId))).json<{ webhooks: Array<Record<string, unknown>> }>().webhooks;
    /** Waits until the projection lists the webhook (lists read the projection). */
    const visible = (teamId: string, webhookId: string) =>
      eventually(async () => {
        const found = (await listed(teamId)).find((w) => w.webhookId === webhookId);
        if (!found) throw new Error(`webhook ${webhookId} not listed yet`);
        return found;
      });
    const deliveries = async (teamId: string, webhookId: string, query = '') => {
      const res = await h.admin('GET', `${base(teamId)}/${webhookId}/deliveries${query}`);
      assert.equal(res.statusCode, 200, res.body);
      return res.json<{ deliveries: Array<Record<string, unknown>>; nextCursor: string | null }>();
    };
    const verify = (secret: string, request: ReceivedWebhook) =>
      new Webhook(secret).verify(request.body, {
        'webhook-id': String(request.headers['webhook-id']),
        'webhook-timestamp': String(request.headers['webhook-timestamp']),
        'webhook-signature': String(request.headers['webhook-signature']),
      });
    const forWebhook = (path: string) => (r: ReceivedWebhook) => r.path === path;

    test('POST/GET/DELETE /api/admin/teams/:teamId/webhooks: 201 with a whsec_ secret shown once, listed without it, 204 then gone', async () => {
      const { teamId } = await h.team();
      const created = await register(teamId, receiver.url('/admin'), ['call.completed', 'deal.outcome.updated']);
      assert.match(created.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);
      assert.equal(Buffer.from(created.secret.slice(6), 'base64').length, 32);
      assert.deepEqual(
        [created.url, created.events],
        [receiver.url('/admin'), ['call.completed', 'deal.outcome.updated']],
      );
      const entry = await visible(teamId, created.webhookId);
      assert.deepEqual(entry, {
        webhookId: created.webhookId,
        url: created.url,
        events: created.events,
        status: 'active',
        createdAt: entry.createdAt,
      });
      assert.ok(!JSON.stringify(await listed(teamId)).includes(created.secret.slice(6)), 'the secret is never listed');

      // call.erased is accepted already; other names, other schemes, and strangers are refused.
      assert.equal(
        (await h.admin('POST', base(teamId), { url: receiver.url(), events: ['call.erased'] })).statusCode,
        201,
      );
      for (const body of [
        { url: receiver.url(), events: ['call.submitted'] },
        { url: receiver.url(), events: [] },
        { url: 'ftp://example.com/hook', events: ['call.completed'] },
        { url: 'not a url', events: ['call.completed'] },
        { url: receiver.url(), events: ['call.completed'], secret: 'whsec_mine' },
      ]) {
        const refused = await h.admin('POST', base(teamId), body);
        assert.equal(refused.statusCode, 400, JSON.stringify(body));
        assert.equal(refused.json<{ code: string }>().code, 'VALIDATION_FAILED');
      }
      assert.equal(
        (await h.admin('POST', base('no-such-team'), { url: receiver.url(), events: ['call.completed'] })).statusCode,
        404,
      );
      const unauthenticated = await h.ingress.app.inject({ method: 'GET', url: base(teamId) });
      assert.equal(unauthenticated.statusCode, 401);

      const other = await h.team();
      assert.equal(
        (await h.admin('DELETE', `${base(other.teamId)}/${created.webhookId}`)).statusCode,
        404,
        "another team's webhook is not found",
      );
      assert.equal((await h.admin('DELETE', `${base(teamId)}/${created.webhookId}`)).statusCode, 204);
      await eventually(async () => assert.ok(!(await listed(teamId)).some((w) => w.webhookId === created.webhookId)));
      assert.equal((await h.admin('DELETE', `${base(teamId)}/${created.webhookId}`)).statusCode, 404);
      assert.equal((await h.admin('POST', `${base(teamId)}/${created.webhookId}/test`)).statusCode, 404);
    });

    test('a completed call with a deal: deal.outcome.updated then call.completed, signed, data as GET /api/calls/:callId shows it', async () => {
      const { teamId, key } = await h.team();
      const hook = await register(teamId, receiver.url('/deliver'), [
        'call.completed',
        'call.failed',
        'deal.outcome.updated',
      ]);
      await visible(teamId, hook.webhookId);
      const accepted = await h.ingest({ key, body: { transcript: TRANSCRIPT, repName: 'Sam Seller', dealSize: 1200 } });
      assert.equal(accepted.statusCode, 201, accepted.body);
      const { callId } = accepted.json<{ callId: string }>();
      const events = await h.callEvents(callId);
      const got = await receiver.waitFor(2, forWebhook('/deliver'));
      assert.deepEqual(
        got.map((r) => r.json.type),
        ['deal.outcome.updated', 'call.completed'],
        'in order per call',
      );
      for (const request of got) {
        assert.equal(request.headers['content-type'], 'application/json');
        assert.deepEqual(verify(hook.secret, request), request.json, 'standardwebhooks verifies the signature');
        assert.ok(Math.abs(Number(request.headers['webhook-timestamp']) - Date.now() / 1000) < 60);
      }
      const [deal, completed] = got as [ReceivedWebhook, ReceivedWebhook];
      const completedEvent = events.find((e) => e.type === 'CallCompleted')!;
      assert.equal(completed.headers['webhook-id'], completedEvent.id, 'webhook-id is the event id');
      assert.equal(completed.json.timestamp, completedEvent.recordedAt.toISOString());
      console.log(
        `# ${name}: call.completed received ${completed.receivedAt - completedEvent.recordedAt.getTime()} ms after CallCompleted was recorded`,
      );
      const shown = await h.ingress.app.inject({
        method: 'GET',
        url: `/api/calls/${callId}`,
        headers: { 'x-api-key': key },
      });
      assert.deepEqual(completed.json.data, shown.json(), 'data is the call as GET /api/calls/:callId shows it');
      assert.equal(deal.json.data.callId, callId);
      assert.equal(deal.json.data.dealSize, 1200);
      assert.equal(
        deal.json.data.eventId,
        deal.headers['webhook-id'],
        'the deal write id, as on deals.outcome-updated.v1',
      );
      assert.equal(deal.json.timestamp, deal.json.data.recordedAt, "the deal's recordedAt");
      const onTopic = await eventually(async () => {
        const [record] = (await h.eventLog.read(h.topics.dealOutcomeUpdated, { limit: 10_000 })).filter(
          (r) => r.key === callId,
        );
        assert.ok(record, 'the deal write is on deals.outcome-updated.v1');
        return fromRecord(record);
      });
      assert.equal(deal.json.timestamp, onTopic.time, 'the same instant as ce_time on deals.outcome-updated.v1');

      // The receiver has both requests; the worker records each outcome once its answer is in.
      const listing = await eventually(
        async () => {
          const listing = await deliveries(teamId, hook.webhookId);
          assert.equal(listing.deliveries.length, 2);
          for (const d of listing.deliveries) {
            assert.equal(d.status, 'delivered');
            assert.equal(d.attempts, 1);
            assert.equal(d.lastStatusCode, 200);
            assert.equal(d.nextAttemptAt, null);
            assert.ok(typeof d.deliveredAt === 'string');
          }
          return listing;
        },
        { timeoutMs: 5_000, intervalMs: 20 },
      );
      assert.deepEqual(
        listing.deliveries.map((d) => d.type),
        ['call.completed', 'deal.outcome.updated'],
        'newest first',
      );
      const paged = await deliveries(teamId, hook.webhookId, '?limit=1');
      assert.equal(paged.deliveries.length, 1);
      const second = await deliveries(teamId, hook.webhookId, `?limit=1&cursor=${paged.nextCursor}`);
      assert.equal(second.deliveries[0]!.type, 'deal.outcome.updated');
      assert.equal(second.nextCursor, null);
      assert.equal((await deliveries(teamId, hook.webhookId, '?status=pending')).deliveries.length, 0);
      assert.equal((await h.admin('GET', `${base(teamId)}/${hook.webhookId}/deliveries?cursor=bogus`)).statusCode, 400);
      assert.equal((await h.admin('GET', `${base(teamId)}/${hook.webhookId}/deliveries?status=lost`)).statusCode, 400);
    });

    test("an erased call: call.erased carries no personal data, and the call's earlier deliveries are gone from the outbox", async () => {
      const { teamId, key } = await h.team();
      const hook = await register(teamId, receiver.url('/erased'), ['call.completed', 'call.erased']);
      await visible(teamId, hook.webhookId);
      const secretWord = `Zanzibar${Date.now()}`;
      const accepted = await h.ingest({
        key,
        body: { transcript: `${TRANSCRIPT}\nDana: ${secretWord}`, repName: 'Sam Seller', repEmail: 'sam@erased.test' },
      });
      assert.equal(accepted.statusCode, 201, accepted.body);
      const { callId } = accepted.json<{ callId: string }>();
      const [completed] = await receiver.waitFor(1, forWebhook('/erased'));
      assert.equal(completed!.json.type, 'call.completed');
      assert.ok(completed!.body.includes(secretWord), 'the completed call carries its transcript');
      await eventually(async () =>
        assert.equal((await deliveries(teamId, hook.webhookId)).deliveries[0]?.status, 'delivered'),
      );

      const erased = await h.ingress.app.inject({
        method: 'DELETE',
        url: `/api/calls/${callId}`,
        headers: { 'x-api-key': key },
      });
      assert.equal(erased.statusCode, 202, erased.body);
      const got = await receiver.waitFor(2, forWebhook('/erased'));
      const notice = got[1]!;
      assert.equal(notice.json.type, 'call.erased');
      assert.deepEqual(verify(hook.secret, notice), notice.json);
      assert.deepEqual(Object.keys(notice.json.data).sort(), ['callId', 'cause', 'erasedAt']);
      assert.equal(notice.json.data.callId, callId);
      assert.equal(notice.json.data.cause, 'deleted');
      for (const personal of [secretWord, 'Sam Seller', 'sam@erased.test'])
        assert.ok(!notice.body.includes(personal), `call.erased holds no ${personal}`);
      await eventually(async () => {
        const found = await deliveries(teamId, hook.webhookId);
        assert.deepEqual(
          found.deliveries.map((d) => [d.type, d.status]),
          [['call.erased', 'delivered']],
          'only the erasure notice is left',
        );
      });
    });

    test('a failed call is delivered as call.failed only to webhooks subscribed to it', async () => {
      const { teamId, key } = await h.team();
      const failedOnly = await register(teamId, receiver.url('/failed-only'), ['call.failed']);
      const completedOnly = await register(teamId, receiver.url('/completed-only'), ['call.completed']);
      await visible(teamId, completedOnly.webhookId);
      // The "recording" is a text/plain answer: the call fails (audio_unsupported_type).
      const accepted = await h.ingest({ key, body: { audioUrl: receiver.url('/not-a-recording.wav') } });
      assert.equal(accepted.statusCode, 201, accepted.body);
      const { callId } = accepted.json<{ callId: string }>();
      const [failed] = await receiver.waitFor(1, forWebhook('/failed-only'));
      assert.equal(failed!.json.type, 'call.failed');
      assert.equal(failed!.json.data.status, 'failed');
      assert.equal(failed!.json.data.callId, callId);
      assert.deepEqual(verify(failedOnly.secret, failed!), failed!.json);
      assert.equal(receiver.received.filter(forWebhook('/completed-only')).length, 0);
    });

    test('rotate-secret: 200 {secret}; both signatures in the header, each verifies; POST …/test answers 202 and a webhook.test arrives', async () => {
      const { teamId } = await h.team();
      const hook = await register(teamId, receiver.url('/rotate'), ['call.completed']);
      await visible(teamId, hook.webhookId);
      const tested = await h.admin('POST', `${base(teamId)}/${hook.webhookId}/test`);
      assert.equal(tested.statusCode, 202, tested.body);
      const [first] = await receiver.waitFor(1, forWebhook('/rotate'));
      assert.equal(first!.json.type, 'webhook.test');
      assert.equal(first!.headers['webhook-id'], tested.json<{ eventId: string }>().eventId);
      assert.equal(String(first!.headers['webhook-signature']).split(' ').length, 1);
      verify(hook.secret, first!);

      const rotated = await h.admin('POST', `${base(teamId)}/${hook.webhookId}/rotate-secret`);
      assert.equal(rotated.statusCode, 200, rotated.body);
      const { secret } = rotated.json<{ secret: string }>();
      assert.match(secret, /^whsec_/);
      assert.notEqual(secret, hook.secret);
      // The rotation reaches the delivery worker through the projection: test until two signatures come.
      const second = await eventually(
        async () => {
          // Counted before the request: its delivery may arrive before the answer does.
          const expected = receiver.received.filter(forWebhook('/rotate')).length + 1;
          assert.equal((await h.admin('POST', `${base(teamId)}/${hook.webhookId}/test`)).statusCode, 202);
          const got = await receiver.waitFor(expected, forWebhook('/rotate'));
          const last = got[got.length - 1]!;
          assert.equal(
            String(last.headers['webhook-signature']).split(' ').length,
            2,
            'both signatures during the overlap',
          );
          return last;
        },
        { timeoutMs: 10_000, intervalMs: 50 },
      );
      assert.deepEqual(verify(secret, second), second.json, 'the new secret verifies');
      assert.deepEqual(verify(hook.secret, second), second.json, 'the old secret still verifies for 24 hours');
      assert.throws(
        () => verify(`whsec_${Buffer.alloc(32, 7).toString('base64')}`, second),
        /signature/i,
        'a stranger secret does not',
      );
    });

    test('retries: 500 then 200 is delivered on the second attempt with the same webhook-id; a spent schedule fails, and redeliver sends it again', async () => {
      const { teamId } = await h.team();
      const counted = async (outcome: string) =>
        (await webhookAttempts.get()).values.find((v) => v.labels.outcome === outcome)?.value ?? 0;
      const before = { retry: await counted('retry'), failed: await counted('failed') };
      const flaky = await register(teamId, receiver.url('/flaky'), ['call.completed']);
      const dead = await register(teamId, receiver.url('/dead'), ['call.completed']);
      await visible(teamId, dead.webhookId);
      let flakyCalls = 0;
      let deadAlive = false;
      receiver.respondWith((r) =>
        r.path === '/flaky' ? (flakyCalls++ === 0 ? 500 : 200) : r.path === '/dead' ? (deadAlive ? 200 : 503) : 200,
      );
      assert.equal((await h.admin('POST', `${base(teamId)}/${flaky.webhookId}/test`)).statusCode, 202);
      assert.equal((await h.admin('POST', `${base(teamId)}/${dead.webhookId}/test`)).statusCode, 202);
      const attempts = await receiver.waitFor(2, forWebhook('/flaky'));
      assert.equal(attempts[0]!.headers['webhook-id'], attempts[1]!.headers['webhook-id'], 'stable across retries');
      verify(flaky.secret, attempts[1]!);
      const delivered = await eventually(async () => {
        const [d] = (await deliveries(teamId, flaky.webhookId)).deliveries;
        assert.equal(d?.status, 'delivered');
        return d;
      });
      assert.equal(delivered.attempts, 2);
      assert.equal(delivered.lastStatusCode, 200);

      // 1 attempt + 2 retries (the schedule of this test), then failed.
      const failed = await eventually(async () => {
        const [d] = (await deliveries(teamId, dead.webhookId)).deliveries;
        assert.equal(d?.status, 'failed');
        return d;
      });
      assert.equal(failed.attempts, 3);
      assert.equal(failed.lastStatusCode, 503);
      assert.match(String(failed.lastError), /503/);
      assert.equal(receiver.received.filter(forWebhook('/dead')).length, 3);
      assert.equal(
        (await counted('retry')) - before.retry,
        3,
        'webhook_attempts_total: one flaky retry, two dead ones',
      );
      assert.equal((await counted('failed')) - before.failed, 1);
      deadAlive = true;
      const again = await h.admin(
        'POST',
        `${base(teamId)}/${dead.webhookId}/deliveries/${String(failed.deliveryId)}/redeliver`,
      );
      assert.equal(again.statusCode, 202, again.body);
      await eventually(async () =>
        assert.equal((await deliveries(teamId, dead.webhookId)).deliveries[0]?.status, 'delivered'),
      );
      assert.equal(
        (
          await h.admin(
            'POST',
            `${base(teamId)}/${dead.webhookId}/deliveries/00000000-0000-4000-8000-000000000000/redeliver`,
          )
        ).statusCode,
        404,
      );
      receiver.respondWith(() => 200);
    });

    test("a 429 or 503 with Retry-After puts the next attempt off that long when it is longer than the schedule's pause (at most a day)", async () => {
      const { teamId } = await h.team();
      const limited = await register(teamId, receiver.url('/limited'), ['call.completed']);
      await visible(teamId, limited.webhookId);
      receiver.respondWith((r) => (r.path === '/limited' ? { status: 429, headers: { 'retry-after': '3600' } } : 200));
      const sent = Date.now();
      assert.equal((await h.admin('POST', `${base(teamId)}/${limited.webhookId}/test`)).statusCode, 202);
      const pending = await eventually(async () => {
        const [d] = (await deliveries(teamId, limited.webhookId)).deliveries;
        assert.deepEqual([d?.status, d?.attempts, d?.lastStatusCode], ['pending', 1, 429]);
        return d!;
      });
      const next = Date.parse(String(pending.nextAttemptAt)) - sent;
      assert.ok(next >= 3_590_000 && next <= 3_700_000, `the next attempt an hour on, not the schedule's: ${next} ms`);
      receiver.respondWith(() => 200);
    });

    test('410 Gone disables the webhook: listed as disabled, no test accepted, nothing more sent', async () => {
      const { teamId } = await h.team();
      const hook = await register(teamId, receiver.url('/gone'), ['call.completed']);
      await visible(teamId, hook.webhookId);
      receiver.respondWith((r) => (r.path === '/gone' ? 410 : 200));
      assert.equal((await h.admin('POST', `${base(teamId)}/${hook.webhookId}/test`)).statusCode, 202);
      await receiver.waitFor(1, forWebhook('/gone'));
      const entry = await eventually(async () => {
        const found = (await listed(teamId)).find((w) => w.webhookId === hook.webhookId);
        assert.equal(found?.status, 'disabled');
        return found;
      });
      assert.ok(entry);
      const [d] = (await deliveries(teamId, hook.webhookId)).deliveries;
      assert.deepEqual([d?.status, d?.attempts, d?.lastStatusCode], ['failed', 1, 410]);
      const refused = await h.admin('POST', `${base(teamId)}/${hook.webhookId}/test`);
      assert.equal(refused.statusCode, 409, refused.body);
      assert.equal(receiver.received.filter(forWebhook('/gone')).length, 1);
      receiver.respondWith(() => 200);
    });

    test("a receiver that never answers holds back no other team's deliveries", async () => {
      const slow = await h.team();
      const quick = await h.team();
      receiver.respondWith((r) => (r.path.startsWith('/hang') ? 'hang' : 200));
      // More hanging webhooks than one team may have attempts in flight.
      const hanging = await Promise.all(
        [1, 2, 3, 4, 5, 6].map((n) => register(slow.teamId, receiver.url(`/hang${n}`), ['call.completed'])),
      );
      const fast = await register(quick.teamId, receiver.url('/quick'), ['call.completed']);
      await visible(slow.teamId, hanging[5]!.webhookId);
      await visible(quick.teamId, fast.webhookId);
      for (const hook of hanging)
        assert.equal((await h.admin('POST', `${base(slow.teamId)}/${hook.webhookId}/test`)).statusCode, 202);
      await receiver.waitFor(4, (r) => r.path.startsWith('/hang'));
      const started = Date.now();
      assert.equal((await h.admin('POST', `${base(quick.teamId)}/${fast.webhookId}/test`)).statusCode, 202);
      await receiver.waitFor(1, forWebhook('/quick'), 2_000);
      assert.ok(Date.now() - started < 2_000, 'delivered while the other team waits on its receiver');
      receiver.respondWith(() => 200);
    });
  });

void webhooksContract('embedded (SQLite)', (options) => openEmbeddedPipeline({}, options));
void webhooksContract('Kafka + PostgreSQL', (options) => openServersPipeline({}, options), serversSkip);

describe('webhook URLs under the address policy (WEBHOOK_ALLOW_PRIVATE off)', () => {
  test('400 naming url for IP literals that are not public and for localhost (with a trailing dot too); a public name is registered', async () => {
    const dir = tempDir();
    const opened = openSqlite(dir.path);
    const eventStore = createSqliteEventStore(opened.db);
    const eventLog = createSqliteEventLog(opened.db);
    const readModels = createSqliteReadModels(opened.db);
    const h = await createHarness({ eventStore, eventLog, readModels, webhookAddressPolicy: true });
    try {
      const { teamId } = await h.team();
      for (const url of [
        'http://127.0.0.1:8080/hook',
        'http://localhost/hook',
        'http://localhost./hook',
        'http://a.LOCALHOST./hook',
        'http://[::1]/hook',
        'http://10.1.2.3/hook',
        'http://169.254.169.254/latest',
        'https://[::ffff:127.0.0.1]/',
      ]) {
        const refused = await h.admin('POST', `/api/admin/teams/${teamId}/webhooks`, {
          url,
          events: ['call.completed'],
        });
        assert.equal(refused.statusCode, 400, url);
        const problem = refused.json<{ code: string; errors: Array<{ field: string; message: string }> }>();
        assert.equal(problem.code, 'VALIDATION_FAILED');
        assert.equal(problem.errors[0]?.field, 'url');
        assert.match(problem.errors[0].message, /WEBHOOK_ALLOW_PRIVATE/);
      }
      assert.equal(
        (
          await h.admin('POST', `/api/admin/teams/${teamId}/webhooks`, {
            url: 'https://hooks.example.com/calls',
            events: ['call.completed'],
          })
        ).statusCode,
        201,
      );
    } finally {
      await h.close();
      await readModels.close();
      await eventLog.close();
      await eventStore.close();
      opened.close();
      dir.remove();
    }
  });
});
