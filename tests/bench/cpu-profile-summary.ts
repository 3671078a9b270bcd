/**
 * Reads a V8 CPU profile (`node --cpu-prof`) and prints where the time went: the share of samples
 * by function (self time) and by source file, idle and GC apart, so a bench round's profile can be
 * read without a browser.
 *
 *   npx tsx tests/bench/cpu-profile-summary.ts <file.cpuprofile> [--top 25] [--from 0] [--to 1e9] [--callers 'text']
 *
 * `--callers` prints the stacks (five frames up) leading to the functions whose label has that text.
 * `--long-tasks MS` prints the stretches of the main thread busy without a break for at least MS
 * milliseconds (one task or several back to back: a request's callbacks wait behind what is queued
 * ahead of them), with what the event loop called and the functions that took the time.
 * `--from`/`--to` keep the samples between those seconds after the profile began (the ingest wrk
 * bench prints when its load ran, counted from the service's start).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    top: { type: 'string', default: '25' },
    from: { type: 'string', default: '0' },
    to: { type: 'string', default: '1e9' },
    callers: { type: 'string' },
    'long-tasks': { type: 'string' },
  },
});
const file = positionals[0];
if (!file) {
  console.error(
    'usage: cpu-profile-summary.ts <file.cpuprofile> [--top 25] [--from S] [--to S] [--callers TEXT] [--long-tasks MS]',
  );
  process.exit(2);
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
};
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const parent = new Map<number, number>();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

const selfTime = new Map<number, number>();
let total = 0;
const from = Number(values.from) * 1e6;
const to = Number(values.to) * 1e6;
let at = 0;
profile.samples.forEach((id, i) => {
  const dt = Math.max(0, profile.timeDeltas[i] ?? 0);
  at += profile.timeDeltas[i] ?? 0;
  if (at < from || at > to) return;
  selfTime.set(id, (selfTime.get(id) ?? 0) + dt);
  total += dt;
});

const short = (url: string) =>
  url
    .replace(/^file:\/\//, '')
    .replace(/^.*\/node_modules\//, 'node_modules/')
    .replace(/^.*\/(dist|services|shared|tests)\//, '$1/');
const label = (node: ProfileNode) =>
  `${node.callFrame.functionName || '(anonymous)'} ${short(node.callFrame.url)}${node.callFrame.url ? `:${node.callFrame.lineNumber + 1}` : ''}`;

const fns = new Map<string, number>();
const files = new Map<string, number>();
/** Time under each node including its callees, for chosen frames. */
const inclusive = new Map<string, number>();
for (const [id, time] of selfTime) {
  const node = byId.get(id)!;
  fns.set(label(node), (fns.get(label(node)) ?? 0) + time);
  const where = node.callFrame.url
    ? short(node.callFrame.url).replace(/^(node_modules\/(@[^/]+\/)?[^/]+)\/.*$/, '$1')
    : node.callFrame.functionName;
  files.set(where, (files.get(where) ?? 0) + time);
  // Inclusive time by file: each file once per sample along the stack.
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const frame = byId.get(at)!;
    const f = frame.callFrame.url
      ? short(frame.callFrame.url).replace(/^(node_modules\/(@[^/]+\/)?[^/]+)\/.*$/, '$1')
      : '';
    if (f && !seen.has(f)) {
      seen.add(f);
      inclusive.set(f, (inclusive.get(f) ?? 0) + time);
    }
  }
}
const top = Number(values.top);
const pct = (t: number) => `${((100 * t) / total).toFixed(1).padStart(5)} %`;
const idle = fns.get('(idle) ') ?? 0;
console.log(`${file}: ${(total / 1e6).toFixed(1)} s sampled, busy ${pct(total - idle)}`);
const print = (title: string, map: Map<string, number>) => {
  console.log(`\n${title}`);
  for (const [name, time] of [...map].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(time)}  ${name}`);
};
print('self time by function', fns);
print('self time by file', files);
print('inclusive time by file (callees included)', inclusive);

if (values.callers) {
  const stacks = new Map<string, number>();
  for (const [id, time] of selfTime) {
    if (!label(byId.get(id)!).includes(values.callers)) continue;
    const frames: string[] = [];
    for (let at: number | undefined = id; at !== undefined && frames.length < 6; at = parent.get(at))
      frames.push(label(byId.get(at)!));
    const key = frames.join('\n        ← ');
    stacks.set(key, (stacks.get(key) ?? 0) + time);
  }
  print(`stacks into ${values.callers}`, stacks);
}

if (values['long-tasks']) {
  const least = Number(values['long-tasks']) * 1000;
  /** The frame the event loop called: the child of (root) on the sample's stack. */
  const entry = (id: number) => {
    let at = id;
    while (parent.get(at) !== undefined && parent.get(parent.get(at)!) !== undefined) at = parent.get(at)!;
    return label(byId.get(at)!);
  };
  interface Task {
    start: number;
    length: number;
    entries: Map<string, number>;
    selves: Map<string, number>;
  }
  const tasks: Task[] = [];
  let task: Task | undefined;
  let clock = 0;
  profile.samples.forEach((id, i) => {
    const dt = Math.max(0, profile.timeDeltas[i] ?? 0);
    clock += profile.timeDeltas[i] ?? 0;
    if (clock < from || clock > to) return;
    const node = byId.get(id)!;
    if (node.callFrame.functionName === '(idle)') {
      if (task && task.length >= least) tasks.push(task);
      task = undefined;
      return;
    }
    task ??= { start: clock, length: 0, entries: new Map(), selves: new Map() };
    task.length += dt;
    const called = entry(id);
    task.entries.set(called, (task.entries.get(called) ?? 0) + dt);
    task.selves.set(label(node), (task.selves.get(label(node)) ?? 0) + dt);
  });
  if (task && task.length >= least) tasks.push(task);
  const busy = tasks.reduce((sum, t) => sum + t.length, 0);
  console.log(
    `\nstretches busy ≥ ${values['long-tasks']} ms: ${tasks.length}, ${(busy / 1e6).toFixed(2)} s in all (${pct(busy)} of the window)`,
  );
  const ms = (t: number) => `${(t / 1000).toFixed(1)} ms`;
  const topOf = (map: Map<string, number>, n: number) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, t]) => `${ms(t).padStart(9)}  ${name}`);
  for (const t of [...tasks].sort((a, b) => b.length - a.length).slice(0, top)) {
    console.log(`\n${ms(t.length)} at ${(t.start / 1e6).toFixed(2)} s`);
    console.log('  called by the event loop:');
    for (const line of topOf(t.entries, 3)) console.log(`    ${line}`);
    console.log('  self time:');
    for (const line of topOf(t.selves, 5)) console.log(`    ${line}`);
  }
}
