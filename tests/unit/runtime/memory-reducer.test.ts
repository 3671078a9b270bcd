/**
 * A service run by `runUntilSignal` gives back what a burst grew once it is at rest: V8's memory
 * reducer starts its memory-reducing collections, which on the V8 of Node.js 24 it never does by
 * itself in a process that allocates nothing on the cppgc heap (services/runtime/memory-reducer.ts).
 * The process below grows its young generation with a burst, as a burst of calls does, then idles
 * with the small steady garbage of the service's polls; V8's own trace says whether the reducer
 * started. Its watchdog would start it anyway 100 s after the last full collection, so the wait
 * ends well before that.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../../support/temp-dir.ts';

const root = fileURLToPath(new URL('../../..', import.meta.url));

test('at rest after a burst, the memory reducer runs and gives the pooled pages back', async () => {
  const dir = tempDir();
  try {
    const script = join(dir.path, 'burst-then-rest.ts');
    writeFileSync(
      script,
      `import { runUntilSignal } from ${JSON.stringify(join(root, 'services/runtime/lifecycle.ts'))};
import { createLogger } from ${JSON.stringify(join(root, 'services/runtime/logger.ts'))};
let kept: unknown[] = [];
runUntilSignal('burst', async () => {
  const logger = createLogger('warn');
  // A burst: short-lived objects enough to grow the semi-spaces to their bound.
  for (let round = 0; round < 40; round++) {
    kept = Array.from({ length: 20_000 }, (_, i) => ({ i, text: 'call ' + i + ' of round ' + round }));
  }
  kept = [];
  // At rest: a little garbage every 100 ms, as the feed's polls make.
  setInterval(() => { kept = Array.from({ length: 50 }, (_, i) => ({ i })); }, 100);
  console.log('BURST DONE');
  return { logger, stop: async () => undefined };
});
`,
    );
    const child = spawn(
      process.execPath,
      ['--max-semi-space-size=16', '--trace-memory-reducer', '--trace-gc', '--import', 'tsx', script],
      { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    // V8 prefixes its reducer's lines with [pid:isolate:id]; the main thread's isolate is id 0 (a
    // loader thread has an isolate of its own).
    const mainStarted = /\[\d+:(0x[0-9a-f]+):0\]\s+[\d.]+ ms: Memory reducer: started GC/;
    const outcome = await new Promise<'reduced' | 'not within 60 s' | 'exited'>((resolve) => {
      const timer = setTimeout(() => resolve('not within 60 s'), 60_000);
      const read = (chunk: string) => {
        output += chunk;
        const started = mainStarted.exec(output);
        if (!started) return;
        const reduced = new RegExp(`\\[\\d+:${started[1]}\\]\\s+[\\d.]+ ms: Mark-Compact \\(reduce\\)`);
        if (reduced.test(output.slice(started.index))) {
          clearTimeout(timer);
          resolve('reduced');
        }
      };
      child.stdout.setEncoding('utf8').on('data', read);
      child.stderr.setEncoding('utf8').on('data', read);
      child.on('exit', () => {
        clearTimeout(timer);
        resolve('exited');
      });
    });
    child.kill('SIGKILL');
    assert.equal(outcome, 'reduced', output.split('\n').slice(-30).join('\n'));
    assert.ok(
      output.includes('BURST DONE') && output.indexOf('BURST DONE') < mainStarted.exec(output)!.index,
      'the reducer ran after the burst',
    );
    // The reducing collection's line says what stayed pooled: nothing.
    const address = mainStarted.exec(output)![1]!;
    const line = new RegExp(`\\[\\d+:${address}\\][^\\n]*Mark-Compact \\(reduce\\)[^\\n]*`).exec(output)![0];
    assert.match(line, /pooled: 0 MB/, line);
  } finally {
    dir.remove();
  }
});
