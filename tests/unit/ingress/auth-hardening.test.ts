/**
 * The authentication edges an attacker leans on: admin token guesses are throttled per address and
 * every refusal says how to authenticate; a refused request's socket is closed rather than left to
 * receive the rest of its body; credentials never reach a log line, percent-encoded or in a path;
 * a short ADMIN_TOKEN is refused at start.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ConfigError, loadConfig } from '../../../shared/config.ts';
import { redactUrl } from '../../../services/runtime/logger.ts';
import { type EmbeddedIngress, openEmbeddedIngress } from '../../support/embedded-ingress.ts';
import { ADMIN_TOKEN, type Harness } from '../../support/ingress-harness.ts';

describe('authentication edges', () => {
  let embedded: EmbeddedIngress;
  let h: Harness;
  let port: number;

  before(async () => {
    embedded = await openEmbeddedIngress();
    h = embedded.h;
    port = await embedded.listen();
  });
  after(() => embedded.close());

  test('admin token guesses: 20 × 401 with WWW-Authenticate per address and minute, then 429 with Retry-After; other addresses unaffected', async () => {
    const guess = (remoteAddress: string, token = 'wrong-token-0123456789abcdef0123456789') =>
      h.ingress.app.inject({
        method: 'GET',
        url: '/api/admin/teams/x',
        remoteAddress,
        headers: { authorization: `Bearer ${token}` },
      });
    const answers = [];
    for (let i = 0; i < 25; i++) answers.push(await guess('203.0.113.7'));
    assert.deepEqual(
      answers.slice(0, 20).map((a) => a.statusCode),
      Array(20).fill(401),
    );
    assert.equal(answers[0]!.headers['www-authenticate'], 'Bearer realm="admin"');
    assert.equal(answers[0]!.headers.connection, 'close');
    assert.deepEqual(
      answers.slice(20).map((a) => a.statusCode),
      Array(5).fill(429),
    );
    assert.ok(Number(answers[24]!.headers['retry-after']) > 0);
    assert.equal((await guess('203.0.113.8')).statusCode, 401, 'another address still gets its own budget');
    assert.equal(
      (await guess('203.0.113.7', ADMIN_TOKEN)).statusCode,
      404,
      'the right token still works from the throttled address',
    );
  });

  test('an API key is taken as sent: only the spaces and tabs HTTP allows around a header are dropped, not U+00A0', async () => {
    const { key } = await h.team();
    const body = { transcript: 'Rep: hi\nDana: hello' };
    for (const [headers, status] of [
      [{ 'x-api-key': ` \t${key}\t ` }, 201],
      [{ authorization: `Bearer \t${key} ` }, 201],
      [{ 'x-api-key': `${key}\u00a0` }, 401],
      [{ authorization: `Bearer ${key}\u00a0` }, 401],
    ] as const) {
      const answer = await h.ingress.app.inject({
        method: 'POST',
        url: '/api/integrations/push-api/ingest',
        headers: { 'content-type': 'application/json', ...headers },
        payload: body,
      });
      assert.equal(answer.statusCode, status, `${JSON.stringify(headers).replace(key, 'KEY')}: ${answer.body}`);
    }
  });

  test('a request refused for its key is answered and its socket closed, however much body it announced', async () => {
    const started = Date.now();
    const answer = await new Promise<{ text: string; closedAfterMs: number }>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      socket.on('data', (chunk) => (text += chunk.toString()));
      socket.on('error', reject);
      socket.on('close', () => resolve({ text, closedAfterMs: Date.now() - started }));
      // Announces 5 MB and sends a few bytes: a slow-body client.
      socket.write(
        'POST /api/integrations/push-api/ingest HTTP/1.1\r\nHost: x\r\nX-API-Key: pk_notavalidkey\r\nContent-Type: application/json\r\nContent-Length: 5000000\r\n\r\n{"transcript":',
      );
    });
    assert.match(answer.text, /^HTTP\/1\.1 401/);
    assert.match(answer.text, /connection: close/i);
    assert.ok(answer.closedAfterMs < 5000, `socket closed after ${answer.closedAfterMs} ms`);
  });

  test('URLs in log lines: keys percent-encoded (beside a bad escape too) or in a path, and the admin token anywhere, are redacted', () => {
    assert.equal(redactUrl('/api/calls?q=pk%5FAbCdEf123'), '/api/calls?q=[redacted]');
    assert.equal(redactUrl('/api/calls?q=%70%6B%5F%41%62%63'), '/api/calls?q=[redacted]');
    assert.equal(redactUrl('/api/calls/pk_AbCdEf123/x'), '/api/calls/[redacted]/x');
    assert.equal(redactUrl(`/api/admin/${ADMIN_TOKEN}/teams`), '/api/admin/[redacted]/teams');
    assert.equal(
      redactUrl(`/api/admin/${encodeURIComponent(ADMIN_TOKEN).replace(/-/g, '%2D')}`),
      '/api/admin/[redacted]',
    );
    assert.equal(redactUrl(`/x?${ADMIN_TOKEN}`), '/x?[redacted]');
    // A bad escape elsewhere in the value does not keep the valid ones from being decoded.
    assert.equal(redactUrl('/api/calls?q=%70k_AbCdEf123%ZZ'), '/api/calls?q=[redacted]');
    assert.equal(redactUrl('/api/calls?q=%ZZ%70%6B%5FAbCdEf123'), '/api/calls?q=[redacted]');
    assert.equal(redactUrl('/api/%70k_AbCdEf123%/x'), '/api/[redacted]/x');
    assert.equal(redactUrl(`/x?q=%${ADMIN_TOKEN.replace(/t/g, '%74')}`), '/x?q=[redacted]');
    assert.equal(redactUrl('/api/calls?search=100%25%ZZ%C0'), '/api/calls?search=100%25%ZZ%C0');
    assert.equal(
      redactUrl('/api/calls?access_token=abc&search=Dana'),
      '/api/calls?access_token=[redacted]&search=Dana',
    );
    assert.equal(redactUrl('/api/calls?search=Dana&limit=5'), '/api/calls?search=Dana&limit=5');
  });

  test('ADMIN_TOKEN shorter than 32 characters is refused at start, naming the variable', () => {
    assert.throws(
      () => loadConfig({ ADMIN_TOKEN: 'a'.repeat(31) }),
      (error) => error instanceof ConfigError && /ADMIN_TOKEN/.test(error.message),
    );
    assert.equal(loadConfig({ ADMIN_TOKEN: 'a'.repeat(32) }).adminToken, 'a'.repeat(32));
  });
});
