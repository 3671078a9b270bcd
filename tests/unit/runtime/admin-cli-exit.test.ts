/**
 * The admin CLI's exit codes: 2 with a hint to --help for a command line that is wrong; 1 without
 * it when the command was right and the service refused it, answered what is not JSON, or could not
 * be reached (a 404 for an unknown team was told as a usage error, exit 2).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const TOKEN = 'admin-cli-exit-test-token-0123456789abcdef';

let server: Server;
let url: string;
before(async () => {
  server = createServer((req, res) => {
    if (req.url?.startsWith('/api/admin/teams/nope')) {
      res.writeHead(404, { 'content-type': 'application/problem+json' });
      res.end(
        JSON.stringify({
          code: 'NOT_FOUND',
          detail: 'No team nope.',
          errors: [{ field: 'teamId', message: 'must name an existing team' }],
        }),
      );
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!DOCTYPE html><html></html>');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** Runs the CLI (asynchronously: the test's server answers it from this process). */
const cli = (apiUrl: string, ...args: string[]) =>
  new Promise<{ status: number | null; stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', join(root, 'services/admin-cli.ts'), ...args],
      { cwd: root, env: { ...process.env, API_URL: apiUrl, ADMIN_TOKEN: TOKEN }, encoding: 'utf8', timeout: 60_000 },
      (error, _stdout, stderr) =>
        resolve({ status: error ? (typeof error.code === 'number' ? error.code : null) : 0, stderr }),
    );
  });

test('a refusal of the service exits 1 and names it, without the usage hint', async () => {
  const { status, stderr } = await cli(url, 'team', 'show', '--team', 'nope');
  assert.equal(status, 1, stderr);
  assert.match(stderr, /404 No team nope\.\n {2}teamId: must name an existing team/);
  assert.doesNotMatch(stderr, /--help/);
});

test('an answer that is not JSON exits 1 saying so', async () => {
  const { status, stderr } = await cli(url, 'projections');
  assert.equal(status, 1, stderr);
  assert.match(stderr, /answered 200 with a body that is not JSON; is API_URL the service's address\?/);
});

test('a service that cannot be reached exits 1', async () => {
  const { status, stderr } = await cli('http://127.0.0.1:1', 'projections');
  assert.equal(status, 1, stderr);
  assert.match(stderr, /cannot reach the service at http:\/\/127\.0\.0\.1:1/);
  assert.doesNotMatch(stderr, /--help/);
});

test('a wrong command line exits 2 with the usage hint', async () => {
  const { status, stderr } = await cli(url, 'no-such-command');
  assert.equal(status, 2, stderr);
  assert.match(stderr, /Run npm run admin -- --help for the commands\./);
});
