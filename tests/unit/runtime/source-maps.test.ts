/**
 * `npm start` maps stack traces back to the service's own sources and leaves the packages under
 * node_modules unmapped (services/runtime/source-maps.ts, loaded with `--import`): two compiled
 * files with inline source maps, one of the service's, one of a package's, each throwing.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../../support/temp-dir.ts';

const root = fileURLToPath(new URL('../../..', import.meta.url));

/** A compiled module whose one line throws, with an inline map naming `source` and pointing that line at its line 7. */
const compiled = (source: string) => {
  const map = { version: 3, file: 'thrower.js', sources: [source], names: [], mappings: ';AAMA' };
  return `export const boom = () => {\n  throw new Error('boom');\n};\n//# sourceMappingURL=data:application/json;base64,${Buffer.from(JSON.stringify(map)).toString('base64')}\n`;
};

test("the service's own stack frames name its sources; a package's stay as compiled", (t) => {
  const dir = tempDir();
  t.after(() => dir.remove());
  mkdirSync(join(dir.path, 'dist'));
  mkdirSync(join(dir.path, 'node_modules/some-package'), { recursive: true });
  writeFileSync(join(dir.path, 'dist/thrower.js'), compiled('../services/own-source.ts'));
  writeFileSync(join(dir.path, 'node_modules/some-package/thrower.js'), compiled('../../src/package-source.ts'));
  writeFileSync(join(dir.path, 'package.json'), '{"type":"module"}');
  writeFileSync(
    join(dir.path, 'main.js'),
    `for (const path of ['./dist/thrower.js', './node_modules/some-package/thrower.js']) {
  try { (await import(path)).boom(); } catch (error) { console.log(error.stack.split('\\n')[1].trim()); }
}
`,
  );
  const run = spawnSync(
    process.execPath,
    [`--import=${join(root, 'services/runtime/source-maps.ts')}`, join(dir.path, 'main.js')],
    { cwd: dir.path, encoding: 'utf8' },
  );
  assert.equal(run.status, 0, run.stderr);
  const [own, packaged] = run.stdout.trim().split('\n');
  assert.match(own!, /services\/own-source\.ts:7:/);
  assert.match(packaged!, /node_modules\/some-package\/thrower\.js:2:/);
});
