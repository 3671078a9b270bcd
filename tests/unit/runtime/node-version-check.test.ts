import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { SUPPORTED_NODE, unsupportedNode } from '../../../services/runtime/node-version.ts';

test('a Node.js other than 24.11 or a later 24 is refused, naming the one to use', () => {
  for (const version of ['20.20.2', '22.22.0', '24.10.0', '25.0.0', '26.1.0']) {
    const refusal = unsupportedNode(version);
    assert.ok(refusal?.includes(`Node.js ${version}`) && refusal.includes('node_modules/.bin/node'), version);
  }
  for (const version of ['24.11.0', '24.21.0', process.versions.node])
    assert.equal(unsupportedNode(version), undefined);
});

test("the versions it takes are package.json's engines", () => {
  const { engines } = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
    engines: { node: string };
  };
  assert.equal(engines.node, `>=${SUPPORTED_NODE.major}.${SUPPORTED_NODE.minMinor} <${SUPPORTED_NODE.major + 1}`);
});
