import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { TeamEvent } from '../../../../shared/domain/team/team-events.ts';
import type { TeamState } from '../../../../shared/domain/team/team-state.ts';
import { given, now, teamCreated } from './fixtures.ts';

const T_RESERVED = '2026-11-20T10:00:00.000Z';
const reservedAt = (callId: string, minutes: number, at = T_RESERVED): TeamEvent => ({
  type: 'CapacityReserved',
  data: { callId, minutes, autoRechargedMinutes: 0, at },
});
const orphanReleased = (callId: string, minutes: number): TeamEvent => ({
  type: 'CapacityReleased',
  data: { callId, minutes, orphaned: true },
});
const remaining = (state: TeamState): number => (state.status === 'active' ? state.remainingMinutes : Number.NaN);

test('a reservation records when it was made', () => {
  given([teamCreated(600)])
    .when({ type: 'ReserveCapacity', callId: 'c1', minutes: 30, now })
    .then([reservedAt('c1', 30, now)]);
});

test('a reservation made before the cut-off is released as orphaned, and the minutes come back', () => {
  const when = given([teamCreated(600), reservedAt('c1', 30)]).when({
    type: 'ReleaseOrphanedReservation',
    callId: 'c1',
    reservedBefore: '2026-11-20T10:15:00.000Z',
  });
  when.then([orphanReleased('c1', 30)]);
  assert.equal(remaining(when.stateAfter()), 600);
});

test('a reservation younger than the cut-off, or already gone, is left alone', () => {
  given([teamCreated(600), reservedAt('c1', 30)])
    .when({ type: 'ReleaseOrphanedReservation', callId: 'c1', reservedBefore: '2026-11-20T09:59:59.999Z' })
    .thenNothing();
  given([teamCreated(600)])
    .when({ type: 'ReleaseOrphanedReservation', callId: 'c1', reservedBefore: '2026-11-20T10:15:00.000Z' })
    .thenNothing();
  given([teamCreated(600), reservedAt('c1', 30), orphanReleased('c1', 30)])
    .when({ type: 'ReleaseOrphanedReservation', callId: 'c1', reservedBefore: '2026-11-20T10:15:00.000Z' })
    .thenNothing();
});

test('an orphaned call that runs after all is charged in full, once', () => {
  const history = [teamCreated(600), reservedAt('c1', 30), orphanReleased('c1', 30)];
  const when = given(history).when({ type: 'SettleCapacity', callId: 'c1', actualMinutes: 12 });
  when.then([{ type: 'CapacitySettled', data: { callId: 'c1', reservedMinutes: 0, actualMinutes: 12 } }]);
  assert.equal(remaining(when.stateAfter()), 588);
  const settled: TeamEvent = { type: 'CapacitySettled', data: { callId: 'c1', reservedMinutes: 0, actualMinutes: 12 } };
  given([...history, settled])
    .when({ type: 'SettleCapacity', callId: 'c1', actualMinutes: 12 })
    .thenNothing();
});

test('a plainly released call is not charged when it settles (it never ran)', () => {
  const released: TeamEvent = { type: 'CapacityReleased', data: { callId: 'c1', minutes: 30 } };
  given([teamCreated(600), reservedAt('c1', 30), released])
    .when({ type: 'SettleCapacity', callId: 'c1', actualMinutes: 12 })
    .thenNothing();
});

test('a reservation released while its call may still run (timed out) is charged in full if the call completes after all', () => {
  const release = given([teamCreated(600), reservedAt('c1', 30)]).when({
    type: 'ReleaseCapacity',
    callId: 'c1',
    callMayStillRun: true,
  });
  release.then([orphanReleased('c1', 30)]);
  const settle = given([teamCreated(600), reservedAt('c1', 30), orphanReleased('c1', 30)]).when({
    type: 'SettleCapacity',
    callId: 'c1',
    actualMinutes: 12,
  });
  settle.then([{ type: 'CapacitySettled', data: { callId: 'c1', reservedMinutes: 0, actualMinutes: 12 } }]);
  // A plain release (nothing reached the log) leaves nothing to charge.
  given([teamCreated(600), reservedAt('c1', 30)])
    .when({ type: 'ReleaseCapacity', callId: 'c1' })
    .then([{ type: 'CapacityReleased', data: { callId: 'c1', minutes: 30 } }]);
});
