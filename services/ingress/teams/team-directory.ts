/**
 * Every team's state in memory, kept current from the team events of the global feed (a
 * subscription to the `team` category: it never reads a call's events), so the hot
 * path (key lookup, capacity check, rep matching) never reads the store. A key revoked by any
 * process stops working here as soon as the subscription sees the event (local appends wake it at
 * once; other processes' within the store's poll interval or a NOTIFY).
 *
 * It is also the state cache of the team repository: a command folds only events newer than the
 * version held here.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import { EventDecodeError } from '../../../shared/domain/event-catalogue.ts';
import { teamEvents } from '../../../shared/domain/team/team-catalogue.ts';
import {
  evolveTeam,
  initialTeamState,
  type ActiveTeam,
  type TeamState,
} from '../../../shared/domain/team/team-state.ts';
import { decodeTeamState, encodeTeamState } from '../../../shared/domain/team/team-state-codec.ts';
import type { EventStore, Json, RecordedEvent, Subscription } from '../../../shared/ports/event-store.ts';
import type { StateCache, Versioned } from '../../runtime/aggregate-repository.ts';
import type { ComponentReport } from '../../runtime/health.ts';

/** Name of the directory's snapshot in the event store. */
export const TEAM_DIRECTORY_SNAPSHOT = 'team-directory';
/** How often the directory is snapshotted when it moved on; default 30 s (and at stop). */
export const DEFAULT_DIRECTORY_SNAPSHOT_EVERY_MS = 30_000;

export interface KeyOwner {
  teamId: string;
  keyId: string;
}

export class TeamDirectory implements StateCache<TeamState> {
  private readonly teams = new Map<string, Versioned<TeamState>>();
  private readonly keysByHash = new Map<string, KeyOwner>();
  private readonly lastUsed = new Map<string, string>();
  private subscription?: Subscription;
  /** Position of the last feed event applied; what a snapshot covers. */
  private position = 0n;
  private snapshotted = 0n;
  private snapshotTimer?: NodeJS.Timeout;
  private store?: EventStore;

  constructor(
    private readonly options: {
      snapshotEveryMs?: number;
      /** Told of a team event that does not decode (its team leaves the directory). */
      onUndecodable?: (error: EventDecodeError) => void;
    } = {},
  ) {}

  /**
   * Starts from the last snapshot of every team's state (so a start reads only the events after
   * it, not every reservation ever made) and follows the feed; resolves once every existing team
   * event is applied.
   */
  async start(store: EventStore): Promise<void> {
    this.store = store;
    // An unreadable snapshot only costs time: the feed from the start gives the same states.
    const snapshot = await store.readSnapshot(TEAM_DIRECTORY_SNAPSHOT).catch(() => undefined);
    const teams = snapshot ? this.decodeSnapshot(snapshot.data) : undefined;
    if (snapshot && teams) {
      for (const [teamId, held] of teams) this.set(teamId, held);
      this.position = this.snapshotted = snapshot.position;
    }
    this.subscription = store.subscribeToAll({
      categories: [teamEvents.category],
      batchSize: 2000,
      after: this.position,
      handler: async (events) => {
        for (const event of events) this.apply(event);
        this.position = events[events.length - 1]!.position;
      },
    });
    await this.subscription.caughtUp();
    this.snapshotTimer = setInterval(
      () => void this.snapshot(),
      this.options.snapshotEveryMs ?? DEFAULT_DIRECTORY_SNAPSHOT_EVERY_MS,
    );
    this.snapshotTimer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.snapshotTimer);
    await this.subscription?.stop();
    await this.snapshot();
  }

  /**
   * Stores every team's state, when the feed moved on since the last snapshot. A state may be
   * newer than the position (this process's own writes land here at once): a start from the
   * snapshot then skips the feed events it already holds, as `apply` does.
   */
  async snapshot(): Promise<void> {
    const position = this.position;
    if (!this.store || position <= this.snapshotted) return;
    // The states are immutable: taken now, and encoded one team at a time with the event loop
    // served between teams, so thousands of keys and open reservations do not stop requests for
    // the whole encoding (483 ms once every 30 s, measured with 6,000 keys and unsettled reservations).
    const held = [...this.teams];
    const teams: Json[] = [];
    for (const [teamId, { state, version }] of held) {
      teams.push({ teamId, version, state: encodeTeamState(state) });
      await nextTurn();
    }
    try {
      await this.store.storeSnapshot(TEAM_DIRECTORY_SNAPSHOT, { position, data: { teams } });
      if (position > this.snapshotted) this.snapshotted = position;
    } catch {
      // The next one will try again; meanwhile a start reads a little more of the feed.
    }
  }

  private decodeSnapshot(data: Json): Map<string, Versioned<TeamState>> | undefined {
    const teams = (data as { teams?: unknown } | null)?.teams;
    if (!Array.isArray(teams)) return undefined;
    const decoded = new Map<string, Versioned<TeamState>>();
    for (const entry of teams as { teamId?: unknown; version?: unknown; state?: Json }[]) {
      const state = entry.state === undefined ? undefined : decodeTeamState(entry.state);
      if (typeof entry.teamId !== 'string' || typeof entry.version !== 'number' || !state) return undefined;
      decoded.set(entry.teamId, { state, version: entry.version });
    }
    return decoded;
  }

  /**
   * Readiness: the directory decides which keys are valid, so one that stopped following the feed,
   * or has been unable to read it for too long, makes the process unready.
   */
  report(retryingTooLong: (since: Date) => boolean, maxLagMs = Number.POSITIVE_INFINITY): ComponentReport {
    const status = this.subscription?.status();
    if (!status) return { ready: false, reason: 'not started' };
    const lagMs = this.lagMs();
    if (status.state === 'failed' || status.state === 'stopped')
      return { ready: false, reason: `team events subscription ${status.state}: ${status.error ?? ''}`, lagMs };
    if (status.state === 'retrying' && retryingTooLong(status.since))
      return {
        ready: false,
        reason: `cannot read team events since ${status.since.toISOString()}: ${status.error}`,
        lagMs,
      };
    if (lagMs > maxLagMs)
      return {
        ready: false,
        reason: `team events last read ${lagMs} ms ago (more than ${maxLagMs} ms): API keys are refused until they are current`,
        lagMs,
      };
    return { ready: true, state: status.state, lagMs };
  }

  /**
   * How old the directory's knowledge is: the time since the last read that reached the end of
   * the team events started (0 before it follows a feed, where only this process writes).
   */
  lagMs(now = Date.now()): number {
    const caughtUpAt = this.subscription?.status().caughtUpAt;
    return caughtUpAt ? Math.max(0, now - caughtUpAt.getTime()) : 0;
  }

  /**
   * Reads the team events now when the directory follows them but its last read is older than
   * `maxLagMs`: this process was busy or paused, so its poll did not run, and a read settles what
   * the age cannot. Resolves once a read started now reaches the end, or after `withinMs`; at once
   * while the subscription retries an outage or has stopped (a read now would not answer either).
   * Never rejects: a subscription that fails meanwhile leaves the directory as old as it was.
   */
  async refresh(maxLagMs: number, withinMs: number): Promise<void> {
    const subscription = this.subscription;
    if (!subscription || this.lagMs() <= maxLagMs || subscription.status().state !== 'live') return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      subscription.caughtUp().catch(() => undefined),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, withinMs))),
    ]).finally(() => clearTimeout(timer));
  }

  /** The team and key a key hash belongs to, when the key is active. */
  ownerOf(keyHash: string): KeyOwner | undefined {
    return this.keysByHash.get(keyHash);
  }

  activeTeams(): ActiveTeam[] {
    return [...this.teams.values()].flatMap(({ state }) => (state.status === 'active' ? [state] : []));
  }

  team(teamId: string): ActiveTeam | undefined {
    const state = this.teams.get(teamId)?.state;
    return state?.status === 'active' ? state : undefined;
  }

  /** When a key last authenticated a request in this process (ISO 8601), if it did. */
  lastUsedAt(keyId: string): string | undefined {
    return this.lastUsed.get(keyId);
  }

  markUsed(keyId: string, at: string): void {
    this.lastUsed.set(keyId, at);
  }

  get(teamId: string): Versioned<TeamState> | undefined {
    return this.teams.get(teamId);
  }

  set(teamId: string, value: Versioned<TeamState>): void {
    const held = this.teams.get(teamId);
    if (held && held.version >= value.version) return;
    this.teams.set(teamId, value);
    // Most team events are reservations and settlements: the key index changes only with the keys.
    if (
      held?.state.status === 'active' &&
      value.state.status === 'active' &&
      held.state.apiKeys === value.state.apiKeys
    )
      return;
    this.index(teamId, value.state);
  }

  private apply(stored: RecordedEvent): void {
    const teamId = teamEvents.idOf(stored.streamId);
    if (teamId === undefined) return;
    const held = this.teams.get(teamId) ?? { state: initialTeamState, version: -1 };
    // Commands of this process already folded newer events in; a gap means we are behind and the
    // subscription will deliver the missing ones in order.
    if (stored.revision !== held.version + 1) return;
    let event;
    try {
      event = teamEvents.decode(stored);
    } catch (error) {
      // Never folded: the team leaves the directory, so its keys are refused (fail closed) rather
      // than judged on a state that misses this event; the other teams go on
      // (docs/decisions/0016-event-catalogues-and-upcasting.md).
      if (!(error instanceof EventDecodeError)) throw error;
      this.forget(teamId);
      this.options.onUndecodable?.(error);
      return;
    }
    this.set(teamId, { state: evolveTeam(held.state, event), version: stored.revision });
  }

  /** Drops a team and its keys. */
  private forget(teamId: string): void {
    this.teams.delete(teamId);
    for (const [hash, owner] of this.keysByHash) if (owner.teamId === teamId) this.keysByHash.delete(hash);
  }

  private index(teamId: string, state: TeamState): void {
    if (state.status !== 'active') return;
    for (const key of state.apiKeys.values()) {
      if (key.revokedAt) this.keysByHash.delete(key.keyHash);
      else this.keysByHash.set(key.keyHash, { teamId, keyId: key.keyId });
    }
  }
}
