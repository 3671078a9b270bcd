/**
 * Every answer carries X-Request-Id (the caller's when sane and free of credentials, a new UUID
 * otherwise), and so does every log line of the request.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type EmbeddedIngress, openEmbeddedIngress } from '../../support/embedded-ingress.ts';
import { ADMIN_TOKEN, type Harness } from '../../support/ingress-harness.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('X-Request-Id', () => {
  let embedded: EmbeddedIngress;
  let h: Harness;
  let key: string;

  before(async () => {
    embedded = await openEmbeddedIngress();
    h = embedded.h;
    ({ key } = await h.team());
  });
  after(() => embedded.close());

  test("the caller's id comes back on the answer and is on every log line of the request", async () => {
    const res = await h.ingest({
      key,
      body: { transcript: 'Rep: hi\nDana: hello' },
      headers: { 'x-request-id': 'sync-7f3a.42' },
    });
    assert.equal(res.statusCode, 201);
    assert.equal(res.headers['x-request-id'], 'sync-7f3a.42');
    const lines = h.logLines.filter((line) => line.includes('"reqId":"sync-7f3a.42"'));
    assert.ok(
      lines.some((line) => line.includes('call accepted')),
      'the acceptance log line carries the id',
    );
  });

  test('an id that holds a credential (a Push API key, the admin token) is replaced by a new UUID, and never logged', async () => {
    const before = h.logLines.length;
    for (const given of [key, `sync-${key}`, ADMIN_TOKEN, `trace.${ADMIN_TOKEN}.7`]) {
      const res = await h.ingest({
        key,
        body: { transcript: 'Rep: hi\nDana: hello' },
        headers: { 'x-request-id': given },
      });
      assert.equal(res.statusCode, 201, res.body);
      assert.match(String(res.headers['x-request-id']), UUID, given);
    }
    const health = await h.ingress.app.inject({
      method: 'GET',
      url: '/healthz',
      headers: { 'x-request-id': ADMIN_TOKEN },
    });
    assert.match(String(health.headers['x-request-id']), UUID);
    const logged = h.logLines.slice(before);
    assert.ok(
      logged.some((line) => line.includes('call accepted')),
      'the requests were logged',
    );
    assert.deepEqual(
      logged.filter((line) => line.includes(key.slice(3)) || line.includes(ADMIN_TOKEN)),
      [],
    );
  });

  test('an id that is not a sane token is replaced by a new UUID; errors carry one too', async () => {
    for (const given of ['has spaces', 'x'.repeat(129), '<script>']) {
      const res = await h.ingest({
        key,
        body: { transcript: 'Rep: hi\nDana: hello' },
        headers: { 'x-request-id': given },
      });
      assert.match(String(res.headers['x-request-id']), UUID, given);
    }
    const refused = await h.ingest({ key: 'pk_wrong', body: {} });
    assert.equal(refused.statusCode, 401);
    assert.match(String(refused.headers['x-request-id']), UUID);
    const missing = await h.ingress.app.inject({ method: 'GET', url: '/nowhere' });
    assert.equal(missing.statusCode, 404);
    assert.match(String(missing.headers['x-request-id']), UUID);
  });
});
