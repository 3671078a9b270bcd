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
import type { EventStore, Json, RecordedEvent } from '../../../shared/ports/event-store.ts';
import { type Refollowed, refollowed } from '../../runtime/refollowed.ts';
import type { StateCache, Versioned } from '../../runtime/aggregate-repository.ts';
import type { ComponentReport } from '../../runtime/health.ts';

/**
 * Name of the directory's snapshot in the event store: the position it covers and the teams it
 * holds. Each team's state is a snapshot of its own (`teamSnapshotName`), written again only when
 * the team changed, so a directory of many teams with few of them active writes little, and no
 * write is the size of the whole directory.
 */
export const TEAM_DIRECTORY_SNAPSHOT = 'team-directory';
/** Name of one team's state in the directory's snapshot. */
export const teamSnapshotName = (teamId: string): string => `${TEAM_DIRECTORY_SNAPSHOT}.team.${teamId}`;
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
  private subscription?: Refollowed;
  /** Position of the last feed event applied; what a snapshot covers. */
  private position = 0n;
  private snapshotted = 0n;
  /** The version of each team whose state this process last stored (or loaded). */
  private readonly storedVersions = new Map<string, number>();
  private snapshotTimer?: NodeJS.Timeout;
  private store?: EventStore;
  /** Teams dropped because one of their events does not decode (see `apply`). */
  private readonly undecodable = new Set<string>();

  constructor(
    private readonly options: {
      snapshotEveryMs?: number;
      /** Told of a team event that does not decode (its team leaves the directory). */
      onUndecodable?: (error: EventDecodeError) => void;
      /** Told when the feed failed; it is followed again in `retryInMs`. */
      onFailed?: (error: unknown, retryInMs: number) => void;
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
    const teams = snapshot ? await this.readSnapshot(store, snapshot.data).catch(() => undefined) : undefined;
    if (snapshot && teams) {
      for (const [teamId, held] of teams) this.set(teamId, held);
      this.position = this.snapshotted = snapshot.position;
    }
    // A subscription that fails is followed again from the last applied event (`refollowed`): the
    // directory decides which keys are valid, and must not stay without its feed.
    this.subscription = refollowed(
      () =>
        store.subscribeToAll({
          categories: [teamEvents.category],
          batchSize: 2000,
          after: this.position,
          handler: async (events) => {
            for (const event of events) this.apply(event);
            this.position = events[events.length - 1]!.position;
          },
        }),
      { onFailed: this.options.onFailed },
    );
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
   * Stores the directory, when the feed moved on since the last snapshot: the state of each team
   * that changed since this process last stored it, then the position and the list of teams. A
   * team's stored state is then at least as new as any position a stored list covers, whichever
   * process stored it (a process that covers a position has folded every event up to it), so a
   * start from the list reads only the events after it. A state may be newer than the position
   * (this process's own writes land here at once): the start skips the feed events it already
   * holds, as `apply` does. A crash between the teams and the list leaves the older list, and
   * states newer than it: the same.
   */
  async snapshot(): Promise<void> {
    const position = this.position;
    if (!this.store || position <= this.snapshotted) return;
    // A team dropped for an event that does not decode is in no list this process could store: a
    // start from it would never read that team's events again, and once a fixed version decodes
    // them its keys would still be refused. The last list stays, so a start folds the feed after it.
    if (this.undecodable.size > 0) return;
    // The states are immutable: taken now, and each changed team encoded and stored on its own
    // turn of the event loop, so thousands of keys and open reservations never stop requests for
    // the whole directory (one snapshot of 6,000 keys was 2.3 MB, 13-45 ms on the event loop).
    const held = [...this.teams];
    try {
      for (const [teamId, { state, version }] of held) {
        if (this.storedVersions.get(teamId) === version) continue;
        // Ordered by the team's version, not the feed's position: the store keeps a snapshot unless
        // it holds one at least as high, so the newest state of the team stays whichever process
        // stores it (two states of one version are the same fold of the same events), and a write it
        // refuses leaves one at least as new as this.
        await this.store.storeSnapshot(teamSnapshotName(teamId), {
          position: BigInt(version + 1),
          data: { teamId, version, state: encodeTeamState(state) },
        });
        this.storedVersions.set(teamId, version);
        await nextTurn();
      }
      const teams = held.map(([teamId, { version }]) => ({ teamId, version }));
      await this.store.storeSnapshot(TEAM_DIRECTORY_SNAPSHOT, { position, data: { teams } });
      if (position > this.snapshotted) this.snapshotted = position;
    } catch {
      // The next one will try again; meanwhile a start reads a little more of the feed.
    }
  }

  /**
   * The teams a snapshot holds: each team's own snapshot, or inline (as versions before per-team
   * snapshots stored them). Undefined when the snapshot or a team's state is unreadable, or a
   * team's state is older than the list says (then it does not cover the list's position).
   */
  private async readSnapshot(store: EventStore, data: Json): Promise<Map<string, Versioned<TeamState>> | undefined> {
    const teams = (data as { teams?: unknown } | null)?.teams;
    if (!Array.isArray(teams)) return undefined;
    type Listed = { teamId: string; version: number; state?: Json };
    const listed = (entry: unknown): entry is Listed =>
      typeof (entry as Listed | null)?.teamId === 'string' && typeof (entry as Listed).version === 'number';
    if (!teams.every(listed)) return undefined;
    // Every team's own snapshot read at once (one round trip each on a server, concurrently).
    const owns = await Promise.all(
      teams.map(async (entry) =>
        entry.state === undefined ? (await store.readSnapshot(teamSnapshotName(entry.teamId)))?.data : entry,
      ),
    );
    const decoded = new Map<string, Versioned<TeamState>>();
    const stored = new Map<string, number>();
    for (const [i, entry] of teams.entries()) {
      const { teamId, version, state } = (owns[i] ?? {}) as Partial<Listed>;
      const folded = state === undefined ? undefined : decodeTeamState(state);
      if (teamId !== entry.teamId || typeof version !== 'number' || version < entry.version || !folded)
        return undefined;
      decoded.set(teamId, { state: folded, version });
      if (entry.state === undefined) stored.set(teamId, version);
    }
    for (const [teamId, version] of stored) this.storedVersions.set(teamId, version);
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
      this.undecodable.add(teamId);
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
