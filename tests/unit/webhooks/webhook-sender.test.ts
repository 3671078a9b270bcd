/**
 * The webhook sender on its own: the address policy (refused unless WEBHOOK_ALLOW_PRIVATE), no
 * redirect followed, the answer's body read to 64 KB at most, the deadline; and our signatures
 * verified by the published `standardwebhooks` library.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import {
  createWebhookSender,
  retryAfterMs,
  WebhookSendError,
} from '../../../shared/adapters/webhooks/webhook-sender.ts';
import { newWebhookSecret, signWebhook } from '../../../shared/adapters/webhooks/webhook-signature.ts';

let base = '';
const hits: string[] = [];
const server = createServer((request, response) => {
  hits.push(request.url ?? '');
  if (request.url === '/redirect') return void response.writeHead(302, { location: '/target' }).end();
  if (request.url === '/big') {
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.write('x'.repeat(200 * 1024));
    return; // never ends: only the cap ends the read
  }
  if (request.url === '/hang') return;
  // An answer whose body never ends (a receiver that acknowledged, then streamed or stalled).
  if (request.url === '/unfinished-200' || request.url === '/unfinished-410') {
    response.writeHead(request.url.endsWith('200') ? 200 : 410, { 'content-type': 'text/plain' });
    response.write('o');
    return;
  }
  response.writeHead(204).end();
});
before(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
after(() => {
  server.closeAllConnections();
  server.close();
});

const send = createWebhookSender({ timeoutMs: 1_000, maxResponseBytes: 64 * 1024, allowPrivate: true });

test('loopback, private and metadata addresses are refused unless allowed', async () => {
  const strict = createWebhookSender({ timeoutMs: 1_000, maxResponseBytes: 1024, allowPrivate: false });
  for (const url of [`${base}/ok`, 'http://10.0.0.1/', 'http://169.254.169.254/latest', 'http://[::1]/']) {
    await assert.rejects(
      strict(url, {}, '{}'),
      (error: unknown) => error instanceof WebhookSendError && /not a public internet address/.test(error.message),
      url,
    );
  }
  // A name that resolves to loopback is refused at connect time.
  const named = createWebhookSender({
    timeoutMs: 1_000,
    maxResponseBytes: 1024,
    allowPrivate: false,
    resolveHost: async () => [{ address: '127.0.0.1', family: 4 }],
  });
  await assert.rejects(
    named(`${base.replace('127.0.0.1', 'hooks.example.com')}/ok`, {}, '{}'),
    /not a public internet address/,
  );
  assert.equal((await send(`${base}/ok`, {}, '{}')).statusCode, 204);
});

test('a redirect is an answer, never followed; at most 64 KB of a body is read; no answer within the deadline fails', async () => {
  hits.length = 0;
  assert.equal((await send(`${base}/redirect`, {}, '{}')).statusCode, 302);
  assert.deepEqual(hits, ['/redirect']);
  const big = await send(`${base}/big`, {}, '{}');
  assert.equal(big.statusCode, 200);
  assert.equal(big.body.length, 64 * 1024);
  const started = Date.now();
  await assert.rejects(send(`${base}/hang`, {}, '{}'), /no answer within 1 s/);
  assert.ok(Date.now() - started < 3_000);
  // A stopping process abandons its attempt at once.
  const stopping = new AbortController();
  const abandoned = send(`${base}/hang`, {}, '{}', stopping.signal);
  stopping.abort();
  await assert.rejects(abandoned, /abandoned/);
});

test("an answer whose body does not end within the deadline is the answer its status says, not 'no answer'", async () => {
  for (const [path, status] of [
    ['/unfinished-200', 200],
    ['/unfinished-410', 410],
  ] as const) {
    const started = Date.now();
    const answer = await send(`${base}${path}`, {}, '{}');
    assert.deepEqual([answer.statusCode, answer.body], [status, 'o'], path);
    assert.ok(Date.now() - started >= 900, 'read until the deadline');
  }
});

test('Retry-After is read as seconds or as a date to come; anything else is nothing', () => {
  const now = Date.parse('2026-11-29T12:00:00Z');
  assert.equal(retryAfterMs('120', now), 120_000);
  assert.equal(retryAfterMs(' 0 ', now), 0);
  assert.equal(retryAfterMs('Sun, 29 Nov 2026 12:01:00 GMT', now), 60_000);
  for (const header of [undefined, '', 'soon', '-5', '1.5', 'Sun, 29 Nov 2026 11:59:00 GMT'])
    assert.equal(retryAfterMs(header, now), undefined, String(header));
});

test('signatures verify with standardwebhooks, each of a rotation alone', () => {
  const [oldSecret, newSecret] = [newWebhookSecret(), newWebhookSecret()];
  const body = JSON.stringify({ type: 'webhook.test', timestamp: new Date().toISOString(), data: { x: 'é' } });
  const timestamp = Math.floor(Date.now() / 1000);
  const headers = {
    'webhook-id': 'msg_1',
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signWebhook([newSecret, oldSecret], 'msg_1', timestamp, body),
  };
  assert.deepEqual(new Webhook(newSecret).verify(body, headers), JSON.parse(body));
  assert.deepEqual(new Webhook(oldSecret).verify(body, headers), JSON.parse(body));
  assert.equal(
    signWebhook([newSecret], 'msg_1', timestamp, body),
    new Webhook(newSecret).sign('msg_1', new Date(timestamp * 1000), body),
  );
  assert.throws(() => new Webhook(newWebhookSecret()).verify(body, headers));
  assert.throws(() => new Webhook(newSecret).verify(`${body} `, headers));
});
