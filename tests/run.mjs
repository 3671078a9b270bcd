#!/usr/bin/env node
// Runs every tests/**/*.test.ts with node:test through tsx, each file in its own process, two at a
// time, on the Node.js the project installs (node_modules/.bin/node, docs/runtime.md): started by
// another Node (`node tests/run.mjs` with the machine's own), it runs itself again under
// node_modules/.bin/node. Nothing can hang the run: a file that has not finished after
// TEST_FILE_TIMEOUT_MS (default 15 min) is killed with everything it started and counts as failed,
// its output so far printed; a run that executed no test fails. The closing line also counts what
// was skipped: files whose tests all skipped (or that ran none) and skipped `describe` suites, with
// their reasons.
// Usage: node tests/run.mjs [path-substring ...]   (only files whose path contains one of them)
// Env: TEST_CONCURRENCY (files at once, default 2), TEST_FILE_TIMEOUT_MS, TEST_STREAM=1 (print each
// file's output as it comes instead of all at once when the file ends; clearest with one file).
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const projectNode = join(root, 'node_modules/.bin/node');
const onProjectNode = () => {
  try {
    return fs.realpathSync(process.execPath) === fs.realpathSync(projectNode);
  } catch {
    console.error('tests/run.mjs: node_modules/.bin/node is missing; run npm ci first (docs/runtime.md)');
    process.exit(1);
  }
};
if (!onProjectNode()) {
  const again = spawn(projectNode, process.argv.slice(1), { stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => again.kill(signal));
  again.on('error', (error) => {
    console.error(`tests/run.mjs: cannot start ${projectNode} (${error.message}); run npm ci first`);
    process.exit(1);
  });
  again.on('exit', (code, signal) => process.exit(code ?? (signal === 'SIGINT' ? 130 : 143)));
  await new Promise(() => {}); // the run goes on in that process; its exit ends this one
}
console.log(`# node ${process.version}`);

const filters = process.argv.slice(2);
// fs.globSync (Node 22+) lists them; the runner keeps its own process per file and time limit.
const files = fs
  .globSync('tests/**/*.test.ts', { cwd: root })
  .filter((file) => filters.length === 0 || filters.some((f) => file.includes(f)))
  .sort();
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ') || 'tests/**/*.test.ts'}`);
  process.exit(1);
}

const concurrency = Math.max(1, Number(process.env.TEST_CONCURRENCY ?? 2));
const fileTimeoutMs = Number(process.env.TEST_FILE_TIMEOUT_MS ?? 15 * 60_000);
const totals = { tests: 0, pass: 0, fail: 0, skipped: 0, todo: 0, cancelled: 0 };
const results = [];
const running = new Map();
const started = Date.now();
const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;
const count = (n, one) => `${n} ${one}${n === 1 ? '' : 's'}`;
const stream = process.env.TEST_STREAM === '1';

/** Runs one file in its own process group; resolves with its counts and how it ended. */
const runFile = (file) =>
  new Promise((resolve) => {
    const t0 = Date.now();
    const child = spawn(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=tap', file], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    running.set(file, child);
    console.log(`# started: ${file}`);
    let output = '';
    const take = (chunk) => {
      output += chunk;
      if (stream) process.stdout.write(chunk);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child, 'SIGKILL');
    }, fileTimeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      running.delete(file);
      // Whatever the file started in its process group goes with it.
      killGroup(child, 'SIGKILL');
      const counts = {};
      for (const m of output.matchAll(/^# (tests|pass|fail|skipped|todo|cancelled) (\d+)$/gm))
        counts[m[1]] = Number(m[2]);
      resolve({ file, code, signal, timedOut, counts, output, ms: Date.now() - t0 });
    });
  });

/**
 * What a file's TAP output says was skipped: each `ok N - name # SKIP reason`, a suite when its
 * YAML block says `type: 'suite'` (a skipped describe's own tests are not counted in `# tests`).
 */
const skipsIn = (output) => {
  const lines = output.split('\n');
  const skips = [];
  lines.forEach((line, i) => {
    const m = /^\s*ok \d+ - (.*?) # SKIP(?: (.*))?$/.exec(line);
    if (!m) return;
    let suite = false;
    for (let j = i + 1; j < lines.length && !/^\s*\.\.\.$/.test(lines[j]); j++)
      if (/^\s*type: 'suite'$/.test(lines[j])) suite = true;
    skips.push({ name: m[1].replace(/\\#/g, '#'), reason: m[2]?.trim() || 'no reason given', suite });
  });
  return skips;
};

const killGroup = (child, signal) => {
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
};

const report = (result) => {
  if (!stream)
    process.stdout.write(result.output.endsWith('\n') || result.output === '' ? result.output : `${result.output}\n`);
  for (const [key, value] of Object.entries(result.counts)) totals[key] += value;
  // A file whose suites all skipped (a backend not configured) ran no test; that alone is no failure.
  const failed = result.timedOut || result.code !== 0;
  const skips = skipsIn(result.output);
  // Every test skipped, or none ran (its suites skipped): the file as a whole was skipped.
  const skippedWhole = !failed && (result.counts.tests ?? 0) === (result.counts.skipped ?? 0);
  const reasons = [...new Set(skips.map((s) => s.reason))].join('; ');
  const why = result.timedOut
    ? `killed: still running after ${seconds(fileTimeoutMs)} (TEST_FILE_TIMEOUT_MS)`
    : result.code !== 0
      ? `exit ${result.code ?? result.signal}`
      : skippedWhole
        ? `no test ran: skipped${reasons ? ` (${reasons})` : ''}`
        : `${result.counts.pass ?? 0}/${result.counts.tests} passed${skips.length ? `, skipped: ${reasons}` : ''}`;
  results.push({ ...result, failed, why, skips, skippedWhole });
  console.log(`# ${failed ? 'FAILED' : 'done'}: ${result.file} in ${seconds(result.ms)} (${why})`);
};

const onSignal = (signal) => {
  for (const child of running.values()) killGroup(child, 'SIGKILL');
  process.exit(signal === 'SIGINT' ? 130 : 143);
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

const queue = [...files];
const worker = async () => {
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) report(await runFile(file));
};
await Promise.all(Array.from({ length: Math.min(concurrency, files.length) }, worker));

const failed = results.filter((r) => r.failed);
const slowest = [...results].sort((a, b) => b.ms - a.ms).slice(0, 8);
const skippedFiles = results.filter((r) => r.skippedWhole);
const skippedSuites = results.flatMap((r) => r.skips.filter((s) => s.suite).map((s) => ({ ...s, file: r.file })));
const byReason = new Map();
for (const r of results)
  for (const s of r.skips) if (s.suite || r.skippedWhole) byReason.set(s.reason, (byReason.get(s.reason) ?? 0) + 1);
const skipSummary =
  skippedFiles.length + skippedSuites.length === 0
    ? ''
    : `; skipped: ${count(skippedFiles.length, 'whole file')}, ${count(skippedSuites.length, 'suite')} (${[...byReason].map(([reason, n]) => `${n} × ${reason}`).join('; ')})`;
// Details first, so the closing line stays the last.
if (skippedFiles.length + skippedSuites.length > 0) {
  console.log('\n# skipped:');
  for (const r of results) {
    const suites = r.skips.filter((s) => s.suite || r.skippedWhole);
    if (!r.skippedWhole && suites.length === 0) continue;
    const what = suites.map((s) => `${s.suite ? 'suite' : 'test'} "${s.name}": ${s.reason}`).join('; ');
    console.log(`#   ${r.file}${r.skippedWhole ? ' (whole file)' : ''}: ${what || 'no test in it ran'}`);
  }
}
console.log(`# slowest files: ${slowest.map((r) => `${r.file} ${seconds(r.ms)}`).join(', ')}`);
console.log(
  `\n# ${files.length} files, ${totals.tests} tests: ${totals.pass} passed, ${totals.fail} failed, ${totals.cancelled} cancelled, ${totals.skipped} skipped, in ${seconds(Date.now() - started)}${skipSummary}`,
);
if (totals.tests === 0) {
  console.error('test run executed no test: failing');
  process.exit(1);
}
if (failed.length > 0) {
  console.error(`# failed files:\n${failed.map((r) => `#   ${r.file}: ${r.why}`).join('\n')}`);
  process.exit(1);
}
