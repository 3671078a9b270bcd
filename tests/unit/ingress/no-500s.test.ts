/**
 * Nothing a caller can send answers 500, and every error is problem+json, also those Fastify and
 * Node's HTTP parser produce below the routes. Each case answered 500 (or a non-problem body)
 * before. Over a real socket on the embedded backends, since the parser's errors never reach
 * `inject`.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { type EmbeddedIngress, openEmbeddedIngress } from '../../support/embedded-ingress.ts';
import { ADMIN_TOKEN } from '../../support/ingress-harness.ts';

const TRANSCRIPT = 'Rep: Hello Dana, thanks for joining.\nDana: Happy to be here.';

/** Writes `raw` on a fresh connection; resolves with everything the server wrote until it closed. */
const rawRequest = (port: number, raw: string): Promise<string> =>
  new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('error', (error) => (answer ? resolve(answer) : reject(error)));
    socket.on('close', () => resolve(answer));
    socket.write(raw);
  });

const statusOf = (answer: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);
const requestIdOf = (answer: string) => /^x-request-id: (.*)\r$/im.exec(answer)?.[1] ?? '';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const problemOf = (answer: string) => {
  assert.match(answer, /content-type: application\/problem\+json/i, answer.slice(0, 300));
  return JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as {
    code: string;
    status: number;
    detail: string;
    errors?: { field: string; message: string }[];
  };
};

describe('no 500 for anything a caller can send; every error is problem+json', () => {
  let embedded: EmbeddedIngress;
  let key: string;
  let port: number;

  before(async () => {
    embedded = await openEmbeddedIngress();
    ({ key } = await embedded.h.team());
    port = await embedded.listen();
  });
  after(() => embedded.close());

  const get = (path: string, headers: Record<string, string> = {}) =>
    fetch(`http://127.0.0.1:${port}${path}`, { headers: { 'x-api-key': key, ...headers } });

  test('a search or tag with U+0000: 400 naming the parameter', async () => {
    for (const query of ['search=n%00l', 'tag=a%00b']) {
      const res = await get(`/api/calls?${query}`);
      assert.equal(res.status, 400, query);
      const body = (await res.json()) as { errors: { field: string }[] };
      assert.ok(body.errors[0]!.field.startsWith(query.split('=')[0]!), body.errors[0]!.field);
    }
  });

  test('a body nested 20,000 deep with an Idempotency-Key: 400 naming the rule, not a stack overflow', async () => {
    const deep = `{"transcript":${JSON.stringify(TRANSCRIPT)},"metadata":${'['.repeat(20_000)}${']'.repeat(20_000)}}`;
    const res = await fetch(`http://127.0.0.1:${port}/api/integrations/push-api/ingest`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key, 'idempotency-key': 'deep-1' },
      body: deep,
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { errors: { message: string }[] };
    assert.match(body.errors[0]!.message, /nest/);
  });

  test('a deal with 150,000 unknown keys: 201 with the unknown keys listed up to a bound, then counted', async () => {
    const deal: Record<string, number> = { dealSize: 1000 };
    for (let i = 0; i < 150_000; i++) deal[`k${i}`] = i;
    const res = await fetch(`http://127.0.0.1:${port}/api/integrations/push-api/ingest`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body: JSON.stringify({ transcript: TRANSCRIPT, deal }),
    });
    assert.equal(res.status, 201, await res.clone().text());
    const { warnings } = (await res.json()) as { warnings: string[] };
    assert.ok(warnings.length <= 25, `${warnings.length} warnings`);
    assert.ok(warnings.includes('149980 more unknown fields in deal ignored'), JSON.stringify(warnings.slice(-3)));
  });

  test('an admin topic read from an offset beyond 64 bits: 400 naming fromOffset', async () => {
    const res = await get('/api/admin/topics/calls.submitted.v1/messages?fromOffset=99999999999999999999', {
      authorization: `Bearer ${ADMIN_TOKEN}`,
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as { errors: { field: string }[] };
    assert.match(body.errors[0]!.field, /fromOffset/);
  });

  test('a URL that does not decode: 400 BAD_REQUEST as problem+json, with X-Request-Id as every answer', async () => {
    const answer = await rawRequest(port, 'GET /api/calls/%c0 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    assert.equal(statusOf(answer), 400, answer.slice(0, 200));
    assert.equal(problemOf(answer).code, 'BAD_REQUEST');
    assert.match(requestIdOf(answer), UUID);
    const given = await rawRequest(
      port,
      'GET /%c0 HTTP/1.1\r\nHost: x\r\nX-Request-Id: sync-7f3a.42\r\nConnection: close\r\n\r\n',
    );
    assert.equal(statusOf(given), 400, given.slice(0, 200));
    assert.equal(requestIdOf(given), 'sync-7f3a.42');
  });

  test('a malformed Content-Length: 400 BAD_REQUEST as problem+json, with X-Request-Id as every answer', async () => {
    const answer = await rawRequest(
      port,
      'POST /api/integrations/push-api/ingest HTTP/1.1\r\nHost: x\r\nContent-Length: 12abc\r\n\r\n{}',
    );
    assert.equal(statusOf(answer), 400, answer.slice(0, 200));
    assert.equal(problemOf(answer).code, 'BAD_REQUEST');
    assert.match(requestIdOf(answer), UUID);
  });

  test('headers over 16 KB, or a URL that long: 431 as problem+json', async () => {
    for (const raw of [
      `GET /api/calls HTTP/1.1\r\nHost: x\r\nX-Filler: ${'a'.repeat(20_000)}\r\n\r\n`,
      `GET /api/calls?search=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`,
    ]) {
      const answer = await rawRequest(port, raw);
      assert.equal(statusOf(answer), 431, answer.slice(0, 200));
      assert.equal(problemOf(answer).code, 'REQUEST_HEADERS_TOO_LARGE');
    }
  });

  test('the schema routes serve their own schemas only: constructor, toString and __proto__ are 404', async () => {
    for (const route of ['/docs/events', '/docs/webhooks'])
      for (const name of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
        const res = await get(`${route}/${name}.json`);
        assert.equal(res.status, 404, `${route} ${name}`);
        assert.match(res.headers.get('content-type') ?? '', /problem\+json/);
      }
  });
});
