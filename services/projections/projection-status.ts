/**
 * How each projection is doing, as any process can tell from the store: its durable checkpoint,
 * the event store's head, the lag between them and the read-model version come from the store,
 * and so does a stop. A projection that stops on an event it cannot project records a
 * `ProjectionStopped` event (stream `projection-status`) naming the event and the error; it is
 * `stopped` while its checkpoint is below that event (until an operator skips it, or a replay
 * goes past it). One stuck on an event (it keeps failing there with an error that proves nothing
 * against it; docs/decisions/0027-stuck-on-an-event.md) records a `ProjectionStuck` event the same
 * way and is `stuck` on it while its checkpoint is below it; `stoppedOn` names the event either
 * way, the one an operator may skip. Whether a projection is running right now only the process
 * that runs it knows: there its live report says `running`; in any other process the state is
 * `unknown`, and the lag shows whether it moves.
 */
import type { EventStore } from '../../shared/ports/event-store.ts';
import type { ReadModels } from '../../shared/ports/read-models.ts';
import type { ComponentReport, Health } from '../runtime/health.ts';
import { CALL_EVENTS_RELAY } from './call-events-relay.ts';
import type { ProjectionEventError, UnexplainedEventError } from './supervised.ts';
import {
  PROJECTION_STATUS_STREAM,
  projectionEvents,
  type ProjectionStopped,
  type ProjectionStuck,
} from './projection-catalogue.ts';

export { PROJECTION_STATUS_STREAM, type ProjectionStopped, type ProjectionStuck };
export const PROJECTION_STOPPED = 'ProjectionStopped';

/** The projections of the projections service, by the names /readyz and the admin API use. */
export const PROJECTION_NAMES = ['call-history', 'deals', 'webhooks', 'call-events-relay'] as const;
export type ProjectionName = (typeof PROJECTION_NAMES)[number];

export interface ProjectionStatus {
  name: ProjectionName;
  /** Position of the last event applied, durable; a decimal string (positions are 64-bit). */
  checkpoint: string;
  /** Position of the last event in the store. */
  head: string;
  /** Events in the store the projection has not applied: head − checkpoint. */
  lag: number;
  /** The read-model version reads use (a replay activates a new one); null for the relay, which has none. */
  version: number | null;
  /**
   * `stopped` on an event (see `stoppedOn`); `stuck` on one, still retrying it (see `stoppedOn`);
   * `running` as reported by this process, which runs it; `unknown` when another process runs it.
   */
  state: 'running' | 'stopped' | 'stuck' | 'unknown';
  /** The event it stopped or is stuck on and the error, while it is: the one an operator may skip. */
  stoppedOn?: Omit<ProjectionStopped, 'projection' | 'at'> & { at?: string };
  /** The live report of this process, when it runs the projection (what /readyz shows). */
  thisProcess?: ComponentReport;
}

/** Records that a projection stopped on an event; every process reads it from the store. */
export const recordStopped = async (
  store: EventStore,
  error: ProjectionEventError,
  now = new Date(),
): Promise<void> => {
  const data: ProjectionStopped = {
    projection: error.projection,
    position: error.event.position.toString(),
    streamId: error.event.streamId,
    eventType: error.event.type,
    error: (error.cause as Error)?.message ?? error.message,
    at: now.toISOString(),
  };
  await store.append(PROJECTION_STATUS_STREAM, [projectionEvents.encode({ type: 'ProjectionStopped', data })]);
};

/** Records that a projection is stuck on an event; every process reads it from the store. */
export const recordStuck = async (
  store: EventStore,
  error: UnexplainedEventError,
  failures: number,
  since: Date,
  now = new Date(),
): Promise<void> => {
  const cause = error.cause;
  const data: ProjectionStuck = {
    projection: error.projection,
    position: error.event.position.toString(),
    streamId: error.event.streamId,
    eventType: error.event.type,
    error: cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause),
    failures,
    since: since.toISOString(),
    at: now.toISOString(),
  };
  await store.append(PROJECTION_STATUS_STREAM, [projectionEvents.encode({ type: 'ProjectionStuck', data })]);
};

/** A recorded stop or stuck event, as `projectionStatuses` reads it. */
type RecordedHold = { state: 'stopped' | 'stuck'; data: ProjectionStopped };

/** The latest recorded stop or stuck event of each projection. */
const latestStops = async (store: EventStore): Promise<Map<string, RecordedHold>> => {
  const latest = new Map<string, RecordedHold>();
  for (let from = 0; ;) {
    const events = await store.readStream(PROJECTION_STATUS_STREAM, { fromRevision: from, maxCount: 1000 });
    for (const stored of events) {
      const event = projectionEvents.decode(stored);
      if (event.type === 'ProjectionStopped') latest.set(event.data.projection, { state: 'stopped', data: event.data });
      if (event.type === 'ProjectionStuck') {
        const { failures: _failures, since: _since, ...data } = event.data;
        latest.set(event.data.projection, { state: 'stuck', data });
      }
    }
    if (events.length < 1000) return latest;
    from += events.length;
  }
};

export const projectionStatuses = async (deps: {
  eventStore: EventStore;
  readModels?: ReadModels;
  health?: Health;
}): Promise<ProjectionStatus[]> => {
  const { eventStore, readModels } = deps;
  const [head, stops, relayCheckpoint] = await Promise.all([
    eventStore.headPosition(),
    latestStops(eventStore),
    eventStore.readCheckpoint(CALL_EVENTS_RELAY),
  ]);
  const measured: { name: ProjectionName; checkpoint: bigint; version: number | null }[] = [];
  if (readModels) {
    const [history, version, deals, webhooks] = await Promise.all([
      readModels.callHistory.checkpoint(),
      readModels.callHistory.activeVersion(),
      readModels.deals.checkpoint(),
      readModels.webhooks.checkpoint(),
    ]);
    // Deal records and webhooks are never rebuilt: their one version is 1.
    measured.push(
      { name: 'call-history', checkpoint: history, version },
      { name: 'deals', checkpoint: deals, version: 1 },
      { name: 'webhooks', checkpoint: webhooks, version: 1 },
    );
  }
  measured.push({ name: 'call-events-relay', checkpoint: relayCheckpoint ?? 0n, version: null });
  const live = deps.health?.report().components ?? {};

  return measured.map(({ name, checkpoint, version }) => {
    const thisProcess = live[`projection:${name}`];
    const stop = stops.get(name);
    const base = {
      name,
      checkpoint: checkpoint.toString(),
      head: head.toString(),
      lag: Number(head > checkpoint ? head - checkpoint : 0n),
      version,
    };
    if (stop && checkpoint < BigInt(stop.data.position)) {
      const { projection: _projection, ...stoppedOn } = stop.data;
      return { ...base, state: stop.state, stoppedOn, ...(thisProcess ? { thisProcess } : {}) };
    }
    // Stopped or stuck here but not (yet) recorded: this process's word is first-hand.
    if (thisProcess && !thisProcess.ready && typeof thisProcess.position === 'string') {
      const stoppedOn = {
        position: thisProcess.position,
        streamId: String(thisProcess.streamId),
        eventType: String(thisProcess.eventType),
        error: thisProcess.reason ?? '',
      };
      return { ...base, state: thisProcess.stuck === true ? 'stuck' : 'stopped', stoppedOn, thisProcess };
    }
    return thisProcess ? { ...base, state: 'running', thisProcess } : { ...base, state: 'unknown' };
  });
};
