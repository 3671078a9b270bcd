/**
 * Every 4xx names the field and the rule (docs/decisions/0002-problem-json-errors.md): `errors[]`
 * on each client error of the push, read and admin APIs, also where no field of the body is at
 * fault — the credential's header on a 401 and a key's 429, the `Idempotency-Key` on its 409, 422
 * and 404, `body` on a 402 with the minutes needed and left, the path parameter that names nothing
 * on a 404, the header or `url` of a request HTTP cannot carry, `headers` or `body` on a 431 or 408.
 * Before, each of these carried a `detail` only.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { answerClientError } from '../../../services/ingress/app.ts';
import { idempotencyIdOf, newCallId } from '../../../services/ingress/ingest-route.ts';
import { AggregateRepository } from '../../../services/runtime/aggregate-repository.ts';
import { idempotencyDecider, idempotencyEvents } from '../../../shared/domain/idempotency/idempotency-decider.ts';
import { rateLimitRefusals } from '../../../shared/observability/metrics.ts';
import { allTopics } from '../../../shared/topics.ts';
import { type EmbeddedPipeline, openEmbeddedPipeline } from '../../support/embedded-pipeline.ts';
import { ADMIN_TOKEN } from '../../support/ingress-harness.ts';

const TRANSCRIPT = 'Rep: Hello Dana, thanks for joining.\nDana: Happy to be here.';

interface Problem {
  code: string;
  status: number;
  detail: string;
  errors?: { field: string; message: string }[];
}

/** The problem of an answer, checked to be one with the status and code expected. */
const problemOf = (answer: { statusCode: number; body: string }, status: number, code: string): Problem => {
  assert.equal(answer.statusCode, status, answer.body);
  const problem = JSON.parse(answer.body) as Problem;
  assert.equal(problem.code, code, answer.body);
  return problem;
};

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
const rawProblem = (answer: string): Problem => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as Problem;

let addresses = 0;
/** A client address of its own: failed authentications are counted per address. */
const freshAddress = () => `198.51.100.${++addresses}`;

describe('every 4xx names the field and the rule', () => {
  let embedded: EmbeddedPipeline;
  let port: number;

  before(async () => {
    embedded = await openEmbeddedPipeline({}, { erasure: true });
    await embedded.h.ingress.app.listen({ port: 0, host: '127.0.0.1' });
    port = (embedded.h.ingress.app.server.address() as { port: number }).port;
  });
  after(() => embedded.close());

  const inject = (options: {
    method?: 'GET' | 'POST' | 'DELETE';
    url: string;
    headers?: Record<string, string>;
    payload?: string;
    remoteAddress?: string;
  }) =>
    embedded.h.ingress.app.inject({
      method: options.method ?? 'GET',
      url: options.url,
      headers: options.headers ?? {},
      payload: options.payload,
      remoteAddress: options.remoteAddress ?? '127.0.0.1',
    });
  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };

  /** A call of a new team that ran to its end. */
  const completedCall = async (headers: Record<string, string> = {}) => {
    const { h } = embedded;
    const team = await h.team();
    const accepted = await h.ingest({ key: team.key, body: { transcript: TRANSCRIPT }, headers });
    assert.equal(accepted.statusCode, 201, accepted.body);
    const { callId } = accepted.json<{ callId: string }>();
    await h.callEvents(callId);
    return { ...team, callId };
  };

  test('401 API_KEY_INVALID names the header the key came in (or should have) and the rule', async () => {
    const { h } = embedded;
    const cases: [string, Record<string, string>, { field: string; message: RegExp }][] = [
      [
        'no key',
        {},
        {
          field: 'X-API-Key',
          message: /^is required: send the Push API key \(pk_…\) here or as Authorization: Bearer <key>/,
        },
      ],
      [
        'a wrong X-API-Key',
        { 'x-api-key': 'pk_wrong' },
        { field: 'X-API-Key', message: /^is not a valid API key: it is mistyped, unknown or revoked$/ },
      ],
      [
        'a wrong bearer key',
        { authorization: 'Bearer pk_wrong' },
        { field: 'Authorization', message: /^is not a valid API key: it is mistyped, unknown or revoked$/ },
      ],
      [
        'Basic credentials',
        { authorization: 'Basic dXNlcjpwYXNz' },
        { field: 'Authorization', message: /^must be Bearer <key>/ },
      ],
    ];
    for (const [what, headers, expected] of cases)
      for (const url of ['/api/integrations/push-api/ingest', '/api/calls']) {
        const answer = await inject({
          method: url === '/api/calls' ? 'GET' : 'POST',
          url,
          headers: { ...headers, 'content-type': 'application/json' },
          payload: url === '/api/calls' ? undefined : '{}',
          remoteAddress: freshAddress(),
        });
        const problem = problemOf(answer, 401, 'API_KEY_INVALID');
        assert.equal(problem.errors?.length, 1, `${what} ${url}: ${answer.body}`);
        assert.equal(problem.errors[0]!.field, expected.field, `${what} ${url}`);
        assert.match(problem.errors[0]!.message, expected.message, `${what} ${url}`);
      }

    const { teamId, key, keyId } = await h.team();
    assert.equal((await h.admin('DELETE', `/api/admin/teams/${teamId}/keys/${keyId}`)).statusCode, 204);
    const revoked = problemOf(await h.ingest({ key, body: {} }), 401, 'API_KEY_INVALID');
    assert.deepEqual(revoked.errors, [
      { field: 'X-API-Key', message: 'is not a valid API key: it is mistyped, unknown or revoked' },
    ]);
  });

  test('401 past 100 failed authentications from one address: still 401, with Retry-After, the address named in the detail, counted as before', async () => {
    const { h } = embedded;
    const remoteAddress = freshAddress();
    const refusals = async () =>
      (await rateLimitRefusals.get()).values.find((v) => v.labels.limit === 'auth-failure')?.value ?? 0;
    for (let i = 0; i < 100; i++) await h.ingest({ key: `pk_bad${i}`, body: {}, remoteAddress });
    const before = await refusals();
    const answer = await h.ingest({ key: 'pk_bad', body: {}, remoteAddress });
    const problem = problemOf(answer, 401, 'API_KEY_INVALID');
    assert.ok(Number(answer.headers['retry-after']) >= 1, 'Retry-After');
    assert.equal(answer.headers['www-authenticate'], 'Bearer realm="push-api"');
    assert.match(problem.detail, /This address has failed to authenticate more than 100 times in 60 s/);
    assert.deepEqual(problem.errors, [
      { field: 'X-API-Key', message: 'is not a valid API key: it is mistyped, unknown or revoked' },
    ]);
    assert.equal(await refusals(), before + 1, 'rate_limit_refusals_total{limit="auth-failure"}');
    const { key } = await h.team();
    assert.equal((await h.ingest({ key, body: { transcript: TRANSCRIPT }, remoteAddress })).statusCode, 201);
  });

  test("429 RATE_LIMITED names the key's header and the limit in its numbers", async () => {
    const { h } = embedded;
    for (const [header, field] of [
      ['x-api-key', 'X-API-Key'],
      ['authorization', 'Authorization'],
    ] as const) {
      const { key } = await h.team();
      const headers = { [header]: header === 'authorization' ? `Bearer ${key}` : key };
      for (let i = 0; i < 30; i++) await h.ingest({ body: {}, headers });
      const problem = problemOf(await h.ingest({ body: {}, headers }), 429, 'RATE_LIMITED');
      assert.deepEqual(problem.errors, [{ field, message: 'at most 30 requests in 60 s for this key' }]);
    }
  });

  test("the read API's own 429 names the key's header and its limit, and leaves the key's ingest alone", async () => {
    const { h } = embedded;
    const { key } = await h.team();
    const read = () =>
      h.ingress.app.inject({ method: 'GET', url: '/api/calls?limit=1', headers: { 'x-api-key': key } });
    for (let i = 0; i < 600; i++) assert.equal((await read()).statusCode, 200);
    const answer = await read();
    const problem = problemOf(answer, 429, 'RATE_LIMITED');
    assert.ok(Number(answer.headers['retry-after']) >= 1, 'Retry-After');
    assert.deepEqual(problem.errors, [{ field: 'X-API-Key', message: 'at most 600 requests in 60 s for this key' }]);
    assert.equal(
      (await h.ingest({ key, body: { transcript: TRANSCRIPT } })).statusCode,
      201,
      'ingest has its own limit',
    );
  });

  test('401 ADMIN_TOKEN_INVALID and the admin throttle’s 429 name Authorization', async () => {
    const remoteAddress = freshAddress();
    const missing = problemOf(await inject({ url: '/api/admin/teams/x', remoteAddress }), 401, 'ADMIN_TOKEN_INVALID');
    assert.deepEqual(missing.errors, [{ field: 'Authorization', message: 'is required: Bearer <ADMIN_TOKEN>' }]);
    const wrong = { authorization: 'Bearer not-the-admin-token-0123456789abcdef' };
    const refused = problemOf(
      await inject({ url: '/api/admin/teams/x', headers: wrong, remoteAddress }),
      401,
      'ADMIN_TOKEN_INVALID',
    );
    assert.deepEqual(refused.errors, [
      {
        field: 'Authorization',
        message: 'must be Bearer <ADMIN_TOKEN>; the token sent is not one this route accepts',
      },
    ]);
    for (let i = 0; i < 18; i++) await inject({ url: '/api/admin/teams/x', headers: wrong, remoteAddress });
    const throttled = problemOf(
      await inject({ url: '/api/admin/teams/x', headers: wrong, remoteAddress }),
      429,
      'RATE_LIMITED',
    );
    assert.deepEqual(throttled.errors, [
      { field: 'Authorization', message: 'at most 20 failed admin authentications in 60 s from one address' },
    ]);
  });

  test('402 CAPACITY_EXHAUSTED names the body, the minutes the call needs and the minutes the team has left', async () => {
    const { h } = embedded;
    const { key } = await h.team({ capacityHours: 0 });
    // Audio of unknown length reserves 30 minutes (README, Capacity).
    const problem = problemOf(
      await h.ingest({ key, body: { audioUrl: 'https://recordings.example.com/call.mp3' } }),
      402,
      'CAPACITY_EXHAUSTED',
    );
    assert.deepEqual(problem.errors, [
      {
        field: 'body',
        message:
          "needs about 30 minutes of live call capacity (the call's estimate) and the team has 0 minutes left, with auto-recharge off; a call is taken while any is left",
      },
    ]);
    assert.match(problem.detail, /needs about 30 minutes .*; the team has 0 minutes left\.$/);
  });

  test('422 and 409 of an Idempotency-Key, and its 404 once its call was erased, name the header', async () => {
    const { h } = embedded;
    const { key, keyId } = await h.team();
    const payload = JSON.stringify({ transcript: TRANSCRIPT, callTitle: 'first' });
    const first = await h.ingest({ key, payload, headers: { 'idempotency-key': 'crm-1' } });
    assert.equal(first.statusCode, 201, first.body);
    const reused = problemOf(
      await h.ingest({
        key,
        body: { transcript: TRANSCRIPT, callTitle: 'second' },
        headers: { 'idempotency-key': 'crm-1' },
      }),
      422,
      'IDEMPOTENCY_KEY_REUSED',
    );
    assert.deepEqual(reused.errors, [
      {
        field: 'Idempotency-Key',
        message:
          'was used with another body within 24 hours; a key stands for one request, so send a new key for a new body',
      },
    ]);

    // A request with this key and body that is still being handled: its claim, as the route makes it.
    await new AggregateRepository(h.eventStore, idempotencyDecider, idempotencyEvents).handle(
      idempotencyIdOf(keyId, 'crm-2'),
      {
        type: 'Claim',
        bodyHash: createHash('sha256').update(payload).digest('hex'),
        now: new Date().toISOString(),
        callId: newCallId(),
        attempt: 'in-flight',
      },
    );
    const inUse = await h.ingest({ key, payload, headers: { 'idempotency-key': 'crm-2' } });
    const conflict = problemOf(inUse, 409, 'CONFLICT');
    assert.ok(Number(inUse.headers['retry-after']) >= 1);
    assert.deepEqual(conflict.errors, [
      {
        field: 'Idempotency-Key',
        message: 'is held by a request with the same body still being handled; a key serves one request at a time',
      },
    ]);

    const { callId } = first.json<{ callId: string }>();
    await h.callEvents(callId);
    const erased = await inject({ method: 'DELETE', url: `/api/calls/${callId}`, headers: { 'x-api-key': key } });
    assert.equal(erased.statusCode, 202, erased.body);
    const gone = problemOf(await h.ingest({ key, payload, headers: { 'idempotency-key': 'crm-1' } }), 404, 'NOT_FOUND');
    assert.deepEqual(gone.errors, [
      {
        field: 'Idempotency-Key',
        message: 'names a call that was erased; the key submits nothing until its 24 hours end',
      },
    ]);
  });

  test('a webhook the domain refuses names the field it refuses, not the body', async () => {
    const { h } = embedded;
    const { teamId } = await h.team();
    for (const [body, field, message] of [
      [{ url: 'ftp://x.example/', events: ['call.completed'] }, 'url', 'url must be http or https'],
      [{ url: 'http://u:p@x.example/', events: ['call.completed'] }, 'url', 'url must not carry credentials'],
    ] as const) {
      const answer = await h.admin('POST', `/api/admin/teams/${teamId}/webhooks`, body);
      const problem = problemOf(answer, 400, 'VALIDATION_FAILED');
      assert.deepEqual(problem.errors, [{ field, message }], JSON.stringify(body));
    }
  });

  test('404 names the path parameter that names nothing, or url for a route that does not exist', async () => {
    const { h } = embedded;
    const { teamId, key } = await h.team();
    const apiKey = { 'x-api-key': key };
    const webhook = await h.admin('POST', `/api/admin/teams/${teamId}/webhooks`, {
      url: 'http://127.0.0.1:9/hook',
      events: ['call.completed'],
    });
    assert.equal(webhook.statusCode, 201, webhook.body);
    const { webhookId } = webhook.json<{ webhookId: string }>();
    const unknown = '00000000-0000-4000-8000-000000000000';
    const cases: [string, 'GET' | 'POST' | 'DELETE', string, Record<string, string>, string, string][] = [
      [
        'a route',
        'GET',
        '/api/nothing',
        {},
        'url',
        'must name a route of this API for GET (the routes are listed at /docs)',
      ],
      ['a call', 'GET', `/api/calls/${unknown}`, apiKey, 'callId', 'must name a call of this team'],
      ['a call', 'GET', `/api/calls/${unknown}/events`, apiKey, 'callId', 'must name a call of this team'],
      ['a call', 'GET', `/api/calls/${unknown}/transcript`, apiKey, 'callId', 'must name a call of this team'],
      ['a call', 'DELETE', `/api/calls/${unknown}`, apiKey, 'callId', 'must name a call of this team'],
      ['a call', 'POST', `/api/admin/calls/${unknown}/retry`, admin, 'callId', 'must name a call'],
      ['a team', 'GET', `/api/admin/teams/${unknown}`, admin, 'teamId', 'must name an existing team'],
      ['a team', 'POST', `/api/admin/teams/${unknown}/keys`, admin, 'teamId', 'must name an existing team'],
      ['a team', 'GET', `/api/admin/teams/${unknown}/webhooks`, admin, 'teamId', 'must name an existing team'],
      [
        'a team',
        'GET',
        `/api/admin/teams/${unknown}/webhooks/${webhookId}/deliveries`,
        admin,
        'teamId',
        'must name an existing team',
      ],
      [
        'a key',
        'DELETE',
        `/api/admin/teams/${teamId}/keys/${unknown}`,
        admin,
        'keyId',
        'must name an API key of this team',
      ],
      [
        'a webhook',
        'DELETE',
        `/api/admin/teams/${teamId}/webhooks/${unknown}`,
        admin,
        'webhookId',
        'must name a webhook of this team',
      ],
      [
        'a delivery',
        'POST',
        `/api/admin/teams/${teamId}/webhooks/${webhookId}/deliveries/${unknown}/redeliver`,
        admin,
        'deliveryId',
        'must name a delivery of this webhook',
      ],
      [
        'an erasure',
        'GET',
        `/api/admin/teams/${teamId}/erasures/${unknown}`,
        admin,
        'erasureId',
        'must name an erasure request of this team',
      ],
      [
        'a topic',
        'GET',
        '/api/admin/topics/no.such.topic/messages',
        admin,
        'topic',
        `must be one of ${allTopics(embedded.h.topics).join(', ')}`,
      ],
      [
        'a projection',
        'POST',
        '/api/admin/projections/deals/replay',
        admin,
        'projection',
        'must be one of call-history',
      ],
      [
        'a schema',
        'GET',
        '/docs/events/NoSuchEvent.json',
        {},
        'name',
        'must name a schema listed at /docs/events/index.json',
      ],
    ];
    for (const [what, method, url, headers, field, message] of cases) {
      const body =
        method === 'POST'
          ? { headers: { ...headers, 'content-type': 'application/json' }, payload: '{}' }
          : { headers };
      const problem = problemOf(await inject({ method, url, ...body }), 404, 'NOT_FOUND');
      assert.deepEqual(problem.errors, [{ field, message }], `${what}: ${method} ${url}`);
    }
  });

  test('409s name what conflicts: the key revoked, the e-mail taken, the webhook rotated, the call not retriable, the transcript without times', async () => {
    const { h } = embedded;
    const { teamId, keyId, callId } = await completedCall();
    assert.equal((await h.admin('DELETE', `/api/admin/teams/${teamId}/keys/${keyId}`)).statusCode, 204);
    const revokedTwice = problemOf(
      await h.admin('DELETE', `/api/admin/teams/${teamId}/keys/${keyId}`),
      409,
      'CONFLICT',
    );
    assert.deepEqual(revokedTwice.errors, [{ field: 'keyId', message: 'must name a key that is not revoked' }]);

    const taken = problemOf(
      await h.admin('POST', `/api/admin/teams/${teamId}/members`, { email: 'OWNER@acme.test', name: 'Dana' }),
      409,
      'CONFLICT',
    );
    assert.deepEqual(
      taken.errors?.map((e) => e.field),
      ['email'],
    );
    assert.match(taken.errors[0]!.message, /owner or of another member/);

    const hook = await h.admin('POST', `/api/admin/teams/${teamId}/webhooks`, {
      url: 'http://127.0.0.1:9/hook',
      events: ['call.completed'],
    });
    const { webhookId } = hook.json<{ webhookId: string }>();
    const rotate = () => h.admin('POST', `/api/admin/teams/${teamId}/webhooks/${webhookId}/rotate-secret`);
    assert.equal((await rotate()).statusCode, 200);
    const overlap = problemOf(await rotate(), 409, 'CONFLICT');
    assert.deepEqual(
      overlap.errors?.map((e) => e.field),
      ['webhookId'],
    );
    assert.match(overlap.errors[0]!.message, /last rotation is more than 24 hours old/);

    const retried = problemOf(await h.admin('POST', `/api/admin/calls/${callId}/retry`), 409, 'CALL_NOT_RETRIABLE');
    assert.deepEqual(retried.errors, [
      { field: 'callId', message: 'must name a failed call whose failure trying again can change' },
    ]);

    const { key: freshKey } = await h.team();
    const timed = await h.ingest({ key: freshKey, body: { transcript: 'Rep: hello there\nDana: hi' } });
    const timedId = timed.json<{ callId: string }>().callId;
    await h.callEvents(timedId);
    const srt = problemOf(
      await inject({ url: `/api/calls/${timedId}/transcript?format=srt`, headers: { 'x-api-key': freshKey } }),
      409,
      'TRANSCRIPT_NOT_TIMED',
    );
    assert.deepEqual(srt.errors, [
      {
        field: 'format',
        message: 'may be srt only for a transcript with timings; this one has none: ask for json or txt',
      },
    ]);
  });

  test('400 BAD_REQUEST names the header or url; 431 the headers', async () => {
    const cases: [string, string, { field: string; message: string }][] = [
      [
        'a malformed Content-Length',
        'POST /api/integrations/push-api/ingest HTTP/1.1\r\nHost: x\r\nContent-Length: 12abc\r\n\r\n{}',
        { field: 'Content-Length', message: 'must be one whole number of bytes' },
      ],
      [
        'a URL that does not decode',
        'GET /api/calls/%c0 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
        { field: 'url', message: 'must decode as UTF-8: its %-escapes must spell whole UTF-8 characters' },
      ],
      [
        'a path parameter over 100 characters',
        `GET /api/calls/${'a'.repeat(101)} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
        { field: 'url', message: 'each path parameter is at most 100 characters' },
      ],
      [
        'headers over 16 KB',
        `GET /api/calls HTTP/1.1\r\nHost: x\r\nX-Filler: ${'a'.repeat(20_000)}\r\n\r\n`,
        { field: 'headers', message: 'the request line (the URL included) and headers together at most 16 KB' },
      ],
    ];
    for (const [what, raw, entry] of cases) {
      const problem = rawProblem(await rawRequest(port, raw));
      assert.deepEqual(problem.errors, [entry], what);
    }
  });

  test('408 names the headers when they had not all arrived, the body when it was the body', () => {
    const answerOf = (parser: { incoming?: unknown } | undefined) => {
      let written = '';
      const socket = {
        destroyed: false,
        writable: true,
        parser,
        write: (text: string) => (written += text),
        destroy: () => undefined,
      } as unknown as Socket;
      answerClientError(Object.assign(new Error('timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), socket);
      assert.match(written, /^HTTP\/1\.1 408 /);
      return rawProblem(written);
    };
    assert.deepEqual(answerOf({ incoming: null }).errors, [
      { field: 'headers', message: 'the request line and headers must arrive within 60 s' },
    ]);
    assert.deepEqual(answerOf({ incoming: {} }).errors, [
      { field: 'body', message: "must arrive whole within 60 s of the request's start" },
    ]);
  });

  test('every 4xx each route gives to what draws the answers of its kind carries errors[]', async () => {
    const { h } = embedded;
    const { key } = await h.team();
    const doc = (await inject({ url: '/docs/json' })).json<{
      paths: Record<string, Record<string, { security?: Record<string, unknown>[] }>>;
    }>();
    const missing: string[] = [];
    const remoteAddress = freshAddress();
    for (const [path, operations] of Object.entries(doc.paths))
      for (const [lower, operation] of Object.entries(operations)) {
        const method = lower.toUpperCase() as 'GET' | 'POST' | 'DELETE';
        const schemes = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement));
        const credential: Record<string, string> = schemes.includes('adminToken')
          ? admin
          : schemes.length > 0
            ? { 'x-api-key': key }
            : {};
        const url = path.replaceAll(/\{[^}]+\}/g, 'x');
        const sends: [string, Parameters<typeof inject>[0]][] = [
          ['as it is', { method, url, headers: credential }],
          ['without credentials', { method, url, remoteAddress }],
          ['a path that does not decode', { method, url: path.replace(/\{[^}]+\}/, '%c0'), headers: credential }],
        ];
        if (method !== 'GET') {
          const json = { ...credential, 'content-type': 'application/json' };
          sends.push(
            ['text/plain', { method, url, headers: { ...credential, 'content-type': 'text/plain' }, payload: 'hi' }],
            ['malformed JSON', { method, url, headers: json, payload: '{"name":' }],
            ['gzip', { method, url, headers: { ...json, 'content-encoding': 'gzip' }, payload: '\x1f\x8b\x08' }],
          );
        }
        for (const [sent, options] of sends) {
          const answer = await inject(options);
          if (answer.statusCode < 400 || answer.statusCode >= 500) continue;
          const { errors } = JSON.parse(answer.body) as Problem;
          if (!errors?.length || errors.some((e) => !e.field || !e.message))
            missing.push(`${method} ${path} ${answer.statusCode} (${sent}): ${answer.body}`);
        }
      }
    assert.deepEqual(missing, []);
  });
});
