/**
 * State of the Team aggregate and `evolve`. The state is a union tagged by `status`: a team that
 * was never created has nothing else. Maps (not records) hold keys and reservations so an id like
 * "toString" or "__proto__" is just a key. Only open reservations are kept: the set stays as small
 * as the number of calls in flight, however long the stream grows; it is a PersistentMap, so a
 * reservation costs the same however many are open.
 */
import { PersistentMap } from '../persistent-map.ts';
import type { Person, TeamEvent } from './team-events.ts';

export interface Member {
  memberId: string;
  /** As given; compare with `emailKey`. */
  email: string;
  name: string;
}

export interface ApiKeyRecord {
  keyId: string;
  label: string;
  keyHash: string;
  issuedAt: string;
  revokedAt?: string;
}

export interface ActiveTeam {
  status: 'active';
  teamId: string;
  name: string;
  owner: Person;
  createdAt: string;
  members: readonly Member[];
  apiKeys: ReadonlyMap<string, ApiKeyRecord>;
  /** Minutes left; negative by at most one call's estimate (plus any overrun settled later). */
  remainingMinutes: number;
  /** Minutes charged for processed calls (settlements), since the team was created. */
  usedMinutes: number;
  autoRecharge: { enabled: boolean; blockMinutes: number };
  /** Calls older than this many days are erased; null or absent (teams and snapshots before retention existed): kept forever. */
  retentionDays?: number | null;
  /** callId → minutes reserved (and when, if recorded), for calls not yet settled or released. */
  reservations: PersistentMap<Reservation>;
  /** Calls whose reservation was released as orphaned: settled all the same if they run after all. */
  orphanedCalls: PersistentMap<true>;
}

export interface Reservation {
  minutes: number;
  /** ISO 8601; absent on reservations recorded before the time was kept. */
  at?: string;
}

export type TeamState = { status: 'absent' } | ActiveTeam;

export const initialTeamState: TeamState = { status: 'absent' };

/** The form of an e-mail used for matching: trimmed, lower-cased. */
export const emailKey = (email: string): string => email.trim().toLowerCase();

const evolveActive = (state: ActiveTeam, event: Exclude<TeamEvent, { type: 'TeamCreated' }>): ActiveTeam => {
  switch (event.type) {
    case 'MemberAdded':
      return { ...state, members: [...state.members, { ...event.data }] };
    case 'ApiKeyIssued': {
      const { keyId, label, keyHash, at } = event.data;
      return { ...state, apiKeys: new Map(state.apiKeys).set(keyId, { keyId, label, keyHash, issuedAt: at }) };
    }
    case 'ApiKeyRevoked': {
      const key = state.apiKeys.get(event.data.keyId);
      if (!key) return state;
      return { ...state, apiKeys: new Map(state.apiKeys).set(key.keyId, { ...key, revokedAt: event.data.at }) };
    }
    case 'CapacityAdded':
      return { ...state, remainingMinutes: state.remainingMinutes + event.data.minutes };
    case 'AutoRechargeSet':
      return { ...state, autoRecharge: { ...event.data } };
    case 'RetentionSet':
      return { ...state, retentionDays: event.data.days };
    case 'CapacityReserved': {
      const { callId, minutes, autoRechargedMinutes, at } = event.data;
      return {
        ...state,
        remainingMinutes: state.remainingMinutes + autoRechargedMinutes - minutes,
        reservations: state.reservations.set(callId, at === undefined ? { minutes } : { minutes, at }),
      };
    }
    case 'CapacitySettled': {
      const { callId, reservedMinutes, actualMinutes } = event.data;
      return {
        ...state,
        remainingMinutes: state.remainingMinutes + reservedMinutes - actualMinutes,
        usedMinutes: state.usedMinutes + actualMinutes,
        reservations: state.reservations.delete(callId),
        orphanedCalls: state.orphanedCalls.delete(callId),
      };
    }
    case 'CapacityReleased': {
      const { callId, minutes, orphaned } = event.data;
      return {
        ...state,
        remainingMinutes: state.remainingMinutes + minutes,
        reservations: state.reservations.delete(callId),
        orphanedCalls: orphaned ? state.orphanedCalls.set(callId, true) : state.orphanedCalls,
      };
    }
    default: {
      const unhandled: never = event;
      throw new Error(`unknown team event ${JSON.stringify(unhandled)}`);
    }
  }
};

/** Folds one event into the team's state. */
export const evolveTeam = (state: TeamState, event: TeamEvent): TeamState => {
  if (event.type === 'TeamCreated') {
    const { teamId, name, owner, capacityMinutes, at } = event.data;
    return {
      status: 'active',
      teamId,
      name,
      owner: { ...owner },
      createdAt: at,
      members: [],
      apiKeys: new Map(),
      remainingMinutes: capacityMinutes,
      usedMinutes: 0,
      autoRecharge: { enabled: false, blockMinutes: 0 },
      reservations: PersistentMap.empty(),
      orphanedCalls: PersistentMap.empty(),
    };
  }
  // decide never emits anything but TeamCreated for a team that does not exist.
  return state.status === 'active' ? evolveActive(state, event) : state;
};
