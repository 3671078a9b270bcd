/**
 * Every text field has a bound (README, Limits and fairness), counted in characters (code
 * points): exactly the limit passes, one over is a 400 naming the field and the rule. Dates stay
 * within years 0001–9999 once their offset is applied.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { normaliseSubmission } from '../../../../shared/domain/submission/normalise-submission.ts';

const TRANSCRIPT = 'Rep: hello\nDana: hi';
const EMOJI = '😀'; // one character, two UTF-16 units, four UTF-8 bytes

const errorsOf = (body: Record<string, unknown>) => {
  const result = normaliseSubmission({ transcript: TRANSCRIPT, ...body });
  return result.ok ? [] : result.errors;
};

const bounds: Array<{ field: string; limit: number; value: (n: number) => unknown; rule: RegExp }> = [
  { field: 'repName', limit: 200, value: (n) => EMOJI.repeat(n), rule: /repName at most 200 characters/ },
  { field: 'rep_name', limit: 200, value: (n) => 'a'.repeat(n), rule: /rep_name at most 200 characters/ },
  { field: 'callTitle', limit: 500, value: (n) => EMOJI.repeat(n), rule: /callTitle at most 500 characters/ },
  {
    field: 'audioUrl',
    limit: 2048,
    value: (n) => `https://a.example/${'x'.repeat(n - 'https://a.example/'.length)}`,
    rule: /audioUrl at most 2048 characters/,
  },
  {
    field: 'audio_url',
    limit: 2048,
    value: (n) => `https://a.example/${EMOJI.repeat(n - 'https://a.example/'.length)}`,
    rule: /audio_url at most 2048 characters/,
  },
];

for (const { field, limit, value, rule } of bounds) {
  test(`${field}: ${limit} characters pass, ${limit + 1} are a 400 naming the field`, () => {
    assert.deepEqual(errorsOf({ [field]: value(limit) }), []);
    const errors = errorsOf({ [field]: value(limit + 1) });
    assert.equal(errors.length, 1, JSON.stringify(errors));
    assert.equal(errors[0]!.field, field);
    assert.match(errors[0]!.message, rule);
  });
}

test('metadata keys up to 100 characters and string values up to 1000 pass; one more is a 400 naming the key', () => {
  assert.deepEqual(errorsOf({ metadata: { [EMOJI.repeat(100)]: EMOJI.repeat(1000) } }), []);
  const longKey = errorsOf({ metadata: { ['k'.repeat(101)]: 1 } });
  assert.equal(longKey.length, 1);
  assert.match(longKey[0]!.field, /^metadata\.k{100}…$/);
  assert.match(longKey[0]!.message, /keys at most 100 characters/);
  const longValue = errorsOf({ metadata: { source: EMOJI.repeat(1001) } });
  assert.deepEqual(longValue, [{ field: 'metadata.source', message: 'metadata values at most 1000 characters' }]);
});

test('a metadata object of huge keys and values lists at most 20 errors', () => {
  const metadata = Object.fromEntries(
    Array.from({ length: 20 }, (_, i) => [`${i}${'k'.repeat(200)}`, 'v'.repeat(5000)]),
  );
  const errors = errorsOf({ metadata });
  assert.equal(errors.length, 20);
});

test('dates must stay within years 0001–9999 once the offset is applied', () => {
  assert.deepEqual(errorsOf({ callDate: '0001-01-01' }), []);
  assert.deepEqual(errorsOf({ callDate: '9999-12-31T23:59:59Z' }), []);
  for (const callDate of ['9999-12-31T23:59:59-23:59', '0001-01-01T00:00:00+01:00']) {
    const errors = errorsOf({ callDate });
    assert.equal(errors.length, 1, callDate);
    assert.equal(errors[0]!.field, 'callDate');
  }
  assert.equal(errorsOf({ deal: { dealDate: '9999-12-31T23:59:59-23:59' } })[0]!.field, 'deal.dealDate');
});
