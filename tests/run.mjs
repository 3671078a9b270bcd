#!/usr/bin/env node
// Runs every tests/**/*.test.ts with node:test through tsx. Node 20's --test does not expand globs
// and finds no .ts file on its own, so the files are listed here; a run that executed no test fails.
// Usage: node tests/run.mjs [path-substring ...]   (only files whose path contains one of them)
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const walk = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : walk(path);
    return entry.name.endsWith('.test.ts') ? [relative(root, path)] : [];
  });

const filters = process.argv.slice(2);
const files = walk(join(root, 'tests'))
  .filter((file) => filters.length === 0 || filters.some((f) => file.includes(f)))
  .sort();
if (files.length === 0) {
  console.error(`no test files match ${filters.join(' ') || 'tests/**/*.test.ts'}`);
  process.exit(1);
}

const child = spawn(
  process.execPath,
  ['--import', 'tsx', '--test', '--test-reporter=tap', `--test-concurrency=${process.env.TEST_CONCURRENCY ?? 2}`, ...files],
  { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] },
);
const counts = {};
let buffer = '';
child.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  buffer += chunk.toString();
  const lines = buffer.split('\n');
  buffer = lines.pop();
  for (const line of lines) {
    const m = /^# (tests|pass|fail|skipped|todo|cancelled) (\d+)$/.exec(line);
    if (m) counts[m[1]] = Number(m[2]);
  }
});
child.on('close', (code) => {
  if (!counts.tests) {
    console.error('test run executed no test: failing');
    process.exit(1);
  }
  process.exit(code ?? 1);
});
