import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalIsoDate } from '../../../../shared/domain/submission/iso-date.ts';
import { normaliseSubmission } from '../../../../shared/domain/submission/normalise-submission.ts';

const accepted: Array<[string, string]> = [
  ['2026-11-20', '2026-11-20T00:00:00.000Z'],
  ['2026-11-20T14:30Z', '2026-11-20T14:30:00.000Z'],
  ['2026-11-20T14:30:15Z', '2026-11-20T14:30:15.000Z'],
  ['2026-11-20T14:30:15.123456Z', '2026-11-20T14:30:15.123Z'],
  ['2026-11-20T14:30:00+02:00', '2026-11-20T12:30:00.000Z'],
  ['2026-11-20T14:30:00-0530', '2026-11-20T20:00:00.000Z'],
  ['2026-11-20T23:30:00-05', '2026-11-21T04:30:00.000Z'],
  ['2026-11-20T14:30:00', '2026-11-20T14:30:00.000Z'], // no offset: read as UTC, not server-local
  ['2024-02-29', '2024-02-29T00:00:00.000Z'],
  ['0050-01-01', '0050-01-01T00:00:00.000Z'], // not shifted to 1950 as Date.UTC would
  // RFC 3339 allows lower-case t and z; ISO 8601's own decimal sign is the comma (decision 0007).
  ['2026-01-01t10:00:00z', '2026-01-01T10:00:00.000Z'],
  ['2026-01-01t10:00:00+01:00', '2026-01-01T09:00:00.000Z'],
  ['2026-01-01T10:00:00,5Z', '2026-01-01T10:00:00.500Z'],
  ['2026-01-01t10:00:00,123456z', '2026-01-01T10:00:00.123Z'],
];
for (const [input, canonical] of accepted) {
  test(`ISO 8601 ${input} is ${canonical}`, () => assert.equal(canonicalIsoDate(input), canonical));
}

const refused = [
  '2026-02-29',
  '2026-13-01',
  '2026-00-10',
  '2026-04-31',
  '2026-11-20T24:00:00Z',
  '2026-11-20T12:60Z',
  '2026-11-20T12:00:61Z',
  '2026-11-20T12:00:00+24:00',
  '20261120',
  '2026-11-20 14:30:00Z',
  'Nov 20 2026',
  '2026-11-20T14Z',
  '2026-01-01T10Z',
  '20260101',
  '20260101T100000Z',
  '2026-01-01T10:00:00.Z',
  '2026-01-01T10:00:00,Z',
  '2026-01-01T10:00:00.5,5Z',
  '2026-01-01 t10:00Z',
  '2026-01-01T10:00:00ZZ',
  '',
  '1732060800',
];
for (const input of refused) {
  test(`not an ISO 8601 date: ${JSON.stringify(input)}`, () => assert.equal(canonicalIsoDate(input), undefined));
}

test('a date refused names the forms taken, with an example, under the name the caller sent', () => {
  const cases: Array<[string, string]> = [
    ['callDate', '20260101'],
    ['call_date', '2026-01-01T10Z'],
    ['dealDate', '2026-02-30'],
    ['deal_date', '10000-01-01'],
  ];
  for (const [field, value] of cases) {
    const result = normaliseSubmission({ transcript: 'Hello', [field]: value });
    assert.ok(!result.ok);
    assert.equal(result.errors.length, 1, JSON.stringify(result.errors));
    assert.equal(result.errors[0]!.field, field);
    assert.equal(
      result.errors[0]!.message,
      `${field} must be an ISO 8601 date such as 2026-01-01 or 2026-01-01T10:00:00Z: YYYY-MM-DD, optionally followed by T and hh:mm, hh:mm:ss or hh:mm:ss.fff and an offset (Z, ±hh:mm, ±hhmm or ±hh; without one, UTC); a real date and time, years 0001–9999`,
    );
  }
});
