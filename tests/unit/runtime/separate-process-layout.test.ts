/**
 * A service run as a process of its own on shared backends refuses to start without DATABASE_URL:
 * its data keys would stay in its own DATA_DIR, and every other process would read its calls as
 * erased. Each of the three entry points is started for real and must stop before it connects.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { assertSeparateProcessLayout, loadConfig } from '../../../shared/config.ts';
import { tempDir } from '../../support/temp-dir.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));

test('the layout rule: shared backends need DATABASE_URL; the embedded ones alone, or with it, pass', () => {
  const base = { DATA_DIR: '/tmp/unused', ADMIN_TOKEN: 'x'.repeat(32) };
  const refused = (env: Record<string, string>) =>
    assert.throws(
      () => assertSeparateProcessLayout(loadConfig({ ...base, ...env }), 'processor'),
      /the processor runs as a process of its own .* DATABASE_URL is unset/,
    );
  refused({ KAFKA_BROKERS: '127.0.0.1:9092' });
  refused({ KURRENTDB_URL: 'kurrentdb://127.0.0.1:2113?tls=false' });
  assertSeparateProcessLayout(loadConfig(base), 'ingress');
  assertSeparateProcessLayout(
    loadConfig({ ...base, KAFKA_BROKERS: '127.0.0.1:9092', DATABASE_URL: 'postgres://127.0.0.1/x' }),
    'processor',
  );
});

for (const service of ['ingress', 'processor', 'projections']) {
  test(`services/${service}/main.ts on Kafka without DATABASE_URL stops at start with a message naming DATABASE_URL`, () => {
    const dir = tempDir();
    try {
      const run = spawnSync(process.execPath, ['--import', 'tsx', join(root, `services/${service}/main.ts`)], {
        cwd: root,
        env: {
          ...process.env,
          DATA_DIR: dir.path,
          // Nothing listens there: the process must stop before it tries.
          KAFKA_BROKERS: '127.0.0.1:1',
          DATABASE_URL: '',
          KURRENTDB_URL: '',
          REDIS_URL: '',
        },
        encoding: 'utf8',
        timeout: 60_000,
      });
      assert.notEqual(run.status, 0, run.stdout + run.stderr);
      assert.match(run.stdout + run.stderr, /DATABASE_URL is unset/);
    } finally {
      dir.remove();
    }
  });
}
