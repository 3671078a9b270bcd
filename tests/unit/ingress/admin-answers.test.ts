/**
 * The admin API's refusals change nothing and name the field and its rule: a capacity change is
 * stored whole or refused whole (a refused one can be sent again, corrected, without adding its
 * hours twice), and every 400 names the request's field, an unknown one included. Text no backend
 * can store (U+0000, an unpaired surrogate) is refused in any request's body, query or path.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type EmbeddedIngress, openEmbeddedIngress } from '../../support/embedded-ingress.ts';
import type { Harness } from '../../support/ingress-harness.ts';

interface Problem {
  code: string;
  status: number;
  detail: string;
  errors?: { field: string; message: string }[];
}

describe('refusals change nothing and name the field: the admin API, and text no backend can store in any request', () => {
  let embedded: EmbeddedIngress;
  let h: Harness;

  before(async () => {
    embedded = await openEmbeddedIngress();
    h = embedded.h;
  });
  after(() => embedded.close());

  const capacityOf = async (teamId: string) => {
    const team = (await h.admin('GET', `/api/admin/teams/${teamId}`)).json<{
      capacity: { remainingMinutes: number; autoRecharge: { enabled: boolean; blockMinutes: number } };
    }>();
    return team.capacity;
  };

  test('a capacity change refused for its auto-recharge part adds no hours either; sent again corrected, it adds them once', async () => {
    const { teamId } = await h.team({ capacityHours: 1 });
    const refused = await h.admin('POST', `/api/admin/teams/${teamId}/capacity`, {
      addHours: 10,
      autoRecharge: { enabled: true },
    });
    assert.equal(refused.statusCode, 400, refused.body);
    const problem = refused.json<Problem>();
    assert.equal(problem.code, 'VALIDATION_FAILED');
    assert.deepEqual(
      problem.errors?.map((e) => e.field),
      ['autoRecharge.hours'],
    );
    assert.match(problem.errors?.[0]?.message ?? '', /required to enable auto-recharge/);
    assert.equal((await capacityOf(teamId)).remainingMinutes, 60, 'nothing was added');

    const tooSmall = await h.admin('POST', `/api/admin/teams/${teamId}/capacity`, {
      addHours: 10,
      autoRecharge: { enabled: true, hours: 0.001 },
    });
    assert.equal(tooSmall.statusCode, 400, tooSmall.body);
    assert.deepEqual(
      tooSmall.json<Problem>().errors?.map((e) => [e.field, /rounds to 0/.test(e.message)]),
      [['autoRecharge.hours', true]],
    );
    assert.equal((await capacityOf(teamId)).remainingMinutes, 60, 'nothing was added');

    const corrected = await h.admin('POST', `/api/admin/teams/${teamId}/capacity`, {
      addHours: 10,
      autoRecharge: { enabled: true, hours: 2 },
    });
    assert.equal(corrected.statusCode, 200, corrected.body);
    assert.deepEqual(await capacityOf(teamId), {
      remainingMinutes: 660,
      autoRecharge: { enabled: true, blockMinutes: 120 },
      reservedCalls: 0,
    });
  });

  test('hours that round to no whole minute are refused naming addHours', async () => {
    const { teamId } = await h.team({ capacityHours: 1 });
    const refused = await h.admin('POST', `/api/admin/teams/${teamId}/capacity`, { addHours: 0.001 });
    assert.equal(refused.statusCode, 400, refused.body);
    assert.deepEqual(
      refused.json<Problem>().errors?.map((e) => e.field),
      ['addHours'],
    );
    assert.equal((await capacityOf(teamId)).remainingMinutes, 60);
  });

  test('an unknown field is named, with its rule', async () => {
    const created = await h.admin('POST', '/api/admin/teams', {
      name: 'Acme',
      ownerEmail: 'owner@acme.test',
      capacity_hours: 10,
    });
    assert.equal(created.statusCode, 400, created.body);
    assert.deepEqual(created.json<Problem>().errors, [
      { field: 'capacity_hours', message: 'is not a field of this request' },
    ]);
    const { teamId } = await h.team();
    const nested = await h.admin('POST', `/api/admin/teams/${teamId}/capacity`, {
      autoRecharge: { enabled: true, hours: 1, block_hours: 1 },
    });
    assert.deepEqual(nested.json<Problem>().errors, [
      { field: 'autoRecharge.block_hours', message: 'is not a field of this request' },
    ]);
  });

  test('a blank name is refused naming its field', async () => {
    const team = await h.admin('POST', '/api/admin/teams', { name: '   ', ownerEmail: 'owner@acme.test' });
    assert.equal(team.statusCode, 400, team.body);
    assert.deepEqual(
      team.json<Problem>().errors?.map((e) => [e.field, e.message]),
      [['name', 'must not be blank']],
    );
    const owner = await h.admin('POST', '/api/admin/teams', {
      name: 'Acme',
      ownerEmail: 'owner@acme.test',
      ownerName: '\t',
    });
    assert.deepEqual(
      owner.json<Problem>().errors?.map((e) => e.field),
      ['ownerName'],
    );
    const { teamId } = await h.team();
    const member = await h.admin('POST', `/api/admin/teams/${teamId}/members`, { email: 'rep@acme.test', name: ' ' });
    assert.equal(member.statusCode, 400, member.body);
    assert.deepEqual(
      member.json<Problem>().errors?.map((e) => e.field),
      ['name'],
    );
  });

  test('U+0000 or an unpaired surrogate in an admin body, a query or a path is a 400 naming where it is', async () => {
    const team = await h.admin('POST', '/api/admin/teams', { name: 'Acme\u0000Corp', ownerEmail: 'owner@acme.test' });
    assert.equal(team.statusCode, 400, team.body);
    assert.deepEqual(
      team.json<Problem>().errors?.map((e) => e.field),
      ['name'],
    );
    const { teamId, key } = await h.team();
    const label = await h.admin('POST', `/api/admin/teams/${teamId}/keys`, { label: 'bad \ud800 label' });
    assert.equal(label.statusCode, 400, label.body);
    assert.match(label.json<Problem>().errors?.[0]?.message ?? '', /unpaired surrogate U\+D800 at index 4/);

    const search = await h.ingress.app.inject({
      method: 'GET',
      url: '/api/calls?search=a%00b',
      headers: { 'x-api-key': key },
    });
    assert.equal(search.statusCode, 400, search.body);
    assert.deepEqual(
      search.json<Problem>().errors?.map((e) => e.field),
      ['search'],
    );
    const path = await h.admin('GET', `/api/admin/teams/a%00b`);
    assert.equal(path.statusCode, 400, path.body);
    assert.deepEqual(
      path.json<Problem>().errors?.map((e) => e.field),
      ['teamId'],
    );
  });
});
