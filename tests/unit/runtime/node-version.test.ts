import assert from 'node:assert/strict';
import { realpathSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';

const root = new URL('../../../', import.meta.url).pathname;

// docs/runtime.md: the tests run on the Node.js the project installs, not on the machine's own.
test('the tests run on the Node.js 24 that the project installs (node_modules/.bin/node)', () => {
  assert.equal(realpathSync(process.execPath), realpathSync(join(root, 'node_modules/.bin/node')));
  assert.match(process.version, /^v24\./);
});

test('better-sqlite3 is built for that Node.js (it loads and answers)', () => {
  const db = new Database(':memory:');
  try {
    assert.deepEqual(db.prepare('select 41 + 1 as answer').get(), { answer: 42 });
  } finally {
    db.close();
  }
});
