/**
 * The modules that serve or send HTTP take `node:http` from shared/node-http.ts, so loading them
 * does not load Node's bundled fetch client (undici), which an ESM import of `node:http` does.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../..', import.meta.url));

/** Whether a fresh process that imports `modules` has loaded undici. */
const loadsUndici = (modules: string[]): boolean => {
  const imports = modules.map((m) => `await import(${JSON.stringify(m.startsWith('node:') ? m : `${root}${m}`)});`);
  const run = spawnSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      `${imports.join('\n')}\nconsole.log(process.moduleLoadList.some((m) => m.includes('undici')));`,
    ],
    { cwd: root, encoding: 'utf8' },
  );
  assert.equal(run.status, 0, run.stderr);
  return run.stdout.trim() === 'true';
};

test('the HTTP server, the app, the recording fetcher and the webhook sender load no undici', () => {
  assert.equal(
    loadsUndici([
      'shared/node-http.ts',
      'services/runtime/health-server.ts',
      'services/ingress/app.ts',
      'shared/adapters/audio/http-audio-source.ts',
      'shared/adapters/webhooks/webhook-sender.ts',
    ]),
    false,
  );
});

test('an ESM import of node:http does load it (what the test above would see)', () => {
  assert.equal(loadsUndici(['node:http']), true);
});
