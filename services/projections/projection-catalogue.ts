/**
 * The catalogue of the projections' own operational events, category `projection`
 * (docs/decisions/0016-event-catalogues-and-upcasting.md): `projection-status` records each time a
 * projection stopped on an event or got stuck on one, `projection-skips` each event an operator
 * told one to skip.
 * Every type is at version 1.
 */
import { Type } from '@sinclair/typebox';
import { type EventCatalogue, eventCatalogue } from '../../shared/domain/event-catalogue.ts';

/** The projections that stop on a bad event and can be told to skip it. */
export const SKIPPABLE = ['call-history', 'deals', 'webhooks'] as const;
export type SkippableProjection = (typeof SKIPPABLE)[number];

/** A projection stopped on one event: recorded once each time it stops. */
export interface ProjectionStopped {
  projection: string;
  /** Global position of the event it cannot project, as a decimal string. */
  position: string;
  streamId: string;
  eventType: string;
  error: string;
  at: string;
}

/**
 * A projection is stuck on one event: it failed there several times in a row with an error that
 * proves nothing against the event (docs/decisions/0027-stuck-on-an-event.md). Recorded once each
 * time it gets stuck; it goes on retrying.
 */
export interface ProjectionStuck {
  projection: string;
  /** Global position of the event it keeps failing on, as a decimal string. */
  position: string;
  streamId: string;
  eventType: string;
  error: string;
  /** Failures in a row on the event when it was recorded. */
  failures: number;
  /** When the first of them was. */
  since: string;
  at: string;
}

/** An operator told `projection` to skip the event at `position`. */
export interface SkippedEvent {
  projection: SkippableProjection;
  /** Global position of the skipped event. */
  position: string;
  reason: string;
  skippedAt: string;
}

export type ProjectionEvent =
  | { type: 'ProjectionStopped'; data: ProjectionStopped }
  | { type: 'ProjectionStuck'; data: ProjectionStuck }
  | { type: 'ProjectionEventSkipped'; data: SkippedEvent };

const Position = Type.String({ pattern: '^[0-9]+$' });

export const projectionEvents: EventCatalogue<ProjectionEvent> = eventCatalogue<ProjectionEvent>('projection', {
  ProjectionStopped: {
    schema: Type.Object({
      projection: Type.String(),
      position: Position,
      streamId: Type.String(),
      eventType: Type.String(),
      error: Type.String(),
      at: Type.String(),
    }),
  },
  ProjectionStuck: {
    schema: Type.Object({
      projection: Type.String(),
      position: Position,
      streamId: Type.String(),
      eventType: Type.String(),
      error: Type.String(),
      failures: Type.Integer({ minimum: 1 }),
      since: Type.String(),
      at: Type.String(),
    }),
  },
  ProjectionEventSkipped: {
    schema: Type.Object({
      projection: Type.Union(SKIPPABLE.map((name) => Type.Literal(name))),
      position: Position,
      reason: Type.String(),
      skippedAt: Type.String(),
    }),
  },
});

/** Where stops (and stuck events) are recorded: `projection-status`. */
export const PROJECTION_STATUS_STREAM = projectionEvents.streamId('status');
/** Where skips are recorded: `projection-skips`. */
export const SKIPPED_EVENTS_STREAM = projectionEvents.streamId('skips');
