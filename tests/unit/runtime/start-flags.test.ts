/**
 * `npm start` and the benchmarks run the service with the same Node.js flags: package.json's
 * `start` script is `exec node <flags> dist/services/main.js` with the flags the benches use
 * (tests/bench/wrk.ts `serviceNodeFlags`), HEAP_MAX_MB defaulting to 256 in both. `exec`: the shell
 * npm starts gives its place to node, so a signal to npm reaches the service.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { root, serviceNodeFlags } from '../../bench/wrk.ts';

test('npm start runs the compiled service with the flags the benchmarks use', () => {
  const { scripts } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } };
  assert.equal(
    scripts.start,
    `exec node ${serviceNodeFlags('"${HEAP_MAX_MB:-256}"', '.').join(' ')} dist/services/main.js`,
  );
  assert.deepEqual(serviceNodeFlags(), [
    `--import=${root}/dist/services/runtime/source-maps.js`,
    `--max-old-space-size=${process.env.HEAP_MAX_MB ?? '256'}`,
    '--max-semi-space-size=16',
  ]);
});
