/**
 * A body is read as it is sent: a Content-Encoding other than identity is a 415 naming the header,
 * answered before the body is read and in the documented order (401 → 429 → 415 → 413 → 400),
 * where a gzip body was read as text and answered 400 MALFORMED_JSON quoting its compressed bytes.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { type EmbeddedIngress, openEmbeddedIngress } from '../../support/embedded-ingress.ts';
import { ADMIN_TOKEN, type Harness } from '../../support/ingress-harness.ts';

const TRANSCRIPT = 'Rep: Hello Dana, thanks for joining.\nDana: Happy to be here.';
const MB = 1024 * 1024;

interface Problem {
  code: string;
  detail: string;
  errors?: { field: string; message: string }[];
}

const IDENTITY_ONLY = { field: 'Content-Encoding', message: 'must be identity: only an uncompressed body is accepted' };

describe('Content-Encoding: identity only, refused 415 before the body is read', () => {
  let embedded: EmbeddedIngress;
  let h: Harness;

  before(async () => {
    embedded = await openEmbeddedIngress();
    h = embedded.h;
  });
  after(() => embedded.close());

  const gzipped = gzipSync(JSON.stringify({ transcript: TRANSCRIPT }));
  const send = (
    key: string | undefined,
    encoding: string,
    payload: Buffer | string = gzipped,
    remoteAddress?: string,
  ) =>
    h.ingress.app.inject({
      method: 'POST',
      url: '/api/integrations/push-api/ingest',
      remoteAddress: remoteAddress ?? '127.0.0.1',
      headers: {
        'content-type': 'application/json',
        'content-encoding': encoding,
        ...(key ? { 'x-api-key': key } : {}),
      },
      payload,
    });

  test('a gzip body is 415 UNSUPPORTED_MEDIA_TYPE naming Content-Encoding, its bytes not quoted; nothing is accepted', async () => {
    const { key } = await h.team();
    const answer = await send(key, 'gzip');
    assert.equal(answer.statusCode, 415, answer.body);
    const problem = answer.json<Problem>();
    assert.equal(problem.code, 'UNSUPPORTED_MEDIA_TYPE');
    assert.deepEqual(problem.errors, [IDENTITY_ONLY]);
    assert.equal(problem.detail, 'Content-Encoding "gzip" is not accepted: send the body uncompressed (identity).');
    assert.ok(!answer.body.includes('\\u001f'), 'no compressed byte is echoed');
    for (const encoding of ['br', 'deflate', 'x-gzip', 'gzip, identity', 'identity, gzip']) {
      const refused = await send(key, encoding);
      assert.equal(refused.statusCode, 415, `${encoding}: ${refused.body}`);
      assert.deepEqual(refused.json<Problem>().errors, [IDENTITY_ONLY], encoding);
    }
  });

  test('identity, in any case, is the body as sent: 201', async () => {
    const { key } = await h.team();
    for (const encoding of ['identity', 'IDENTITY', ' identity ']) {
      const answer = await send(key, encoding, JSON.stringify({ transcript: TRANSCRIPT }));
      assert.equal(answer.statusCode, 201, `${encoding}: ${answer.body}`);
    }
  });

  test('the order holds: 401 and 429 before it, it before 413 and before the Content-Type', async () => {
    assert.equal((await send('pk_wrong', 'gzip', gzipped, '203.0.113.90')).statusCode, 401);
    assert.equal((await send(undefined, 'gzip', gzipped, '203.0.113.90')).statusCode, 401);

    const { key } = await h.team();
    for (let i = 0; i < 30; i++) await h.ingest({ key, body: {} });
    assert.equal((await send(key, 'gzip')).statusCode, 429);

    const other = (await h.team()).key;
    const huge = await send(other, 'gzip', Buffer.alloc(11 * MB, 0x61));
    assert.equal(huge.statusCode, 415, 'before its size: 415, not 413');
    assert.deepEqual(huge.json<Problem>().errors, [IDENTITY_ONLY]);

    const asText = await h.ingress.app.inject({
      method: 'POST',
      url: '/api/integrations/push-api/ingest',
      headers: { 'content-type': 'text/plain', 'content-encoding': 'gzip', 'x-api-key': other },
      payload: gzipped,
    });
    assert.equal(asText.statusCode, 415);
    assert.deepEqual(asText.json<Problem>().errors, [IDENTITY_ONLY]);
  });

  test('every route that reads a body refuses it, the admin API too; a request without a body is unaffected', async () => {
    const created = await h.ingress.app.inject({
      method: 'POST',
      url: '/api/admin/teams',
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        'content-type': 'application/json',
        'content-encoding': 'gzip',
      },
      payload: gzipSync(JSON.stringify({ name: 'Acme', ownerEmail: 'olive@acme.test' })),
    });
    assert.equal(created.statusCode, 415, created.body);
    assert.deepEqual(created.json<Problem>().errors, [IDENTITY_ONLY]);

    const { key } = await h.team();
    const usage = await h.ingress.app.inject({
      method: 'GET',
      url: '/api/usage',
      headers: { 'x-api-key': key, 'content-encoding': 'gzip' },
    });
    assert.equal(usage.statusCode, 200, usage.body);
  });

  test('the 415 is answered before the body arrives', async () => {
    const { key } = await h.team();
    const port = await embedded.listen();
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      socket.on('data', (chunk) => {
        text += chunk.toString();
        if (text.includes('\r\n\r\n')) {
          socket.destroy();
          resolve(text);
        }
      });
      socket.on('error', reject);
      // Without an answer by then it was waiting for the body.
      socket.setTimeout(5_000, () => {
        socket.destroy();
        resolve(text);
      });
      // Announces 5 MB and sends a few bytes: the answer cannot wait for the rest.
      socket.write(
        `POST /api/integrations/push-api/ingest HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: 5000000\r\n\r\n\x1f\x8b`,
      );
    });
    assert.match(answer, /^HTTP\/1\.1 415 /);
  });
});
