/**
 * Webhook deliveries survive kill -9: the real service (embedded default, a child process) takes
 * calls for a team whose receiver answers 503, so their deliveries wait in the outbox on the retry
 * schedule, and more calls are still in the feed; the process is killed with SIGKILL. A new
 * process on the same DATA_DIR resumes the projection from its checkpoint and the worker from the
 * outbox: once the receiver answers 200, every accepted call's call.completed is delivered, each
 * with its own webhook-id, verified with standardwebhooks. Then the same webhook through
 * `npm run admin -- webhook …` against that process.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { eventually } from '../../support/eventually.ts';
import { ADMIN_TOKEN, API_KEY_SECRET } from '../../support/ingress-harness.ts';
import { startService, type ServiceProcess } from '../../support/service-process.ts';
import { tempDir } from '../../support/temp-dir.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../../support/webhook-receiver.ts';

const TRANSCRIPT = 'Rep: Hello Dana, thanks for joining.\nDana: Happy to be here, what does it cost?';
const CALLS = 6;
const root = fileURLToPath(new URL('../../..', import.meta.url));

describe('webhooks on the real service: deliveries across kill -9, and the admin CLI', { timeout: 3 * 60_000 }, () => {
  const dir = tempDir();
  let service: ServiceProcess | undefined;
  let receiver: WebhookReceiver;
  const env = {
    DATA_DIR: dir.path,
    ADMIN_TOKEN,
    API_KEY_SECRET,
    WEBHOOK_ALLOW_PRIVATE: 'true',
    WEBHOOK_RETRY_SCHEDULE: Array.from({ length: 10 }, () => '300ms').join(','),
  };
  const admin = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${service!.url}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    assert.ok(res.ok, `${method} ${path}: ${res.status}`);
    return res.status === 204 ? {} : ((await res.json()) as Record<string, unknown>);
  };

  before(async () => {
    receiver = await startWebhookReceiver(() => 503);
    service = await startService(env);
  });
  after(async () => {
    await service?.stop();
    await receiver?.close();
    dir.remove();
  });

  test('every accepted call is delivered after a restart, once the receiver answers', async () => {
    const { teamId } = (await admin('POST', '/api/admin/teams', {
      name: 'Kill',
      ownerEmail: 'owner@kill.test',
      capacityHours: 100,
    })) as { teamId: string };
    const { key } = (await admin('POST', `/api/admin/teams/${teamId}/keys`, {})) as { key: string };
    const { webhookId, secret } = (await admin('POST', `/api/admin/teams/${teamId}/webhooks`, {
      url: receiver.url('/kill'),
      events: ['call.completed'],
    })) as {
      webhookId: string;
      secret: string;
    };
    await eventually(async () =>
      assert.equal(
        ((await admin('GET', `/api/admin/teams/${teamId}/webhooks`)) as { webhooks: unknown[] }).webhooks.length,
        1,
      ),
    );

    const callIds: string[] = [];
    for (let i = 0; i < CALLS; i++) {
      const res = await fetch(`${service!.url}/api/integrations/push-api/ingest`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': key },
        body: JSON.stringify({ transcript: `${TRANSCRIPT} (${i})` }),
      });
      assert.equal(res.status, 201);
      callIds.push(((await res.json()) as { callId: string }).callId);
      // Kill once the first delivery was attempted: the rest are queued, retrying or still in the feed.
      if (i === 2) await receiver.waitFor(1, undefined, 30_000);
    }
    await service!.kill9();
    const refusedBefore = receiver.received.length;
    assert.ok(refusedBefore >= 1);

    receiver.respondWith(() => 200);
    service = await startService(env);
    const delivered = await eventually(
      () => {
        const ok = receiver.received.slice(refusedBefore).filter((r) => r.json.type === 'call.completed');
        const calls = new Set(ok.map((r) => r.json.data.callId));
        assert.equal(calls.size, CALLS, `delivered ${calls.size} of ${CALLS}`);
        return ok;
      },
      { timeoutMs: 60_000, intervalMs: 100 },
    );
    for (const request of delivered) {
      new Webhook(secret).verify(request.body, request.headers as Record<string, string>);
      assert.ok(callIds.includes(String(request.json.data.callId)));
    }
    const ids = new Set(delivered.map((r) => r.headers['webhook-id']));
    assert.equal(ids.size, CALLS, 'one webhook-id per call, the same across its attempts');
    // One delivery per call, none queued twice, all delivered.
    await eventually(async () => {
      const listing = (await admin('GET', `/api/admin/teams/${teamId}/webhooks/${webhookId}/deliveries?limit=100`)) as {
        deliveries: Array<{ status: string }>;
      };
      assert.deepEqual(
        listing.deliveries.map((d) => d.status),
        Array.from({ length: CALLS }, () => 'delivered'),
      );
    });
  });

  test('npm run admin -- webhook create, list, test, deliveries, rotate-secret, redeliver, delete', async () => {
    const cli = async (...args: string[]) => {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ['--import', 'tsx', 'services/admin-cli.ts', ...args],
        {
          cwd: root,
          env: { ...process.env, API_URL: service!.url, ADMIN_TOKEN },
        },
      );
      return stdout.trim() === 'deleted' ? {} : (JSON.parse(stdout) as Record<string, unknown>);
    };
    const { teamId } = (await admin('POST', '/api/admin/teams', {
      name: 'CLI',
      ownerEmail: 'owner@cli.test',
      capacityHours: 1,
    })) as { teamId: string };
    const created = await cli(
      'webhook',
      'create',
      '--team',
      teamId,
      '--url',
      receiver.url('/cli'),
      '--events',
      'call.completed,call.failed',
    );
    assert.deepEqual(created.events, ['call.completed', 'call.failed']);
    const webhookId = String(created.webhookId);
    await eventually(
      async () => assert.equal(((await cli('webhook', 'list', '--team', teamId)).webhooks as unknown[]).length, 1),
      { timeoutMs: 20_000, intervalMs: 200 },
    );
    const { eventId } = await cli('webhook', 'test', '--team', teamId, '--webhook', webhookId);
    const [got] = await receiver.waitFor(1, (r) => r.path === '/cli');
    assert.equal(got!.headers['webhook-id'], eventId);
    new Webhook(String(created.secret)).verify(got!.body, got!.headers as Record<string, string>);
    const listing = await cli(
      'webhook',
      'deliveries',
      '--team',
      teamId,
      '--webhook',
      webhookId,
      '--status',
      'delivered',
    );
    const [delivery] = listing.deliveries as Array<{ deliveryId: string; eventId: string }>;
    assert.equal(delivery?.eventId, eventId);
    assert.match(
      String((await cli('webhook', 'rotate-secret', '--team', teamId, '--webhook', webhookId)).secret),
      /^whsec_/,
    );
    assert.deepEqual(
      await cli('webhook', 'redeliver', '--team', teamId, '--webhook', webhookId, '--delivery', delivery!.deliveryId),
      { deliveryId: delivery!.deliveryId },
    );
    await receiver.waitFor(2, (r) => r.path === '/cli');
    await cli('webhook', 'delete', '--team', teamId, '--webhook', webhookId);
    await eventually(
      async () => assert.equal(((await cli('webhook', 'list', '--team', teamId)).webhooks as unknown[]).length, 0),
      { timeoutMs: 20_000, intervalMs: 200 },
    );
  });
});
