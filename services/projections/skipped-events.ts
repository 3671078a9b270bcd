/**
 * Events an operator told a projection to skip. A projection that fails on one event (not an
 * outage: the event itself cannot be projected) stops and reports it; the operator skips it with
 * `POST /api/admin/projections/:projection/skip` (or `npm run admin -- skip`), which appends a
 * `ProjectionEventSkipped` event here, so the skip is recorded, audited and seen by every process.
 */
import type { EventStore } from '../../shared/ports/event-store.ts';

export const SKIPPED_EVENTS_STREAM = 'projection-skips';
export const PROJECTION_EVENT_SKIPPED = 'ProjectionEventSkipped';

/** Projections that stop on a bad event and can be told to skip it. */
export const SKIPPABLE = ['call-history', 'deals', 'webhooks'] as const;
export type SkippableProjection = (typeof SKIPPABLE)[number];
export const isSkippable = (name: string): name is SkippableProjection =>
  (SKIPPABLE as readonly string[]).includes(name);

export interface SkippedEvent {
  projection: SkippableProjection;
  /** Global position of the skipped event. */
  position: string;
  reason: string;
  skippedAt: string;
}

/** Positions of the events `projection` must skip. */
export const skippedPositions = async (store: EventStore, projection: SkippableProjection): Promise<Set<bigint>> => {
  const skipped = new Set<bigint>();
  for (let from = 0; ;) {
    const events = await store.readStream(SKIPPED_EVENTS_STREAM, { fromRevision: from, maxCount: 1000 });
    for (const event of events) {
      const data = event.data as unknown as SkippedEvent;
      if (event.type === PROJECTION_EVENT_SKIPPED && data.projection === projection) skipped.add(BigInt(data.position));
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
  await store.append(SKIPPED_EVENTS_STREAM, [{ type: PROJECTION_EVENT_SKIPPED, data: { ...data } }]);
  return data;
};
