/**
 * The benches' account of where the machine's cores went (tests/bench/wrk.ts): the machine's busy
 * time covers the processes on it, a backend's processes are found by their command line, and a
 * process's main thread is told apart from its other threads.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpus } from 'node:os';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { coresBetween, cpuSeconds, machineCpu, mainThreadCpuSeconds } from '../../bench/wrk.ts';

/** Spins this thread for `ms` of wall time. */
const spin = (ms: number) => {
  const end = Date.now() + ms;
  while (Date.now() < end);
};

test("the machine's busy time covers this process's CPU, and its cores are the machine's", () => {
  const started = performance.now();
  const before = machineCpu();
  const own = process.cpuUsage();
  spin(300);
  const after = machineCpu();
  // The wall time the two readings span: on a busy machine reading every process takes a while.
  const spanned = (performance.now() - started) / 1000;
  const { user, system } = process.cpuUsage(own);
  const ownSeconds = (user + system) / 1e6;
  assert.equal(after.cores, cpus().length);
  // Clock ticks of 10 ms on both sides: allow two ticks of rounding.
  assert.ok(after.busy - before.busy >= ownSeconds - 0.02, `${after.busy - before.busy} s < ${ownSeconds} s`);
  const used = coresBetween(before, after, spanned);
  assert.ok(used.machine > 0 && used.machine <= after.cores + 0.1, `${used.machine} cores`);
});

test('a process is counted as the Kafka broker by its command line, and only while it runs', async (t) => {
  // A Node.js process spinning with `kafka.Kafka` among its arguments, as the broker's JVM has.
  const child = spawn(process.execPath, ['-e', 'for (;;);', 'kafka.Kafka'], { stdio: 'ignore' });
  t.after(() => child.kill('SIGKILL'));
  await once(child, 'spawn');
  const before = machineCpu();
  const childBefore = cpuSeconds(child.pid!);
  while (cpuSeconds(child.pid!) - childBefore < 0.3) await sleep(50);
  const after = machineCpu();
  const childSpent = cpuSeconds(child.pid!) - childBefore;
  const brokerSpent = after.byBackend['Kafka broker']! - before.byBackend['Kafka broker']!;
  // What the broker group spent includes the child's (read just before and after it). The group's
  // seconds are a sum of many processes' ticks in floating point: 0.3 may come out 0.29999999999999716.
  assert.ok(brokerSpent >= 0.3 - 1e-6, `the Kafka broker group spent ${brokerSpent} s, the child ${childSpent} s`);
  const withChild = machineCpu();
  const childTotal = cpuSeconds(child.pid!);
  child.kill('SIGKILL');
  await once(child, 'exit');
  const gone = machineCpu();
  // The real broker, if one runs here (a suite beside this one may load it), goes on working
  // between the two readings: allow it 0.15 s, half of what the ended child had used.
  assert.ok(
    gone.byBackend['Kafka broker']! <= withChild.byBackend['Kafka broker']! - childTotal + 0.15,
    'an ended process drops out of the reading',
  );
});

test("a process's main thread is read apart from its other threads", () => {
  const before = mainThreadCpuSeconds(process.pid);
  const all = cpuSeconds(process.pid);
  // Spun until the main thread has had 0.1 s of CPU (a busy machine gives it less than the wall
  // time), for at most 10 s; its seconds are ticks summed in floating point, so 0.1 may read 0.0999….
  const deadline = Date.now() + 10_000;
  while (mainThreadCpuSeconds(process.pid) - before < 0.1 - 1e-6 && Date.now() < deadline) spin(20);
  const main = mainThreadCpuSeconds(process.pid) - before;
  assert.ok(main >= 0.1 - 1e-6, `main thread ${main} s`);
  assert.ok(cpuSeconds(process.pid) - all >= main - 0.02, 'the process in all used at least its main thread');
});
