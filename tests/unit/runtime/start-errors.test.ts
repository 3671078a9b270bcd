/**
 * A bad value stops the service at start with a message naming the variable (README, "Running on
 * Kafka + PostgreSQL"): one line on stderr with the text it held (a password masked) and what it
 * must hold, no stack, exit code 1. The entry points are started for real with each bad value, on
 * the embedded backends in a fresh DATA_DIR.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../../support/temp-dir.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));

/** Starts an entry point with `env` over a clean configuration; its exit code and stderr. */
const start = (entry: string, env: Record<string, string>) => {
  const dir = tempDir();
  try {
    const run = spawnSync(process.execPath, ['--import', 'tsx', join(root, entry)], {
      cwd: root,
      env: {
        ...process.env,
        DATA_DIR: dir.path,
        // Any free port, should a bad value be let through: the process would then run until the timeout.
        PORT: '0',
        ...Object.fromEntries(
          [
            'HOST',
            'HEALTH_PORT',
            'DATABASE_URL',
            'KAFKA_BROKERS',
            'KURRENTDB_URL',
            'REDIS_URL',
            'TRANSCRIBE_URL',
            'ANALYSE_URL',
            'WEBHOOK_RETRY_SCHEDULE',
            'AUDIO_ALLOWED_PORTS',
          ].map((name) => [name, '']),
        ),
        ...env,
      },
      encoding: 'utf8',
      timeout: 60_000,
    });
    return { status: run.status, stderr: run.stderr };
  } finally {
    dir.remove();
  }
};

const cases: { entry: string; env: Record<string, string>; line: RegExp }[] = [
  {
    entry: 'services/main.ts',
    env: { WEBHOOK_RETRY_SCHEDULE: 'bogus' },
    line: /^call ingestion service failed to start: invalid configuration: WEBHOOK_RETRY_SCHEDULE="bogus" is not valid: expected a comma-separated list of durations such as 5s,1m,10m/,
  },
  {
    entry: 'services/main.ts',
    env: { AUDIO_ALLOWED_PORTS: 'abc' },
    line: /^call ingestion service failed to start: invalid configuration: AUDIO_ALLOWED_PORTS="abc" is not valid: expected a comma-separated list, each a whole number from 1 to 65535$/,
  },
  {
    entry: 'services/main.ts',
    env: { HOST: '999.1.1.1' },
    line: /^call ingestion service failed to start: invalid configuration: HOST="999\.1\.1\.1" is not valid: this machine cannot listen on it \(E[A-Z_]+\); expected an address of this machine/,
  },
  {
    entry: 'services/main.ts',
    env: { DATABASE_URL: 'mysql://app:s3cret@db.invalid/calls' },
    line: /^call ingestion service failed to start: invalid configuration: DATABASE_URL="mysql:\/\/app:\*\*\*@db\.invalid\/calls" is not valid: expected a PostgreSQL connection URL/,
  },
  {
    entry: 'services/main.ts',
    env: { TRANSCRIBE_URL: 'http://127.0.0.1:6000' },
    line: /^call ingestion service failed to start: invalid configuration: TRANSCRIBE_URL="http:\/\/127\.0\.0\.1:6000" is not valid: transcription URL names port 6000, .*; expected the http\(s\) base URL/,
  },
  {
    // A database that does not answer: which backend and why, in one line, no stack.
    entry: 'services/main.ts',
    env: {
      DATABASE_URL: 'postgres://app:s3cret@127.0.0.1:1/calls',
      ADMIN_TOKEN: 'a'.repeat(32),
      API_KEY_SECRET: 'b'.repeat(32),
      DATA_KEY_SECRET: 'c'.repeat(32),
    },
    line: /^call ingestion service failed to start: PostgreSQL [a-z ]+ unavailable: .*ECONNREFUSED 127\.0\.0\.1:1.* \(check its address in the environment and that it runs; nothing was started\)$/,
  },
  {
    // A standalone process names HOST for its health port.
    entry: 'services/processor/main.ts',
    env: { HOST: '999.1.1.1', HEALTH_PORT: '0' },
    line: /^processor failed to start: invalid configuration: HOST="999\.1\.1\.1" is not valid: this machine cannot listen on it/,
  },
  {
    // A file where the directory should be (a raw EEXIST with a stack, before).
    entry: 'services/main.ts',
    env: { DATA_DIR: join(root, 'package.json') },
    line: /^call ingestion service failed to start: invalid configuration: DATA_DIR=".*package\.json" is not valid: .*; expected a directory this user can create, read and write$/,
  },
];

for (const { entry, env, line } of cases) {
  test(`${entry} with ${Object.entries(env)
    .map(([name, value]) => `${name}=${value}`)
    .join(' ')} stops with one line naming the variable and what it must hold`, () => {
    const { status, stderr } = start(entry, env);
    assert.equal(status, 1, stderr);
    assert.equal(stderr.trimEnd().split('\n').length, 1, stderr);
    assert.match(stderr.trimEnd(), line);
    assert.doesNotMatch(stderr, /s3cret/);
  });
}
