/**
 * The Team aggregate as a decider: who the team is, its members, its API keys (hashes only) and
 * its live call capacity.
 *
 * Capacity rules (spec: "each submitted call consumes live call capacity … exhaustion gives 402";
 * docs/decisions/0003-capacity-reservations.md: "never overdraw by more than one call"):
 * - A call is admitted while any capacity is left (remaining > 0); its whole estimate is reserved,
 *   so remaining may go below zero by at most that one call's estimate.
 * - With nothing left and auto-recharge on, the reservation buys as many blocks as bring remaining
 *   above zero, recorded in the same event (`autoRechargedMinutes`), then reserves.
 * - Otherwise the call is refused: CAPACITY_EXHAUSTED.
 * - Settling adds back reserved minus actual. Settling or releasing a call with no open
 *   reservation (already settled or released, or never reserved) produces no event: delivery is
 *   at least once, and a redelivered settle must change nothing. Reserving a call that already
 *   holds a reservation produces no event either.
 */
import { DomainError, type Decider } from '../decider.ts';
import type { TeamCommand } from './team-commands.ts';
import type { TeamEvent } from './team-events.ts';
import { emailKey, evolveTeam, initialTeamState, type ActiveTeam, type TeamState } from './team-state.ts';

/** Every code the Team decider refuses a command with. */
export const TEAM_ERROR_CODES = [
  'TEAM_ALREADY_EXISTS',
  'TEAM_NOT_FOUND',
  'INVALID_TEAM_INPUT',
  'INVALID_MINUTES',
  'MEMBER_ALREADY_EXISTS',
  'MEMBER_EMAIL_TAKEN',
  'API_KEY_ALREADY_EXISTS',
  'API_KEY_NOT_FOUND',
  'API_KEY_ALREADY_REVOKED',
  'CAPACITY_EXHAUSTED',
] as const;
export type TeamErrorCode = (typeof TEAM_ERROR_CODES)[number];

const refuse = (code: TeamErrorCode, message: string): never => {
  throw new DomainError(code, message);
};

const requireText = (value: string, what: string): void => {
  if (value.trim() === '') refuse('INVALID_TEAM_INPUT', `${what} must not be empty`);
};
const requireEmail = (value: string, what: string): void => {
  if (!/^[^\s@]+@[^\s@]+$/.test(value.trim())) refuse('INVALID_TEAM_INPUT', `${what} must be an e-mail address`);
};
const requireMinutes = (minutes: number, what: string, { allowZero }: { allowZero: boolean }): void => {
  const ok = Number.isSafeInteger(minutes) && (allowZero ? minutes >= 0 : minutes > 0);
  if (!ok)
    refuse('INVALID_MINUTES', `${what} must be a whole number of minutes ${allowZero ? '≥ 0' : '> 0'}, got ${minutes}`);
};

/** The longest retention period a team may set: 100 years. */
export const MAX_RETENTION_DAYS = 36_500;

const active = (state: TeamState): ActiveTeam =>
  state.status === 'active' ? state : refuse('TEAM_NOT_FOUND', 'the team does not exist');

const decideOnActive = (command: Exclude<TeamCommand, { type: 'CreateTeam' }>, team: ActiveTeam): TeamEvent[] => {
  switch (command.type) {
    case 'AddMember': {
      const { memberId, email, name } = command;
      requireText(name, 'member name');
      requireEmail(email, 'member e-mail');
      if (team.members.some((m) => m.memberId === memberId))
        refuse('MEMBER_ALREADY_EXISTS', `member ${memberId} already exists`);
      const key = emailKey(email);
      // The owner's e-mail is taken too: a call from it must attribute to one person only.
      if (emailKey(team.owner.email) === key || team.members.some((m) => emailKey(m.email) === key)) {
        refuse('MEMBER_EMAIL_TAKEN', `a member with e-mail ${email} already exists (e-mails match ignoring case)`);
      }
      return [{ type: 'MemberAdded', data: { memberId, email: email.trim(), name: name.trim() } }];
    }
    case 'IssueApiKey': {
      const { keyId, label, keyHash, now } = command;
      if (!/^[0-9a-f]{64}$/.test(keyHash))
        refuse('INVALID_TEAM_INPUT', 'keyHash must be a hex HMAC-SHA256, never the key itself');
      if (team.apiKeys.has(keyId) || [...team.apiKeys.values()].some((k) => k.keyHash === keyHash)) {
        refuse('API_KEY_ALREADY_EXISTS', `API key ${keyId} already exists`);
      }
      return [{ type: 'ApiKeyIssued', data: { keyId, label: label.trim(), keyHash, at: now } }];
    }
    case 'RevokeApiKey': {
      const key = team.apiKeys.get(command.keyId) ?? refuse('API_KEY_NOT_FOUND', `no API key ${command.keyId}`);
      if (key.revokedAt !== undefined)
        refuse('API_KEY_ALREADY_REVOKED', `API key ${key.keyId} was revoked at ${key.revokedAt}`);
      return [{ type: 'ApiKeyRevoked', data: { keyId: key.keyId, at: command.now } }];
    }
    case 'AddCapacity':
      requireMinutes(command.minutes, 'capacity to add', { allowZero: false });
      return [{ type: 'CapacityAdded', data: { minutes: command.minutes } }];
    case 'SetAutoRecharge': {
      const blockMinutes = command.blockMinutes ?? (command.enabled ? 0 : team.autoRecharge.blockMinutes);
      requireMinutes(blockMinutes, 'auto-recharge block', { allowZero: !command.enabled });
      if (team.autoRecharge.enabled === command.enabled && team.autoRecharge.blockMinutes === blockMinutes) return [];
      return [{ type: 'AutoRechargeSet', data: { enabled: command.enabled, blockMinutes } }];
    }
    case 'ChangeCapacity': {
      // Both parts are decided against the same state (neither reads what the other changes), so
      // a refusal of either refuses the whole change before anything is stored.
      const { addMinutes, autoRecharge } = command;
      return [
        ...(addMinutes === undefined ? [] : decideOnActive({ type: 'AddCapacity', minutes: addMinutes }, team)),
        ...(autoRecharge === undefined ? [] : decideOnActive({ type: 'SetAutoRecharge', ...autoRecharge }, team)),
      ];
    }
    case 'SetRetention': {
      const { days } = command;
      if (days !== null && (!Number.isInteger(days) || days < 1 || days > MAX_RETENTION_DAYS)) {
        refuse(
          'INVALID_TEAM_INPUT',
          `retention days must be a whole number from 1 to ${MAX_RETENTION_DAYS}, or null to keep calls forever`,
        );
      }
      if ((team.retentionDays ?? null) === days) return [];
      return [{ type: 'RetentionSet', data: { days, at: command.now } }];
    }
    case 'ReserveCapacity':
      return reserve(command.callId, command.minutes, team, command.now);
    case 'SettleCapacity': {
      requireMinutes(command.actualMinutes, 'actual minutes', { allowZero: true });
      const reservation = team.reservations.get(command.callId);
      // A call whose reservation was released as orphaned ran after all: it is charged in full.
      const reservedMinutes = reservation?.minutes ?? (team.orphanedCalls.has(command.callId) ? 0 : undefined);
      if (reservedMinutes === undefined) return [];
      return [
        {
          type: 'CapacitySettled',
          data: { callId: command.callId, reservedMinutes, actualMinutes: command.actualMinutes },
        },
      ];
    }
    case 'ReleaseCapacity': {
      const reservation = team.reservations.get(command.callId);
      if (reservation === undefined) return [];
      const { callId, callMayStillRun } = command;
      return [
        {
          type: 'CapacityReleased',
          data: callMayStillRun
            ? { callId, minutes: reservation.minutes, orphaned: true }
            : { callId, minutes: reservation.minutes },
        },
      ];
    }
    case 'ReleaseOrphanedReservation': {
      const reservation = team.reservations.get(command.callId);
      if (reservation === undefined) return [];
      if (reservation.at !== undefined && Date.parse(reservation.at) > Date.parse(command.reservedBefore)) return [];
      return [
        { type: 'CapacityReleased', data: { callId: command.callId, minutes: reservation.minutes, orphaned: true } },
      ];
    }
    default: {
      const unhandled: never = command;
      throw new Error(`unknown team command ${JSON.stringify(unhandled)}`);
    }
  }
};

const reserve = (callId: string, minutes: number, team: ActiveTeam, now: string | undefined): TeamEvent[] => {
  requireMinutes(minutes, 'reservation', { allowZero: false });
  if (team.reservations.has(callId)) return [];
  const at = now === undefined ? {} : { at: now };
  const { remainingMinutes: remaining, autoRecharge } = team;
  if (remaining > 0) return [{ type: 'CapacityReserved', data: { callId, minutes, autoRechargedMinutes: 0, ...at } }];
  if (!autoRecharge.enabled || autoRecharge.blockMinutes <= 0) {
    return refuse(
      'CAPACITY_EXHAUSTED',
      `live call capacity is exhausted (${remaining} minutes left); add capacity or enable auto-recharge`,
    );
  }
  const blocks = Math.floor(-remaining / autoRecharge.blockMinutes) + 1;
  return [
    {
      type: 'CapacityReserved',
      data: { callId, minutes, autoRechargedMinutes: blocks * autoRecharge.blockMinutes, ...at },
    },
  ];
};

/** Decides a Team command; throws DomainError with a TeamErrorCode when refused. */
export const decideTeam = (command: TeamCommand, state: TeamState): TeamEvent[] => {
  if (command.type !== 'CreateTeam') return decideOnActive(command, active(state));
  if (state.status === 'active') refuse('TEAM_ALREADY_EXISTS', `team ${state.teamId} already exists`);
  const { teamId, name, owner, capacityMinutes, now } = command;
  requireText(teamId, 'teamId');
  requireText(name, 'team name');
  requireText(owner.name, 'owner name');
  requireEmail(owner.email, 'owner e-mail');
  requireMinutes(capacityMinutes, 'initial capacity', { allowZero: true });
  return [
    {
      type: 'TeamCreated',
      data: {
        teamId,
        name: name.trim(),
        owner: { name: owner.name.trim(), email: owner.email.trim() },
        capacityMinutes,
        at: now,
      },
    },
  ];
};

/** The Team aggregate: stream `team-{teamId}`. */
export const teamDecider: Decider<TeamCommand, TeamState, TeamEvent> = {
  decide: decideTeam,
  evolve: evolveTeam,
  initialState: initialTeamState,
};
