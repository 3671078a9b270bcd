/**
 * Runs every `*.bench.ts` in this folder one after another, each in its own process through tsx,
 * so one bench's heap, open handles and JIT state never colour the next one's numbers.
 *
 *   npm run bench [-- --bench event-log,replay] [-- any flags of the benches]
 *
 * `--bench` picks benches by name (default all). Other flags pass through, each to the benches that take it: a bench takes the flags
 * its usage comment names (`[--events 20000]`), since the benches parse their flags strictly and
 * stop at one they do not know. A flag no selected bench takes is an error. Exits non-zero when a
 * bench fails; the others still run.
 *
 * Then one table of the performance targets' figures the benches recorded (targets.ts): each
 * figure, its baseline, the ratio, whether the target is met, and the command; also written as
 * JSON to .tmp/bench-targets.json.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TargetRow } from './targets.ts';

const here = dirname(fileURLToPath(import.meta.url));
const all = readdirSync(here)
  .filter((name) => name.endsWith('.bench.ts'))
  .sort();
const nameOf = (file: string) => basename(file, '.bench.ts');

/** `--bench a,b` (or `--bench=a,b`) and everything else, as given. */
const args = process.argv.slice(2);
let only: string[] | undefined;
const passed: string[][] = [];
for (let i = 0; i < args.length; i++) {
  const arg = args[i]!;
  if (arg === '--bench' || arg.startsWith('--bench=')) {
    only = (arg.includes('=') ? arg.slice('--bench='.length) : (args[++i] ?? '')).split(',').filter(Boolean);
    continue;
  }
  if (!arg.startsWith('--')) {
    console.error(`unexpected argument ${arg}: flags are --name value or --name=value`);
    process.exit(2);
  }
  // A flag and its value, when the next argument is one.
  const next = args[i + 1];
  passed.push(!arg.includes('=') && next !== undefined && !next.startsWith('--') ? [arg, args[++i]!] : [arg]);
}

const unknown = only?.filter((name) => !all.some((file) => nameOf(file) === name)) ?? [];
if (unknown.length > 0) {
  console.error(`no bench named ${unknown.join(', ')}; there are ${all.map(nameOf).join(', ')}`);
  process.exit(2);
}
const selected = all.filter((file) => only === undefined || only.includes(nameOf(file)));

/** The flags a bench names in its usage comment. */
const flagsOf = (file: string): Set<string> => {
  const usage = /^\/\*\*[\s\S]*?\*\//.exec(readFileSync(join(here, file), 'utf8'))?.[0] ?? '';
  return new Set([...usage.matchAll(/\[--([a-z][a-z0-9-]*)/g)].map((m) => m[1]!));
};
const flagName = (flag: string[]) => flag[0]!.slice(2).split('=')[0]!;
const taken = new Map(selected.map((file) => [file, flagsOf(file)]));
const orphans = passed.filter((flag) => ![...taken.values()].some((flags) => flags.has(flagName(flag))));
if (orphans.length > 0) {
  console.error(`no selected bench takes ${orphans.map((f) => f[0]).join(', ')}`);
  process.exit(2);
}

const outDir = join(here, '../../.tmp');
mkdirSync(outDir, { recursive: true });
const targetsFile = join(outDir, `bench-targets-${process.pid}.jsonl`);
rmSync(targetsFile, { force: true });

const run = (file: string, flags: string[]) =>
  new Promise<number>((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(here, file), ...flags], {
      stdio: 'inherit',
      env: { ...process.env, BENCH_TARGETS_FILE: targetsFile },
    });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });

const failed: string[] = [];
for (const file of selected) {
  const flags = passed.filter((flag) => taken.get(file)!.has(flagName(flag))).flat();
  console.log(`\n=== ${nameOf(file)}${flags.length > 0 ? ` ${flags.join(' ')}` : ''}`);
  const started = performance.now();
  const code = await run(file, flags);
  console.log(
    `=== ${nameOf(file)}: ${code === 0 ? 'done' : `failed (exit ${code})`} in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  if (code !== 0) failed.push(nameOf(file));
}
const targets: TargetRow[] = existsSync(targetsFile)
  ? readFileSync(targetsFile, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as TargetRow)
  : [];
rmSync(targetsFile, { force: true });
if (targets.length > 0) {
  const cell = (text: string) => text.replace(/\|/g, '\\|');
  console.log('\nPerformance targets (this run)\n');
  console.log('| Target | Figure | Baseline | Ratio | Goal | Met | Command |');
  console.log('|---|---|---|---|---|---|---|');
  for (const t of targets) {
    console.log(
      `| ${cell(t.target)} | ${cell(t.figure)} | ${cell(t.baseline)} | ${t.ratio === undefined ? '—' : `${t.ratio.toFixed(3)}×`} | ${cell(t.goal)} | ${t.met === undefined ? '—' : t.met ? 'yes' : 'no'} | \`${t.command}\` |`,
    );
  }
  const json = join(outDir, 'bench-targets.json');
  writeFileSync(json, `${JSON.stringify({ at: new Date().toISOString(), targets }, null, 2)}\n`);
  console.log(`\n(also in ${json})`);
}
if (failed.length > 0) {
  console.error(`\nfailed: ${failed.join(', ')}`);
  process.exitCode = 1;
}
