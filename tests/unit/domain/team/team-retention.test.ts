import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeTeamState, encodeTeamState } from '../../../../shared/domain/team/team-state-codec.ts';
import { given, teamCreated } from './fixtures.ts';

const NOW = '2026-11-25T10:00:00.000Z';
const set = (days: number | null) => ({ type: 'RetentionSet' as const, data: { days, at: NOW } });

test('a retention period is set in whole days from 1 to 36,500, or null to keep calls forever; setting it unchanged does nothing', () => {
  given([teamCreated()])
    .when({ type: 'SetRetention', days: 90, now: NOW })
    .then([set(90)]);
  given([teamCreated(), set(90)])
    .when({ type: 'SetRetention', days: null, now: NOW })
    .then([set(null)]);
  given([teamCreated(), set(90)])
    .when({ type: 'SetRetention', days: 90, now: NOW })
    .thenNothing();
  given([teamCreated()]).when({ type: 'SetRetention', days: null, now: NOW }).thenNothing();
  for (const days of [0, -1, 1.5, 36_501, Number.NaN])
    given([teamCreated()]).when({ type: 'SetRetention', days, now: NOW }).thenThrows('INVALID_TEAM_INPUT');
});

test('the team state keeps its retention period, through a snapshot too', () => {
  const state = given([teamCreated(), set(30)])
    .when({ type: 'SetRetention', days: 30, now: NOW })
    .stateAfter();
  assert.equal(state.status === 'active' ? state.retentionDays : undefined, 30);
  const decoded = decodeTeamState(encodeTeamState(state));
  assert.equal(decoded?.status === 'active' ? decoded.retentionDays : undefined, 30);
});
