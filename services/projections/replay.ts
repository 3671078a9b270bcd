/**
 * Rebuilds a projection from the event store from scratch while the service runs: a new version
 * of its tables is filled from the start of the feed while reads (and the live projection) keep
 * using the current one; then reads switch to the new version atomically and the live projection
 * resumes from its checkpoint. The events an operator told the projection to skip are left out, as
 * the live projection leaves them out.
 */
import { callEvents } from '../../shared/domain/call/call-catalogue.ts';
import type { EventStore } from '../../shared/ports/event-store.ts';
import type { ReadModels } from '../../shared/ports/read-models.ts';
import { skippedPositions } from './skipped-events.ts';

export interface ReplayProgress {
  projection: string;
  phase: 'replaying' | 'done';
  events: number;
  position: string;
  elapsedMs: number;
  eventsPerSecond: number;
}

export const REPLAYABLE = ['call-history'] as const;
export type ReplayableProjection = (typeof REPLAYABLE)[number];

export const isReplayable = (name: string): name is ReplayableProjection =>
  (REPLAYABLE as readonly string[]).includes(name);

export async function* replayProjection(
  name: ReplayableProjection,
  deps: { eventStore: EventStore; readModels: ReadModels },
  options: { batchSize?: number; progressEveryMs?: number } = {},
): AsyncGenerator<ReplayProgress> {
  const batchSize = options.batchSize ?? 5000;
  const every = options.progressEveryMs ?? 1000;
  // Read before the new version exists: a replay that cannot read them leaves nothing half-built.
  const skipped = await skippedPositions(deps.eventStore, name);
  const target = await deps.readModels.callHistory.beginRebuild();
  const started = performance.now();
  let events = 0;
  let position = 0n;
  let lastReport = started;
  const progress = (phase: ReplayProgress['phase']): ReplayProgress => {
    const elapsedMs = Math.round(performance.now() - started);
    return {
      projection: name,
      phase,
      events,
      position: position.toString(),
      elapsedMs,
      eventsPerSecond: Math.round(events / Math.max(elapsedMs / 1000, 0.001)),
    };
  };
  const read = (after: bigint) => {
    // Call history folds call events only: the other categories are never read.
    const page = deps.eventStore.readAll({ after, maxCount: batchSize, categories: [callEvents.category] });
    page.catch(() => undefined); // awaited below; a replay that stops first must not leave it unhandled
    return page;
  };
  // The next page is read while the current one is applied (where reading waits on I/O, as on PostgreSQL).
  let next = read(position);
  for (;;) {
    const batch = await next;
    if (batch.length === 0) break;
    position = batch[batch.length - 1]!.position;
    next = read(position);
    await target.apply(skipped.size === 0 ? batch : batch.filter((event) => !skipped.has(event.position)), position);
    events += batch.length;
    if (performance.now() - lastReport >= every) {
      lastReport = performance.now();
      yield progress('replaying');
    }
  }
  await target.activate();
  yield progress('done');
}
