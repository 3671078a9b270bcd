import { test } from 'node:test';
import assert from 'node:assert/strict';
import { accepted, base, refused, refusedWith } from './helpers.ts';

test('a valid deal object is read into the canonical deal', () => {
  const { submission } = accepted({
    ...base,
    deal: { dealSize: 1200.5, revenueCollected: 300, dealDate: '2026-11-20', notes: 'Signed' },
  });
  assert.deepEqual(submission.deal, {
    dealSize: 1200.5,
    revenueCollected: 300,
    dealDate: '2026-11-20T00:00:00.000Z',
    notes: 'Signed',
  });
});

test('deal fields inside the object accept their snake_case names', () => {
  const { submission } = accepted({
    ...base,
    deal: { deal_size: 10, revenue_collected: 5, deal_date: '2026-11-20T10:00:00+01:00' },
  });
  assert.deepEqual(submission.deal, { dealSize: 10, revenueCollected: 5, dealDate: '2026-11-20T09:00:00.000Z' });
});

const flat: Array<[string, unknown, string, unknown]> = [
  ['dealSize', 99, 'dealSize', 99],
  ['deal_size', 99, 'dealSize', 99],
  ['revenueCollected', 40, 'revenueCollected', 40],
  ['revenue_collected', 40, 'revenueCollected', 40],
  ['dealDate', '2026-11-20', 'dealDate', '2026-11-20T00:00:00.000Z'],
  ['deal_date', '2026-11-20', 'dealDate', '2026-11-20T00:00:00.000Z'],
  ['dealNotes', 'Renewal', 'notes', 'Renewal'],
  ['deal_notes', 'Renewal', 'notes', 'Renewal'],
];
for (const [alias, value, key, expected] of flat) {
  test(`flat alias ${alias} is read as deal.${key}`, () => {
    assert.deepEqual(accepted({ ...base, [alias]: value }).submission.deal, { [key]: expected });
  });
}

const conflicts: Array<[Record<string, unknown>, string, string]> = [
  [{ deal: { dealSize: 100 }, dealSize: 200 }, 'deal.dealSize', 'dealSize'],
  [{ deal: { dealSize: 100 }, deal_size: 200 }, 'deal.dealSize', 'deal_size'],
  [{ deal: { deal_size: 100 }, dealSize: 200 }, 'deal.deal_size', 'dealSize'],
  [{ deal: { dealSize: 100, deal_size: 200 } }, 'deal.dealSize', 'deal.deal_size'],
  [{ deal: { revenueCollected: 1 }, revenue_collected: 2 }, 'deal.revenueCollected', 'revenue_collected'],
  [{ deal: { dealDate: '2026-11-20' }, deal_date: '2026-11-21' }, 'deal.dealDate', 'deal_date'],
  [{ deal: { notes: 'a' }, dealNotes: 'b' }, 'deal.notes', 'dealNotes'],
  [{ dealNotes: 'a', deal_notes: 'b' }, 'dealNotes', 'deal_notes'],
];
for (const [fields, a, b] of conflicts) {
  test(`400 when ${a} and ${b} differ (the error names both)`, () => {
    refusedWith({ ...base, ...fields }, [{ field: a, message: `${a} and ${b} differ; send one` }]);
  });
}

test('deal.x and flat dealX with equal values are fine, compared as numbers and instants', () => {
  const { submission } = accepted({
    ...base,
    deal: { dealSize: 1200.5, dealDate: '2026-11-20' },
    deal_size: '1200.50',
    dealDate: '2026-11-20T00:00:00Z',
  });
  assert.deepEqual(submission.deal, { dealSize: 1200.5, dealDate: '2026-11-20T00:00:00.000Z' });
});

test('amounts sent as unambiguous decimal strings are accepted', () => {
  assert.deepEqual(accepted({ ...base, deal: { dealSize: '1200.50', revenueCollected: '0' } }).submission.deal, {
    dealSize: 1200.5,
    revenueCollected: 0,
  });
});

for (const value of [
  '1,200.50',
  '1.200,50',
  '1e3',
  '$1200',
  ' 12',
  '12.',
  '.5',
  'twelve',
  true,
  [12],
  { amount: 12 },
]) {
  test(`amount ${JSON.stringify(value).slice(0, 20)} is a 400 naming the field`, () => {
    refusedWith({ ...base, deal: { dealSize: value } }, [
      { field: 'deal.dealSize', message: 'deal.dealSize must be a number or a plain decimal string like "1200.50"' },
    ]);
  });
}

test('an amount past 2^53 − 1 is a 400 naming the field: a double cannot keep it exactly, sent as a number or as a string', () => {
  const message = (field: string) =>
    `${field} must be at most 9007199254740991 (2^53 − 1): a larger amount cannot be kept exactly`;
  // "9007199254740993" reads as 9007199254740992: stored, it would be another amount.
  refusedWith({ ...base, dealSize: '9007199254740993' }, [{ field: 'dealSize', message: message('dealSize') }]);
  refusedWith({ ...base, deal: { revenueCollected: 9007199254740992 } }, [
    { field: 'deal.revenueCollected', message: message('deal.revenueCollected') },
  ]);
  // Too large for a double at all: refused for its size, not its notation.
  refusedWith({ ...base, deal: { dealSize: `1${'0'.repeat(400)}` } }, [
    { field: 'deal.dealSize', message: message('deal.dealSize') },
  ]);
  refusedWith(JSON.parse('{"transcript":"x","deal_size":1e999}'), [
    { field: 'deal_size', message: message('deal_size') },
  ]);
  refusedWith({ ...base, dealSize: `-${'9'.repeat(400)}` }, [{ field: 'dealSize', message: 'dealSize must be ≥ 0' }]);
  assert.deepEqual(
    accepted({ ...base, dealSize: '9007199254740991', revenueCollected: 9007199254740991 }).submission.deal,
    { dealSize: 9007199254740991, revenueCollected: 9007199254740991 },
  );
});

test('amounts must be ≥ 0', () => {
  refusedWith({ ...base, revenue_collected: -0.01 }, [
    { field: 'revenue_collected', message: 'revenue_collected must be ≥ 0' },
  ]);
  refusedWith({ ...base, deal: { dealSize: '-5' } }, [
    { field: 'deal.dealSize', message: 'deal.dealSize must be ≥ 0' },
  ]);
});

test('dealDate must be ISO 8601; date-only means midnight UTC', () => {
  assert.equal(accepted({ ...base, dealDate: '2026-01-31' }).submission.deal?.dealDate, '2026-01-31T00:00:00.000Z');
  const [error] = refused({ ...base, deal: { dealDate: '31/01/2026' } });
  assert.equal(error?.field, 'deal.dealDate');
  assert.match(error?.message ?? '', /ISO 8601/);
});

test('deal must be an object', () => {
  for (const deal of ['big', 12, [1]])
    refusedWith({ ...base, deal }, [{ field: 'deal', message: 'deal must be an object' }]);
});

test('no deal field sent, or only empty ones: no deal', () => {
  assert.equal('deal' in accepted(base).submission, false);
  assert.equal('deal' in accepted({ ...base, deal: {} }).submission, false);
  assert.equal('deal' in accepted({ ...base, deal: { dealSize: null, notes: '' }, dealNotes: null }).submission, false);
});

test('an invalid deal refuses the whole submission (no partial deal write)', () => {
  refusedWith({ ...base, deal: { dealSize: 100, revenueCollected: -1 } }, [
    { field: 'deal.revenueCollected', message: 'deal.revenueCollected must be ≥ 0' },
  ]);
});
