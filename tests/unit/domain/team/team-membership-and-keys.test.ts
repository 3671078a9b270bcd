import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { TeamCommand } from '../../../../shared/domain/team/team-commands.ts';
import { given, hash, keyIssued, later, memberAdded, now, teamCreated } from './fixtures.ts';

const createTeam: TeamCommand = {
  type: 'CreateTeam',
  teamId: 't1',
  name: ' Acme Sales ',
  owner: { name: 'Olivia Owner', email: 'Olivia@Acme.io ' },
  capacityMinutes: 600,
  now,
};

test('a team is created once, with its owner and initial capacity in minutes', () => {
  given([])
    .when(createTeam)
    .then([teamCreated(600)]);
});

test('creating a team that exists is refused: TEAM_ALREADY_EXISTS', () => {
  given([teamCreated()]).when(createTeam).thenThrows('TEAM_ALREADY_EXISTS');
});

test('a team needs a name, an owner with an e-mail, and whole minutes ≥ 0', () => {
  given([])
    .when({ ...createTeam, name: '  ' })
    .thenThrows('INVALID_TEAM_INPUT');
  given([])
    .when({ ...createTeam, owner: { name: 'O', email: 'not-an-email' } })
    .thenThrows('INVALID_TEAM_INPUT');
  given([])
    .when({ ...createTeam, capacityMinutes: -1 })
    .thenThrows('INVALID_MINUTES');
  given([])
    .when({ ...createTeam, capacityMinutes: 1.5 })
    .thenThrows('INVALID_MINUTES');
  given([])
    .when({ ...createTeam, capacityMinutes: 0 })
    .then([teamCreated(0)]);
});

const onExistingTeamOnly: TeamCommand[] = [
  { type: 'AddMember', memberId: 'm1', email: 'a@acme.io', name: 'A' },
  { type: 'IssueApiKey', keyId: 'k1', label: 'l', keyHash: hash('a'), now },
  { type: 'RevokeApiKey', keyId: 'k1', now },
  { type: 'AddCapacity', minutes: 60 },
  { type: 'SetAutoRecharge', enabled: true, blockMinutes: 60 },
  { type: 'ReserveCapacity', callId: 'c1', minutes: 5 },
  { type: 'SettleCapacity', callId: 'c1', actualMinutes: 5 },
  { type: 'ReleaseCapacity', callId: 'c1' },
];
for (const command of onExistingTeamOnly) {
  test(`${command.type} on a team that does not exist is refused: TEAM_NOT_FOUND`, () => {
    given([]).when(command).thenThrows('TEAM_NOT_FOUND');
  });
}

test('a member is added with the e-mail as given', () => {
  given([teamCreated()])
    .when({ type: 'AddMember', memberId: 'm1', email: 'Dana.Reyes@Acme.io', name: 'Dana Reyes' })
    .then([memberAdded('m1', 'Dana.Reyes@Acme.io', 'Dana Reyes')]);
});

test('member e-mails are unique ignoring case: MEMBER_EMAIL_TAKEN', () => {
  given([teamCreated(), memberAdded('m1', 'Dana.Reyes@Acme.io', 'Dana')])
    .when({ type: 'AddMember', memberId: 'm2', email: 'dana.reyes@ACME.io', name: 'Dana again' })
    .thenThrows('MEMBER_EMAIL_TAKEN');
});

test("a member cannot take the owner's e-mail (a call must attribute to one person)", () => {
  given([teamCreated()])
    .when({ type: 'AddMember', memberId: 'm1', email: 'olivia@acme.io', name: 'O' })
    .thenThrows('MEMBER_EMAIL_TAKEN');
});

test('a member id is used once: MEMBER_ALREADY_EXISTS; a member needs an e-mail and a name', () => {
  const team = [teamCreated(), memberAdded('m1', 'a@acme.io', 'A')];
  given(team)
    .when({ type: 'AddMember', memberId: 'm1', email: 'b@acme.io', name: 'B' })
    .thenThrows('MEMBER_ALREADY_EXISTS');
  given(team).when({ type: 'AddMember', memberId: 'm2', email: 'b', name: 'B' }).thenThrows('INVALID_TEAM_INPUT');
  given(team)
    .when({ type: 'AddMember', memberId: 'm2', email: 'b@acme.io', name: '' })
    .thenThrows('INVALID_TEAM_INPUT');
});

test('an API key is issued as its hash only', () => {
  given([teamCreated()])
    .when({ type: 'IssueApiKey', keyId: 'k1', label: ' Aircall sync ', keyHash: hash('a'), now })
    .then([keyIssued('k1')]);
});

test('something that is not a 64-hex hash (e.g. the key itself) is refused: INVALID_TEAM_INPUT', () => {
  given([teamCreated()])
    .when({ type: 'IssueApiKey', keyId: 'k1', label: 'l', keyHash: 'pk_0000000000000000000000000000000000', now })
    .thenThrows('INVALID_TEAM_INPUT');
});

test('a key id or a key hash is issued once: API_KEY_ALREADY_EXISTS', () => {
  given([teamCreated(), keyIssued('k1', hash('a'))])
    .when({ type: 'IssueApiKey', keyId: 'k1', label: 'l', keyHash: hash('b'), now })
    .thenThrows('API_KEY_ALREADY_EXISTS');
  given([teamCreated(), keyIssued('k1', hash('a'))])
    .when({ type: 'IssueApiKey', keyId: 'k2', label: 'l', keyHash: hash('a'), now })
    .thenThrows('API_KEY_ALREADY_EXISTS');
});

test('an existing, unrevoked key is revoked', () => {
  const after = given([teamCreated(), keyIssued('k1')]).when({ type: 'RevokeApiKey', keyId: 'k1', now: later });
  after.then([{ type: 'ApiKeyRevoked', data: { keyId: 'k1', at: later } }]);
  const state = after.stateAfter();
  assert.equal(state.status === 'active' && state.apiKeys.get('k1')?.revokedAt, later);
});

test('revoking an unknown key is refused: API_KEY_NOT_FOUND (even an id like "toString")', () => {
  given([teamCreated(), keyIssued('k1')])
    .when({ type: 'RevokeApiKey', keyId: 'k2', now })
    .thenThrows('API_KEY_NOT_FOUND');
  given([teamCreated()]).when({ type: 'RevokeApiKey', keyId: 'toString', now }).thenThrows('API_KEY_NOT_FOUND');
});

test('revoking a revoked key is refused: API_KEY_ALREADY_REVOKED', () => {
  given([teamCreated(), keyIssued('k1'), { type: 'ApiKeyRevoked', data: { keyId: 'k1', at: now } }])
    .when({ type: 'RevokeApiKey', keyId: 'k1', now: later })
    .thenThrows('API_KEY_ALREADY_REVOKED');
});
