import { test } from 'node:test';
import assert from 'node:assert/strict';
import { activeKeyByHash, matchMember } from '../../../../shared/domain/team/match-member.ts';
import type { ActiveTeam } from '../../../../shared/domain/team/team-state.ts';
import { given, hash, keyIssued, memberAdded, now, teamCreated } from './fixtures.ts';

const team = (): ActiveTeam => {
  const state = given([
    teamCreated(),
    memberAdded('m1', 'Dana.Reyes@Acme.io', 'Dana Reyes'),
    keyIssued('k1', hash('a')),
    keyIssued('k2', hash('b')),
    { type: 'ApiKeyRevoked', data: { keyId: 'k2', at: now } },
  ]).state();
  assert.equal(state.status, 'active');
  return state;
};

test('repEmail matches a member ignoring case and spaces; the stored spelling is returned', () => {
  assert.deepEqual(matchMember(team(), ' dana.reyes@ACME.IO'), {
    kind: 'member',
    memberId: 'm1',
    email: 'Dana.Reyes@Acme.io',
    name: 'Dana Reyes',
  });
});

test('when no rep matches, tags and notes are attached to the team owner', () => {
  const owner = { kind: 'owner', email: 'Olivia@Acme.io', name: 'Olivia Owner' };
  assert.deepEqual(matchMember(team(), 'someone@else.io'), owner);
  assert.deepEqual(matchMember(team(), undefined), owner);
  assert.deepEqual(matchMember(team(), 'olivia@acme.io'), owner);
});

test('a key hash finds its key only while the key is not revoked', () => {
  assert.deepEqual(activeKeyByHash(team(), hash('a')), { keyId: 'k1', label: 'Aircall sync' });
  assert.equal(activeKeyByHash(team(), hash('b')), undefined);
  assert.equal(activeKeyByHash(team(), hash('c')), undefined);
});
