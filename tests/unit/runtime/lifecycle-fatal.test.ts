/**
 * A running service whose code leaves an error unhandled (a rejection nobody awaits, an exception
 * thrown from a timer) logs it at level fatal, with its stack, and exits with 1.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../../support/temp-dir.ts';

const root = fileURLToPath(new URL('../../..', import.meta.url));

/** Runs a service through `runUntilSignal` that does `fault` once started; its exit and log lines. */
const runFaulty = (fault: string) => {
  const dir = tempDir();
  try {
    const script = join(dir.path, 'faulty.ts');
    writeFileSync(
      script,
      `import { runUntilSignal } from ${JSON.stringify(join(root, 'services/runtime/lifecycle.ts'))};
import { createLogger } from ${JSON.stringify(join(root, 'services/runtime/logger.ts'))};
runUntilSignal('faulty', async () => {
  const logger = createLogger('info');
  setTimeout(() => { ${fault} }, 10);
  setTimeout(() => logger.info('still running'), 2000);
  return { logger, stop: async () => undefined };
});
`,
    );
    const run = spawnSync(process.execPath, ['--import', 'tsx', script], {
      cwd: root,
      encoding: 'utf8',
      timeout: 20_000,
    });
    const lines = run.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: number; msg: string; err?: { message: string; stack: string } });
    return { status: run.status, lines };
  } finally {
    dir.remove();
  }
};

test('an unhandled rejection is logged at level fatal with its stack, and the process exits with 1', () => {
  const { status, lines } = runFaulty("void Promise.reject(new Error('lost in a library'));");
  assert.equal(status, 1);
  const fatal = lines.find((line) => line.level === 60);
  assert.ok(fatal, `no fatal line in ${JSON.stringify(lines)}`);
  assert.equal(fatal.msg, 'faulty: unhandled rejection; exiting');
  assert.equal(fatal.err?.message, 'lost in a library');
  assert.match(fatal.err?.stack ?? '', /faulty\.ts/);
  assert.ok(!lines.some((line) => line.msg === 'still running'));
});

test('an uncaught exception is logged at level fatal, and the process exits with 1', () => {
  const { status, lines } = runFaulty("throw new TypeError('thrown from a timer');");
  assert.equal(status, 1);
  const fatal = lines.find((line) => line.level === 60);
  assert.equal(fatal?.msg, 'faulty: uncaught exception; exiting');
  assert.equal(fatal?.err?.message, 'thrown from a timer');
});
