/**
 * GET /api/calls refuses a query it cannot answer as asked with one 400 entry per parameter, naming
 * the parameter and the rule. On the embedded backends, through `inject`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type EmbeddedIngress, openEmbeddedIngress } from '../../support/embedded-ingress.ts';

interface Problem {
  code: string;
  errors?: { field: string; message: string }[];
}

describe('GET /api/calls: a query it refuses is one 400 entry naming the parameter and the rule', () => {
  let embedded: EmbeddedIngress;
  let key: string;

  before(async () => {
    embedded = await openEmbeddedIngress();
    ({ key } = await embedded.h.team());
  });
  after(() => embedded.close());

  const list = async (query: string) => {
    const res = await embedded.h.ingress.app.inject({
      method: 'GET',
      url: `/api/calls?${query}`,
      headers: { 'x-api-key': key },
    });
    return { status: res.statusCode, body: res.json<Problem>() };
  };

  test('400 naming the parameter and the values it may take, or its limit; one entry each', async () => {
    const long = 'a'.repeat(51);
    for (const [query, errors] of [
      ['status=bogus', [{ field: 'status', message: 'must be one of pending, completed, failed' }]],
      ['order=newest', [{ field: 'order', message: 'must be one of created_desc, updated_asc' }]],
      [`tag=${long}`, [{ field: 'tag[0]', message: 'at most 50 characters' }]],
      [`tag=demo&tag=${long}`, [{ field: 'tag[1]', message: 'at most 50 characters' }]],
      [Array.from({ length: 21 }, (_, i) => `tag=t${i}`).join('&'), [{ field: 'tag', message: 'at most 20 values' }]],
      [`search=${'a'.repeat(501)}`, [{ field: 'search', message: 'at most 500 characters' }]],
      ['limit=0', [{ field: 'limit', message: 'at least 1' }]],
      ['limit=101', [{ field: 'limit', message: 'at most 100' }]],
      ['limit=abc', [{ field: 'limit', message: 'must be an integer' }]],
      ['status=pending&status=failed', [{ field: 'status', message: 'must be given once' }]],
      // A parameter it does not know (a mistyped filter) would list every call unfiltered.
      ['tags=demo', [{ field: 'tags', message: 'is not a field of this request' }]],
      ['rep_email=dana%40acme.test', [{ field: 'rep_email', message: 'is not a field of this request' }]],
      ['limit=1&limit=2', [{ field: 'limit', message: 'must be given once' }]],
    ] as const) {
      const { status, body } = await list(query);
      assert.equal(status, 400, query);
      assert.equal(body.code, 'VALIDATION_FAILED', query);
      assert.deepEqual(body.errors, errors, query);
    }
  });

  test('the same for the other routes: a webhook delivery status outside its values', async () => {
    const res = await embedded.h.admin('GET', '/api/admin/teams/t/webhooks/w/deliveries?status=bogus');
    assert.equal(res.statusCode, 400, res.body);
    assert.deepEqual(res.json<Problem>().errors, [
      { field: 'status', message: 'must be one of pending, delivered, failed' },
    ]);
  });

  test('400 when a tag is blank (as the ingest refuses a blank tag): it would otherwise list every call', async () => {
    for (const query of ['tag=', 'tag=%20', 'tag=demo&tag=%C2%A0%09']) {
      const { status, body } = await list(query);
      assert.equal(status, 400, query);
      assert.equal(body.code, 'VALIDATION_FAILED');
      assert.equal(body.errors?.length, 1, `${query}: ${JSON.stringify(body.errors)}`);
      assert.equal(body.errors[0]!.field, 'tag', query);
      assert.match(body.errors[0]!.message, /must not be blank/, query);
    }
  });
});
