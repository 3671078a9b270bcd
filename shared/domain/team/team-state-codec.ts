/**
 * Team states as JSON, for snapshots of the team directory: the Maps and PersistentMaps of the
 * state become tagged entry lists and come back as the same kinds, so a state read from a snapshot
 * folds later events exactly as the state it was made from.
 */
import type { Json } from '../../ports/event-store.ts';
import { PersistentMap } from '../persistent-map.ts';
import type { TeamState } from './team-state.ts';

const encode = (value: unknown): Json => {
  if (value instanceof PersistentMap)
    return { $pmap: [...(value as PersistentMap<unknown>).entries()].map(([k, v]) => [k, encode(v)]) };
  if (value instanceof Map)
    return { $map: [...(value as Map<string, unknown>).entries()].map(([k, v]) => [k, encode(v)]) };
  if (Array.isArray(value)) return value.map(encode);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).flatMap(([k, v]) => (v === undefined ? [] : [[k, encode(v)]])));
  }
  return value as Json;
};

const decode = (json: Json): unknown => {
  if (Array.isArray(json)) return json.map(decode);
  if (json !== null && typeof json === 'object') {
    if (Array.isArray(json.$pmap))
      return PersistentMap.of((json.$pmap as [string, Json][]).map(([k, v]) => [k, decode(v)] as const));
    if (Array.isArray(json.$map)) return new Map((json.$map as [string, Json][]).map(([k, v]) => [k, decode(v)]));
    return Object.fromEntries(Object.entries(json).map(([k, v]) => [k, decode(v)]));
  }
  return json;
};

export const encodeTeamState = (state: TeamState): Json => encode(state);

/** The state a snapshot holds; undefined when it is not a team state this code wrote. */
export const decodeTeamState = (json: Json): TeamState | undefined => {
  const state = decode(json) as { status?: unknown } | null;
  if (state?.status === 'absent') return { status: 'absent' };
  if (state?.status !== 'active') return undefined;
  const active = state as Record<string, unknown>;
  const shaped =
    typeof active.teamId === 'string' &&
    typeof active.usedMinutes === 'number' &&
    active.apiKeys instanceof Map &&
    active.reservations instanceof PersistentMap &&
    active.orphanedCalls instanceof PersistentMap &&
    Array.isArray(active.members);
  return shaped ? (state as TeamState) : undefined;
};
