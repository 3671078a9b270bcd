import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TeamState } from '../../../../shared/domain/team/team-state.ts';
import { autoRecharge, given, reserved, teamCreated } from './fixtures.ts';

const remaining = (state: TeamState): number => (state.status === 'active' ? state.remainingMinutes : Number.NaN);

test('capacity is added in whole minutes', () => {
  const when = given([teamCreated(0)]).when({ type: 'AddCapacity', minutes: 90 });
  when.then([{ type: 'CapacityAdded', data: { minutes: 90 } }]);
  assert.equal(remaining(when.stateAfter()), 90);
});

test('adding zero, negative or fractional minutes is refused: INVALID_MINUTES', () => {
  for (const minutes of [0, -60, 1.5, Number.NaN])
    given([teamCreated()]).when({ type: 'AddCapacity', minutes }).thenThrows('INVALID_MINUTES');
});

test('auto-recharge is enabled with a block size, disabled keeping it, and setting it unchanged does nothing', () => {
  given([teamCreated()])
    .when({ type: 'SetAutoRecharge', enabled: true, blockMinutes: 60 })
    .then([autoRecharge(true, 60)]);
  given([teamCreated(), autoRecharge(true, 60)])
    .when({ type: 'SetAutoRecharge', enabled: false })
    .then([autoRecharge(false, 60)]);
  given([teamCreated(), autoRecharge(true, 60)])
    .when({ type: 'SetAutoRecharge', enabled: true, blockMinutes: 60 })
    .thenNothing();
  given([teamCreated()]).when({ type: 'SetAutoRecharge', enabled: true }).thenThrows('INVALID_MINUTES');
});

test('a capacity change adds capacity and sets auto-recharge together, or is refused whole', () => {
  given([teamCreated(0)])
    .when({ type: 'ChangeCapacity', addMinutes: 600, autoRecharge: { enabled: true, blockMinutes: 60 } })
    .then([{ type: 'CapacityAdded', data: { minutes: 600 } }, autoRecharge(true, 60)]);
  given([teamCreated(0)])
    .when({ type: 'ChangeCapacity', addMinutes: 600, autoRecharge: { enabled: true } })
    .thenThrows('INVALID_MINUTES');
  given([teamCreated(0)])
    .when({ type: 'ChangeCapacity', addMinutes: 0, autoRecharge: { enabled: true, blockMinutes: 60 } })
    .thenThrows('INVALID_MINUTES');
  given([teamCreated(0), autoRecharge(true, 60)])
    .when({ type: 'ChangeCapacity', autoRecharge: { enabled: true, blockMinutes: 60 } })
    .thenNothing();
});

test('a call is reserved while capacity is left', () => {
  const when = given([teamCreated(600)]).when({ type: 'ReserveCapacity', callId: 'c1', minutes: 30 });
  when.then([reserved('c1', 30)]);
  assert.equal(remaining(when.stateAfter()), 570);
});

test('never overdraw by more than one call: the last minute admits one whole call, the next is refused', () => {
  const team = [teamCreated(1)];
  const when = given(team).when({ type: 'ReserveCapacity', callId: 'c1', minutes: 30 });
  when.then([reserved('c1', 30)]);
  assert.equal(remaining(when.stateAfter()), -29);
  given([...team, reserved('c1', 30)])
    .when({ type: 'ReserveCapacity', callId: 'c2', minutes: 1 })
    .thenThrows('CAPACITY_EXHAUSTED');
});

test('402 condition: live call capacity exhausted and no auto-recharge → CAPACITY_EXHAUSTED', () => {
  given([teamCreated(0)])
    .when({ type: 'ReserveCapacity', callId: 'c1', minutes: 5 })
    .thenThrows('CAPACITY_EXHAUSTED');
  given([teamCreated(0), autoRecharge(true, 60), autoRecharge(false, 60)])
    .when({ type: 'ReserveCapacity', callId: 'c1', minutes: 5 })
    .thenThrows('CAPACITY_EXHAUSTED');
});

test('after capacity is added, the request can be retried', () => {
  given([teamCreated(0), { type: 'CapacityAdded', data: { minutes: 60 } }])
    .when({ type: 'ReserveCapacity', callId: 'c1', minutes: 5 })
    .then([reserved('c1', 5)]);
});

test('after auto-recharge is enabled, the request can be retried: the reservation buys one block', () => {
  const when = given([teamCreated(0), autoRecharge(true, 60)]).when({
    type: 'ReserveCapacity',
    callId: 'c1',
    minutes: 5,
  });
  when.then([reserved('c1', 5, 60)]);
  assert.equal(remaining(when.stateAfter()), 55);
});

test('auto-recharge buys as many blocks as bring remaining above zero', () => {
  const team = [teamCreated(1), reserved('c1', 26), autoRecharge(true, 10)]; // remaining -25
  given(team)
    .when({ type: 'ReserveCapacity', callId: 'c2', minutes: 5 })
    .then([reserved('c2', 5, 30)]);
  given([teamCreated(0), reserved('c0', 0), autoRecharge(true, 10)])
    .when({ type: 'ReserveCapacity', callId: 'c2', minutes: 5 })
    .then([reserved('c2', 5, 10)]);
});

test('reserving a call that already holds a reservation does nothing', () => {
  given([teamCreated(), reserved('c1', 30)])
    .when({ type: 'ReserveCapacity', callId: 'c1', minutes: 30 })
    .thenNothing();
});

test('a reservation is whole minutes > 0: INVALID_MINUTES', () => {
  for (const minutes of [0, -1, 2.5])
    given([teamCreated()]).when({ type: 'ReserveCapacity', callId: 'c1', minutes }).thenThrows('INVALID_MINUTES');
});

test('settling gives back reserved minus actual', () => {
  const when = given([teamCreated(600), reserved('c1', 30)]).when({
    type: 'SettleCapacity',
    callId: 'c1',
    actualMinutes: 12,
  });
  when.then([{ type: 'CapacitySettled', data: { callId: 'c1', reservedMinutes: 30, actualMinutes: 12 } }]);
  assert.equal(remaining(when.stateAfter()), 588);
});

test('settling a call longer than its estimate takes the difference', () => {
  const when = given([teamCreated(600), reserved('c1', 30)]).when({
    type: 'SettleCapacity',
    callId: 'c1',
    actualMinutes: 95,
  });
  assert.equal(remaining(when.stateAfter()), 505);
});

test('a second settle of the same call does nothing (at-least-once delivery)', () => {
  const settled = { type: 'CapacitySettled', data: { callId: 'c1', reservedMinutes: 30, actualMinutes: 12 } } as const;
  given([teamCreated(), reserved('c1', 30), settled])
    .when({ type: 'SettleCapacity', callId: 'c1', actualMinutes: 12 })
    .thenNothing();
});

test('settling or releasing a call that was never reserved does nothing', () => {
  given([teamCreated()]).when({ type: 'SettleCapacity', callId: 'ghost', actualMinutes: 3 }).thenNothing();
  given([teamCreated()]).when({ type: 'ReleaseCapacity', callId: 'ghost' }).thenNothing();
});

test('actual minutes are whole and ≥ 0: INVALID_MINUTES', () => {
  given([teamCreated(), reserved('c1', 30)])
    .when({ type: 'SettleCapacity', callId: 'c1', actualMinutes: -1 })
    .thenThrows('INVALID_MINUTES');
  given([teamCreated(), reserved('c1', 30)])
    .when({ type: 'SettleCapacity', callId: 'c1', actualMinutes: 0 })
    .then([{ type: 'CapacitySettled', data: { callId: 'c1', reservedMinutes: 30, actualMinutes: 0 } }]);
});

test('releasing returns the whole reservation of a call the log never took', () => {
  const when = given([teamCreated(600), reserved('c1', 30)]).when({ type: 'ReleaseCapacity', callId: 'c1' });
  when.then([{ type: 'CapacityReleased', data: { callId: 'c1', minutes: 30 } }]);
  assert.equal(remaining(when.stateAfter()), 600);
  const state = when.stateAfter();
  assert.equal(state.status === 'active' && state.reservations.size, 0);
});

test('a second release, or a release after a settle, does nothing', () => {
  const released = { type: 'CapacityReleased', data: { callId: 'c1', minutes: 30 } } as const;
  given([teamCreated(), reserved('c1', 30), released])
    .when({ type: 'ReleaseCapacity', callId: 'c1' })
    .thenNothing();
  const settled = { type: 'CapacitySettled', data: { callId: 'c1', reservedMinutes: 30, actualMinutes: 10 } } as const;
  given([teamCreated(), reserved('c1', 30), settled])
    .when({ type: 'ReleaseCapacity', callId: 'c1' })
    .thenNothing();
});

test('auto-recharged minutes stay with the team after a release', () => {
  const events = [teamCreated(0), autoRecharge(true, 60), reserved('c1', 5, 60)];
  assert.equal(remaining(given(events).when({ type: 'ReleaseCapacity', callId: 'c1' }).stateAfter()), 60);
});
