/** The one reading of `Authorization: Bearer <token>`, shared by API keys, the admin API and /metrics. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bearerToken } from '../../../shared/security/bearer-token.ts';

test('the token of a Bearer header: scheme in any case, white space around the token allowed', () => {
  assert.equal(bearerToken('Bearer pk_abc'), 'pk_abc');
  assert.equal(bearerToken('bearer pk_abc'), 'pk_abc');
  assert.equal(bearerToken('BEARER \t pk_abc  '), 'pk_abc');
});

test('only spaces and tabs are white space around it: a token with U+00A0 or another space is not the token', () => {
  assert.equal(bearerToken('Bearer pk_abc\u00a0'), 'pk_abc\u00a0');
  assert.equal(bearerToken('Bearer\u00a0pk_abc'), undefined);
  assert.equal(bearerToken('Bearer pk_abc\u2003'), 'pk_abc\u2003');
});

test('no token: another scheme, no token, two tokens, a missing or repeated header', () => {
  for (const header of [
    'Basic dXNlcjpwYXNz',
    'Bearer',
    'Bearer ',
    'Bearer a b',
    ' Bearer a',
    'Bearerpk_abc',
    'pk_abc',
    '',
  ]) {
    assert.equal(bearerToken(header), undefined, JSON.stringify(header));
  }
  assert.equal(bearerToken(undefined), undefined);
  assert.equal(bearerToken(['Bearer a', 'Bearer b']), undefined);
});
