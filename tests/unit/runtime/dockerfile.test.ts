/**
 * docker/Dockerfile, as far as this machine can check it without a Docker engine (the image is not
 * built here): every file it copies from the repository exists, its command is `npm start`'s, and
 * that command with the image's environment starts the service, which answers /readyz on the
 * address the image exposes.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { eventually } from '../../support/eventually.ts';
import { freePort } from '../../support/service-process.ts';
import { tempDir } from '../../support/temp-dir.ts';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const instructions = readFileSync(join(root, 'docker/Dockerfile'), 'utf8')
  .replace(/\\\n/g, ' ')
  .split('\n')
  .map((line) => line.trim())
  .filter((line) => line !== '' && !line.startsWith('#'))
  .map((line) => {
    const [keyword, ...rest] = line.split(/\s+/);
    return { keyword: keyword!.toUpperCase(), args: rest.join(' ') };
  });
/** The last stage: the image that runs. */
const runtime = instructions.slice(instructions.findLastIndex((i) => i.keyword === 'FROM'));
const cmd = JSON.parse(runtime.find((i) => i.keyword === 'CMD')!.args) as string[];
const env = Object.fromEntries(
  runtime
    .filter((i) => i.keyword === 'ENV')
    .flatMap((i) => i.args.split(/\s+/).map((pair) => pair.split('=') as [string, string])),
);

test('every file the image copies from the repository exists', () => {
  const sources = instructions
    .filter((i) => i.keyword === 'COPY' && !i.args.startsWith('--from'))
    .flatMap((i) => i.args.split(/\s+/).slice(0, -1));
  assert.ok(sources.length > 0);
  for (const source of sources) assert.ok(existsSync(join(root, source)), `${source} exists`);
});

test("the image runs npm start's command, on the project's Node.js", () => {
  const start = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts
    .start;
  const expected = start.replace('"${HEAP_MAX_MB:-256}"', '256').split(/\s+/);
  assert.deepEqual(cmd, ['node_modules/.bin/node', ...expected.slice(2)]);
  assert.deepEqual(expected.slice(0, 2), ['exec', 'node']);
});

test("the image's command and environment start the service, listening on every address", async () => {
  assert.equal(env.HOST, '0.0.0.0', 'reachable from outside the container');
  const port = await freePort();
  const data = tempDir('dockerfile-');
  const child = spawn(join(root, cmd[0]!), cmd.slice(1), {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', ...env, PORT: String(port), DATA_DIR: data.path, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  child.stderr.on('data', (chunk) => (output += chunk));
  try {
    await eventually(
      async () => {
        assert.equal(child.exitCode, null, output);
        const res = await fetch(`http://127.0.0.1:${port}/readyz`);
        assert.equal(res.status, 200);
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    // The image's health check, run as the container would run it.
    const healthcheck = JSON.parse(
      runtime.find((i) => i.keyword === 'HEALTHCHECK')!.args.replace(/^.*?CMD\s+/, ''),
    ) as string[];
    const check = spawn(join(root, healthcheck[0]!), healthcheck.slice(1), {
      cwd: root,
      env: { ...env, PORT: String(port) },
      stdio: 'ignore',
    });
    assert.equal(((await once(check, 'exit')) as [number | null])[0], 0, 'the health check passes');
    child.kill('SIGTERM');
    const [code] = (await once(child, 'exit')) as [number | null];
    assert.equal(code, 0, output);
  } finally {
    child.kill('SIGKILL');
    data.remove();
  }
});
