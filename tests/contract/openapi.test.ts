/**
 * The OpenAPI document at /docs/json is one client generators accept: valid OpenAPI 3.1 for a
 * published validator (@apidevtools/swagger-parser), covering every route, and a TypeScript client
 * generated from it (openapi-typescript) type-checks the README's own examples — and refuses a
 * request that breaks the contract. It declares every answer the service gives, each error as
 * application/problem+json (README; docs/decisions/0002-problem-json-errors.md): every route is
 * sent what draws the answers of its kind, and each answer is looked up in the document.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync, writeFileSync } from 'node:fs';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import SwaggerParser from '@apidevtools/swagger-parser';
import openapiTS, { astToString } from 'openapi-typescript';
import { ADMIN_AUTH_FAILURE_RULE } from '../../services/ingress/admin-routes.ts';
import { AUTH_FAILURE_RULE } from '../../services/ingress/api-key-access.ts';
import { type EmbeddedPipeline, openEmbeddedPipeline } from '../support/embedded-pipeline.ts';
import { eventually } from '../support/eventually.ts';
import { ADMIN_TOKEN } from '../support/ingress-harness.ts';
import { tempDir } from '../support/temp-dir.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** The ingest example of the README ("Sending a call, step by step"): its body and the 201 it shows. */
const readmeIngestExample = () => {
  const body = /push-api\/ingest \\\n[^\n]*\n\s*-d '(\{[^']*\})'/.exec(readme)?.[1];
  const answer = /# HTTP\/1\.1 201 Created\n# (\{[^\n]*)\n# ([^\n]*\})/.exec(readme);
  assert.ok(body && answer, 'the README has its ingest example');
  return {
    body: JSON.parse(body) as unknown,
    answer: JSON.parse(`${answer[1]}${answer[2]}`.replaceAll('…', 'c0ffee00-0000-4000-8000-000000000000')) as unknown,
  };
};

type DeclaredResponse = { content?: Record<string, unknown>; headers?: Record<string, unknown> };
type Operation = { security?: Record<string, unknown>[]; responses: Record<string, DeclaredResponse> };

/** A route of the document, its path parameters filled with `x`, and the credential it takes. */
interface Route {
  method: string;
  path: string;
  url: string;
  operation: Operation;
  credential?: 'admin' | 'apiKey';
}

const routesOf = (paths: Record<string, Record<string, Operation>>): Route[] =>
  Object.entries(paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]) => {
      const schemes = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement));
      return {
        method: method.toUpperCase(),
        path,
        url: path.replaceAll(/\{[^}]+\}/g, 'x'),
        operation,
        credential: schemes.includes('adminToken') ? 'admin' : schemes.length > 0 ? 'apiKey' : undefined,
      };
    }),
  );

/** The media type without its parameters. */
const essence = (type: string) => type.split(';')[0]!.trim().toLowerCase();

/** What the document leaves out of an answer a route gave: its status, its content type, Retry-After. */
const undeclaredIn = (
  route: Route,
  answer: { status: number; headers: Record<string, unknown>; body: string },
  sent: string,
): string[] => {
  const where = `${route.method} ${route.path} ${answer.status} (${sent})`;
  const declared = route.operation.responses[String(answer.status)];
  if (!declared) return [`${where} is not declared`];
  const type = answer.headers['content-type'];
  const missing: string[] = [];
  if (answer.body !== '' && typeof type === 'string') {
    const types = Object.keys(declared.content ?? {}).map(essence);
    if (!types.includes(essence(type))) missing.push(`${where} is declared without ${essence(type)}`);
  }
  if (answer.headers['retry-after'] !== undefined && !declared.headers?.['Retry-After'])
    missing.push(`${where} is declared without Retry-After`);
  return missing;
};

/** One HTTP/1.1 answer as read off a socket: status, headers (lower-case names) and body. */
const parseAnswer = (text: string) => {
  const [head = '', body = ''] = text.split('\r\n\r\n', 2);
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(
    lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
  );
  return { status: Number(statusLine.split(' ')[1]), headers, body };
};

describe('OpenAPI document', () => {
  let embedded: EmbeddedPipeline;
  let doc: { openapi: string; paths: Record<string, Record<string, Operation>> };
  const dir = tempDir();

  before(async () => {
    // With erasure, as the service runs, so the document has every route the service serves.
    embedded = await openEmbeddedPipeline({}, { erasure: true });
    const response = await embedded.h.ingress.app.inject({ method: 'GET', url: '/docs/json' });
    assert.equal(response.statusCode, 200);
    doc = response.json();
  });
  after(async () => {
    await embedded.close();
    dir.remove();
  });

  test('is valid OpenAPI 3.1 for @apidevtools/swagger-parser', async () => {
    assert.equal(doc.openapi, '3.1.0');
    await SwaggerParser.validate(structuredClone(doc) as never);
  });

  test('covers every route of the API', () => {
    const expected: [string, string][] = [
      ['/api/integrations/push-api/ingest', 'post'],
      ['/api/calls', 'get'],
      ['/api/calls/{callId}', 'get'],
      ['/api/calls/{callId}/events', 'get'],
      ['/api/calls/{callId}/transcript', 'get'],
      ['/api/usage', 'get'],
      ['/api/admin/teams', 'post'],
      ['/api/admin/teams/{teamId}', 'get'],
      ['/api/admin/teams/{teamId}/members', 'post'],
      ['/api/admin/teams/{teamId}/keys', 'post'],
      ['/api/admin/teams/{teamId}/keys/{keyId}', 'delete'],
      ['/api/admin/teams/{teamId}/capacity', 'post'],
      ['/api/admin/topics/{topic}/messages', 'get'],
      ['/api/admin/teams/{teamId}/webhooks', 'post'],
      ['/api/admin/teams/{teamId}/webhooks', 'get'],
      ['/api/admin/teams/{teamId}/webhooks/{webhookId}', 'delete'],
      ['/api/admin/teams/{teamId}/webhooks/{webhookId}/rotate-secret', 'post'],
      ['/api/admin/teams/{teamId}/webhooks/{webhookId}/test', 'post'],
      ['/api/admin/teams/{teamId}/webhooks/{webhookId}/deliveries', 'get'],
      ['/api/admin/teams/{teamId}/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver', 'post'],
      ['/api/calls/{callId}', 'delete'],
      ['/api/admin/teams/{teamId}/retention', 'post'],
      ['/api/admin/teams/{teamId}/erasures', 'post'],
      ['/api/admin/teams/{teamId}/erasures/{erasureId}', 'get'],
      ['/metrics', 'get'],
      ['/healthz', 'get'],
      ['/readyz', 'get'],
    ];
    const missing = expected.filter(([path, method]) => !doc.paths[path]?.[method]);
    assert.deepEqual(missing, []);
  });

  test('declares every answer each route gives to what draws the answers of its kind', async () => {
    const app = embedded.h.ingress.app;
    const { key } = await embedded.h.team();
    const credentials = { admin: { authorization: `Bearer ${ADMIN_TOKEN}` }, apiKey: { 'x-api-key': key } };
    const routes = routesOf(doc.paths);
    const undeclared: string[] = [];
    const send = async (
      route: Route,
      sent: string,
      options: { url?: string; headers?: Record<string, string>; payload?: string; remoteAddress?: string } = {},
    ) => {
      const response = await app.inject({
        method: route.method as 'GET',
        url: options.url ?? route.url,
        headers: options.headers ?? (route.credential ? credentials[route.credential] : {}),
        payload: options.payload,
        remoteAddress: options.remoteAddress ?? '127.0.0.1',
      });
      undeclared.push(
        ...undeclaredIn(route, { status: response.statusCode, headers: response.headers, body: response.body }, sent),
      );
      return response.statusCode;
    };
    // Over every route's body limit, the ingest endpoint's 10 MB included.
    const tooLarge = JSON.stringify({ transcript: 'x'.repeat(11 * 1024 * 1024) });
    const drawn = new Set<string>();
    for (const route of routes) {
      const credential = route.credential ? credentials[route.credential] : {};
      drawn.add(`${await send(route, 'as it is')}`);
      if (route.credential) drawn.add(`${await send(route, 'without credentials', { headers: {} })}`);
      if (route.url !== route.path)
        drawn.add(
          `${await send(route, 'a path that does not decode', { url: route.path.replace(/\{[^}]+\}/, '%c0') })}`,
        );
      if (route.method === 'GET') continue;
      const json = { ...credential, 'content-type': 'application/json' };
      drawn.add(
        `${await send(route, 'text/plain', { headers: { ...credential, 'content-type': 'text/plain' }, payload: 'hi' })}`,
      );
      drawn.add(`${await send(route, 'malformed JSON', { headers: json, payload: '{"name":' })}`);
      drawn.add(`${await send(route, 'over the body limit', { headers: json, payload: tooLarge })}`);
    }
    // Failed authentications from one address, up to its limit; then every route of the kind is
    // refused: 429 for the admin token, 401 with Retry-After for an API key.
    for (const [credential, rule, address] of [
      ['admin', ADMIN_AUTH_FAILURE_RULE, '192.0.2.1'],
      ['apiKey', AUTH_FAILURE_RULE, '192.0.2.2'],
    ] as const) {
      const guarded = routes.filter((route) => route.credential === credential);
      for (let i = 0; i < rule.limit; i++)
        await app.inject({ method: 'GET', url: guarded.find((r) => r.method === 'GET')!.url, remoteAddress: address });
      for (const route of guarded)
        drawn.add(
          `${await send(route, 'after too many failed authentications', { headers: {}, remoteAddress: address })}`,
        );
    }
    const unready = embedded.h.health.register('openapi-test', () => ({ ready: false, reason: 'made unready' }));
    try {
      const readyz = routes.find((route) => route.path === '/readyz')!;
      drawn.add(`${await send(readyz, 'a part not ready')}`);
    } finally {
      unready();
    }
    // Each kind's answer was drawn at least once.
    for (const status of ['400', '401', '404', '413', '415', '429', '503']) assert.ok(drawn.has(status), status);
    assert.deepEqual(undeclared, []);
  });

  test("a TypeScript client generated with openapi-typescript type-checks the README's examples and refuses a broken request", async () => {
    const { body, answer } = readmeIngestExample();
    writeFileSync(join(dir.path, 'api.ts'), astToString(await openapiTS(doc as never)));
    const ingest = `paths['/api/integrations/push-api/ingest']['post']`;
    writeFileSync(
      join(dir.path, 'examples.ts'),
      `import type { paths } from './api.ts';
type Body = ${ingest}['requestBody'] extends { content: { 'application/json': infer B } } | undefined ? B : never;
type Accepted = ${ingest}['responses'][201]['content']['application/json'];
type Problem = ${ingest}['responses'][400]['content']['application/problem+json'];
export const body: Body = ${JSON.stringify(body)};
export const accepted: Accepted = ${JSON.stringify(answer)};
export const code = (problem: Problem): string => problem.code;
`,
    );
    writeFileSync(
      join(dir.path, 'broken.ts'),
      `import type { paths } from './api.ts';
type Body = ${ingest}['requestBody'] extends { content: { 'application/json': infer B } } | undefined ? B : never;
export const body: Body = { transcript: 'Rep: hi', tags: 'not-an-array' };
`,
    );
    const tsc = (files: string[]) =>
      promisify(execFile)(
        process.execPath,
        [
          join(root, 'node_modules/typescript/bin/tsc'),
          '--noEmit',
          '--strict',
          '--target',
          'ES2022',
          '--module',
          'NodeNext',
          '--moduleResolution',
          'NodeNext',
          '--allowImportingTsExtensions',
          '--skipLibCheck',
          ...files,
        ],
        { cwd: dir.path },
      ).then(
        () => '',
        (error: Error & { stdout?: string }) => error.stdout ?? error.message,
      );
    assert.equal(await tsc(['examples.ts']), '', 'the README examples type-check against the generated client');
    assert.match(
      await tsc(['broken.ts']),
      /broken\.ts\(3,\d+\): error TS2322/,
      'a body breaking the contract does not type-check',
    );
  });

  // Last: it closes the app.
  test('declares the 503 every route answers while the process shuts down', async () => {
    const app = embedded.h.ingress.app;
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as AddressInfo;
    const routes = routesOf(doc.paths);
    const accepted: Socket[] = [];
    app.server.on('connection', (socket: Socket) => accepted.push(socket));
    // Each request is begun before the close and ended after it: a connection whose request the
    // server has begun to read is not idle, so the server keeps it open to answer.
    const sockets = await Promise.all(
      routes.map(async (route) => {
        const socket = connect(port, '127.0.0.1');
        await once(socket, 'connect');
        socket.write(`${route.method} ${route.url} HTTP/1.1\r\nHost: 127.0.0.1\r\n`);
        return socket;
      }),
    );
    await eventually(() => assert.ok(accepted.length === routes.length && accepted.every((s) => s.bytesRead > 0)));
    const closed = app.close();
    await eventually(() => assert.equal(app.server.listening, false));
    const answers = await Promise.all(
      sockets.map(async (socket) => {
        const chunks: Buffer[] = [];
        socket.on('data', (chunk: Buffer) => chunks.push(chunk));
        socket.write('\r\n');
        await once(socket, 'close');
        return parseAnswer(Buffer.concat(chunks).toString('utf8'));
      }),
    );
    await closed;
    assert.deepEqual(
      answers.map(({ status }) => status),
      routes.map(() => 503),
    );
    assert.deepEqual(
      routes.flatMap((route, i) => undeclaredIn(route, answers[i]!, 'while shutting down')),
      [],
    );
  });
});
