import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canonicalIsoDate } from '../../../../shared/domain/submission/iso-date.ts';

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
  '',
  '1732060800',
];
for (const input of refused) {
  test(`not an ISO 8601 date: ${JSON.stringify(input)}`, () => assert.equal(canonicalIsoDate(input), undefined));
}
