/**
 * A team state read back from a snapshot is the state it was made from: it folds later events to
 * exactly what the full history gives.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { teamDecider } from '../../../../shared/domain/team/team-decider.ts';
import type { TeamEvent } from '../../../../shared/domain/team/team-events.ts';
import { decodeTeamState, encodeTeamState } from '../../../../shared/domain/team/team-state-codec.ts';
import type { TeamState } from '../../../../shared/domain/team/team-state.ts';
import { PersistentMap } from '../../../../shared/domain/persistent-map.ts';
import { autoRecharge, keyIssued, memberAdded, reserved, teamCreated } from './fixtures.ts';

/** The state's content, whatever the internal layout of its maps. */
const plain = (value: unknown): unknown => {
  if (value instanceof PersistentMap || value instanceof Map)
    return [...(value as Map<string, unknown>).entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => [k, plain(v)]);
  if (Array.isArray(value)) return value.map(plain);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
};
const fold = (events: TeamEvent[], from: TeamState = teamDecider.initialState) =>
  events.reduce(teamDecider.evolve, from);
const throughJson = (state: TeamState) => decodeTeamState(JSON.parse(JSON.stringify(encodeTeamState(state))));

const history: TeamEvent[] = [
  teamCreated(600),
  memberAdded('m1', 'Dana@Acme.io', 'Dana Reyes'),
  keyIssued('k1'),
  keyIssued('k2', 'b'.repeat(64)),
  { type: 'ApiKeyRevoked', data: { keyId: 'k1', at: '2026-11-20T11:00:00.000Z' } },
  autoRecharge(true, 120),
  ...Array.from({ length: 40 }, (_, i) => reserved(`call-${i}`, 3 + (i % 4))),
  { type: 'CapacitySettled', data: { callId: 'call-0', reservedMinutes: 3, actualMinutes: 2 } },
  { type: 'CapacityReleased', data: { callId: 'call-1', minutes: 4 } },
];
const later: TeamEvent[] = [
  reserved('call-99', 5),
  { type: 'CapacitySettled', data: { callId: 'call-2', reservedMinutes: 5, actualMinutes: 7 } },
  keyIssued('k3', 'c'.repeat(64)),
];

test('a snapshot of a team state folds later events exactly as the full history does', () => {
  const state = fold(history);
  const restored = throughJson(state);
  assert.ok(restored);
  assert.deepEqual(plain(restored), plain(state));
  assert.deepEqual(plain(fold(later, restored)), plain(fold([...history, ...later])));
  assert.equal(restored.status === 'active' && restored.reservations.get('call-10')?.minutes, 5);
});

test('an absent team round-trips; what is not a team state is refused', () => {
  assert.deepEqual(throughJson({ status: 'absent' }), { status: 'absent' });
  assert.equal(decodeTeamState({ status: 'active', teamId: 't1' }), undefined);
  assert.equal(decodeTeamState({ teams: [] }), undefined);
  assert.equal(decodeTeamState(null), undefined);
});
