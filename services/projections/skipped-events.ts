/**
 * Events an operator told a projection to skip. A projection that fails on one event (not an
 * outage: the event itself cannot be projected) stops and reports it; the operator skips it with
 * `POST /api/admin/projections/:projection/skip` (or `npm run admin -- skip`), which appends a
 * `ProjectionEventSkipped` event here, so the skip is recorded, audited and seen by every process.
 */
import type { EventStore } from '../../shared/ports/event-store.ts';
import {
  projectionEvents,
  SKIPPABLE,
  type SkippableProjection,
  type SkippedEvent,
  SKIPPED_EVENTS_STREAM,
} from './projection-catalogue.ts';

export { SKIPPABLE, type SkippableProjection, type SkippedEvent, SKIPPED_EVENTS_STREAM };
export const PROJECTION_EVENT_SKIPPED = 'ProjectionEventSkipped';

export const isSkippable = (name: string): name is SkippableProjection =>
  (SKIPPABLE as readonly string[]).includes(name);

/** Positions of the events `projection` must skip. */
export const skippedPositions = async (store: EventStore, projection: SkippableProjection): Promise<Set<bigint>> => {
  const skipped = new Set<bigint>();
  for (let from = 0; ;) {
    const events = await store.readStream(SKIPPED_EVENTS_STREAM, { fromRevision: from, maxCount: 1000 });
    for (const stored of events) {
      const event = projectionEvents.decode(stored);
      if (event.type === 'ProjectionEventSkipped' && event.data.projection === projection)
        skipped.add(BigInt(event.data.position));
    }
    if (events.length < 1000) return skipped;
    from += events.length;
  }
};

/** Records that `projection` skips the event at `position`. */
export const skipEvent = async (
  store: EventStore,
  skip: Omit<SkippedEvent, 'skippedAt'>,
  now = new Date(),
): Promise<SkippedEvent> => {
  const data: SkippedEvent = { ...skip, skippedAt: now.toISOString() };
  await store.append(SKIPPED_EVENTS_STREAM, [projectionEvents.encode({ type: 'ProjectionEventSkipped', data })]);
  return data;
};
