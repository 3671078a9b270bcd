/**
 * Team use cases for the admin API and the ingest path: each turns a request into a Team command,
 * with the ids and the time it needs, and runs it through the repository.
 */
import { randomUUID } from 'node:crypto';
import { hoursToMinutes } from '../../../shared/domain/team/capacity.ts';
import type { TeamCommand } from '../../../shared/domain/team/team-commands.ts';
import type { ActiveTeam } from '../../../shared/domain/team/team-state.ts';
import { generateApiKey, generateKeyId, hashApiKey, parseApiKey } from '../../../shared/security/api-keys.ts';
import type { HandleOptions } from '../../runtime/aggregate-repository.ts';
import type { TeamRepository } from '../../runtime/team-writer.ts';
import type { KeyOwner, TeamDirectory } from './team-directory.ts';
import { ProblemError } from '../errors.ts';

export interface TeamServiceDeps {
  /** The process's one writer of team streams, caching into `directory` (see team-writer.ts). */
  repository: TeamRepository;
  directory: TeamDirectory;
  /** Secret of the keyed hash under which API keys are stored. */
  keySecret: string;
  now?: () => Date;
  /**
   * Keys fail closed: when the directory has not been able to read team events for longer than
   * this, a key is neither accepted nor refused but answered 503 (it may have been revoked
   * meanwhile). Default 10 s (KEY_DIRECTORY_MAX_LAG_MS).
   */
  maxDirectoryLagMs?: number;
}

export const DEFAULT_KEY_DIRECTORY_MAX_LAG_MS = 10_000;
/**
 * How long a request waits for the read a stale directory makes before its key is answered 503.
 * A read of the team events takes milliseconds when the store answers; a store that hangs costs
 * each request this much, not its client's timeout.
 */
export const KEY_DIRECTORY_REFRESH_WAIT_MS = 250;

/** A 400 naming the request's field and its rule: the checks the admin API's schema cannot state. */
const invalidField = (field: string, message: string): ProblemError =>
  new ProblemError('VALIDATION_FAILED', `${field} ${message}.`, { errors: [{ field, message }] });

/** `hours` in whole minutes, as the team stores them; at least one unless `allowZero`. */
const wholeMinutes = (hours: number, field: string, { allowZero = false } = {}): number => {
  const minutes = hoursToMinutes(hours);
  if (minutes < (allowZero ? 0 : 1))
    throw invalidField(
      field,
      `must come to at least one whole minute when rounded (0.0084 h or more); ${hours} h rounds to ${minutes}`,
    );
  return minutes;
};

/** A name of the request that must hold more than white space. */
const requireNotBlank = (value: string | undefined, field: string): void => {
  if (value !== undefined && value.trim() === '') throw invalidField(field, 'must not be blank');
};

export interface CapacityView {
  remainingMinutes: number;
  autoRecharge: { enabled: boolean; blockMinutes: number };
}

export class TeamService {
  private readonly repository: TeamRepository;
  private readonly now: () => Date;

  constructor(private readonly deps: TeamServiceDeps) {
    this.repository = deps.repository;
    this.now = deps.now ?? (() => new Date());
  }

  /**
   * The team and key behind a raw API key, or undefined for a malformed, unknown or revoked key.
   * A directory older than its bound first reads the team events (waiting at most
   * KEY_DIRECTORY_REFRESH_WAIT_MS), so a process that was only busy or paused answers from what it
   * just read; one that still cannot read answers 503.
   */
  async authenticate(rawKey: string): Promise<KeyOwner | undefined> {
    const parsed = parseApiKey(rawKey);
    if (!parsed.ok) return undefined;
    const maxLagMs = this.deps.maxDirectoryLagMs ?? DEFAULT_KEY_DIRECTORY_MAX_LAG_MS;
    await this.deps.directory.refresh(maxLagMs, KEY_DIRECTORY_REFRESH_WAIT_MS);
    const lagMs = this.deps.directory.lagMs();
    if (lagMs > maxLagMs) {
      throw new ProblemError(
        'SERVICE_UNAVAILABLE',
        `API keys cannot be verified right now (this process last read key changes ${Math.round(lagMs / 1000)} s ago); nothing was accepted. Retry after the Retry-After delay.`,
        { headers: { 'retry-after': '5' } },
      );
    }
    const owner = this.deps.directory.ownerOf(hashApiKey(parsed.key, this.deps.keySecret));
    if (owner) this.deps.directory.markUsed(owner.keyId, this.now().toISOString());
    return owner;
  }

  async createTeam(input: {
    name: string;
    ownerEmail: string;
    ownerName?: string;
    capacityHours?: number;
  }): Promise<string> {
    requireNotBlank(input.name, 'name');
    requireNotBlank(input.ownerName, 'ownerName');
    const teamId = randomUUID();
    await this.run(teamId, {
      type: 'CreateTeam',
      teamId,
      name: input.name,
      owner: { email: input.ownerEmail, name: input.ownerName ?? input.ownerEmail },
      capacityMinutes: hoursToMinutes(input.capacityHours ?? 0),
      now: this.now().toISOString(),
    });
    return teamId;
  }

  async addMember(teamId: string, input: { email: string; name: string }): Promise<string> {
    requireNotBlank(input.name, 'name');
    const memberId = randomUUID();
    await this.run(teamId, { type: 'AddMember', memberId, email: input.email, name: input.name });
    return memberId;
  }

  /** Issues a key; the key itself is returned once and never stored. */
  async issueKey(teamId: string, label?: string): Promise<{ keyId: string; key: string }> {
    const key = generateApiKey();
    const keyId = generateKeyId();
    const keyHash = hashApiKey(key, this.deps.keySecret);
    await this.run(teamId, { type: 'IssueApiKey', keyId, label: label ?? '', keyHash, now: this.now().toISOString() });
    return { keyId, key };
  }

  async revokeKey(teamId: string, keyId: string): Promise<void> {
    await this.run(teamId, { type: 'RevokeApiKey', keyId, now: this.now().toISOString() });
  }

  /**
   * Adds capacity and/or sets auto-recharge as one command: stored whole or refused whole, so a
   * refused request changed nothing and can be sent again corrected.
   */
  async changeCapacity(
    teamId: string,
    input: { addHours?: number; autoRecharge?: { enabled: boolean; hours?: number } },
  ): Promise<CapacityView> {
    const addMinutes = input.addHours === undefined ? undefined : wholeMinutes(input.addHours, 'addHours');
    let autoRecharge: { enabled: boolean; blockMinutes?: number } | undefined;
    if (input.autoRecharge) {
      const { enabled, hours } = input.autoRecharge;
      if (enabled && hours === undefined)
        throw invalidField(
          'autoRecharge.hours',
          'is required to enable auto-recharge: the hours added each time capacity runs out',
        );
      autoRecharge = {
        enabled,
        ...(hours !== undefined
          ? { blockMinutes: wholeMinutes(hours, 'autoRecharge.hours', { allowZero: !enabled }) }
          : {}),
      };
    }
    if (addMinutes === undefined && autoRecharge === undefined) return this.capacity(await this.load(teamId));
    const { state } = await this.run(teamId, {
      type: 'ChangeCapacity',
      ...(addMinutes !== undefined ? { addMinutes } : {}),
      ...(autoRecharge ? { autoRecharge } : {}),
    });
    return this.capacity(state as ActiveTeam);
  }

  /** Sets the team's retention period in days (null: keep calls forever); returns it as stored. */
  async setRetention(teamId: string, days: number | null): Promise<number | null> {
    const { state } = await this.run(teamId, { type: 'SetRetention', days, now: this.now().toISOString() });
    return state.status === 'active' ? (state.retentionDays ?? null) : null;
  }

  /**
   * Reserves a call's estimate; throws DomainError CAPACITY_EXHAUSTED when nothing is left. With
   * `deferDurability` it resolves once committed, for a caller whose next write (the call's
   * publish) is durable and covers it. `reserved` is false when the call held a reservation
   * already (an earlier attempt's).
   */
  async reserve(
    teamId: string,
    callId: string,
    minutes: number,
    options: HandleOptions = {},
  ): Promise<CapacityView & { autoRechargedMinutes: number; reserved: boolean }> {
    const { state, events } = await this.run(
      teamId,
      { type: 'ReserveCapacity', callId, minutes, now: this.now().toISOString() },
      options,
    );
    const reserved = events.find((e) => e.type === 'CapacityReserved');
    return {
      ...this.capacity(state as ActiveTeam),
      autoRechargedMinutes: reserved?.type === 'CapacityReserved' ? reserved.data.autoRechargedMinutes : 0,
      reserved: reserved !== undefined,
    };
  }

  async release(teamId: string, callId: string): Promise<void> {
    await this.run(teamId, { type: 'ReleaseCapacity', callId });
  }

  /** Releases a reservation made at or before `reservedBefore` whose call is in no stream; true if it was released. */
  async releaseOrphan(teamId: string, callId: string, reservedBefore: string): Promise<boolean> {
    const { events } = await this.run(teamId, { type: 'ReleaseOrphanedReservation', callId, reservedBefore });
    return events.length > 0;
  }

  /** Every team this process knows, as of its directory (no I/O). */
  directoryTeams(): ActiveTeam[] {
    return this.deps.directory.activeTeams();
  }

  /** When a key last authenticated a request in this process. */
  lastUsedAt(keyId: string): string | undefined {
    return this.deps.directory.lastUsedAt(keyId);
  }

  /** The team as this process knows it (no I/O): for attribution on the hot path. */
  directoryTeam(teamId: string): ActiveTeam | undefined {
    return this.deps.directory.team(teamId);
  }

  /** The team as stored now (reads events newer than the directory's copy). */
  async load(teamId: string): Promise<ActiveTeam | undefined> {
    const { state } = await this.repository.load(teamId);
    return state.status === 'active' ? state : undefined;
  }

  capacity(team: ActiveTeam | undefined): CapacityView {
    return {
      remainingMinutes: team?.remainingMinutes ?? 0,
      autoRecharge: team?.autoRecharge ?? { enabled: false, blockMinutes: 0 },
    };
  }

  private run(teamId: string, command: TeamCommand, options?: HandleOptions) {
    return this.repository.handle(teamId, command, undefined, options);
  }
}
