/**
 * The OpenAPI document at /docs/json is one client generators accept: valid OpenAPI 3.1 for a
 * published validator (@apidevtools/swagger-parser), covering every route, and a TypeScript client
 * generated from it (openapi-typescript) type-checks the README's own examples — and refuses a
 * request that breaks the contract.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import SwaggerParser from '@apidevtools/swagger-parser';
import openapiTS, { astToString } from 'openapi-typescript';
import { type EmbeddedPipeline, openEmbeddedPipeline } from '../support/embedded-pipeline.ts';
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

describe('OpenAPI document', () => {
  let embedded: EmbeddedPipeline;
  let doc: { openapi: string; paths: Record<string, Record<string, unknown>> };
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
});
