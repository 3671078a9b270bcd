/**
 * Lets V8 give back the memory a process no longer uses once it is at rest (docs/performance.md,
 * "The heap is given back at rest").
 *
 * V8's memory reducer runs its memory-reducing collections (which also return the pages the heap
 * pooled when it shrank) only while the allocation rate is low, and it reads that rate as young
 * generation, old generation and embedder (cppgc) allocations together. On the V8 of Node.js 24
 * the embedder rate of a process that never allocates on the cppgc heap is exactly 0, which the
 * check reads as the highest rate there is: the reducer logs "high alloc" at every tick and never
 * starts (https://issues.chromium.org/issues/570738027, https://github.com/nodejs/node/issues/66564).
 * After a burst of calls the young generation, grown to its 16 MB semi-spaces, stays pooled and
 * resident: about 30 MB of a process that holds about 115 MB at rest.
 *
 * Node.js allocates a script's wrapper on the cppgc heap, so compiling a one-character script now
 * and then keeps that rate above 0 and tiny. The rate decays to 0 again within about 100 s of the
 * last such allocation, hence the interval. It costs a few microseconds each time; under load the
 * other two rates are high and the reducer stays out of the way as before.
 */
import { Script } from 'node:vm';

/** How often a script is compiled: well within the ~100 s in which the rate decays back to 0. */
export const MEMORY_REDUCER_NUDGE_MS = 20_000;

/** Starts the nudges, for the life of the process; never what keeps it alive. */
export const keepMemoryReducerWorking = (intervalMs = MEMORY_REDUCER_NUDGE_MS): void => {
  const nudge = () => void new Script('0');
  nudge();
  setInterval(nudge, intervalMs).unref();
};
