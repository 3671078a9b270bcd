/**
 * `nonBlank` and its three callers, each keeping its own rule: the title trims the rep's name, the
 * history row and the deal record keep it as sent and write null for a blank one.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { evolveHistoryRow } from '../../../shared/domain/call/call-history.ts';
import type { CallSubmittedData } from '../../../shared/domain/call/call-submitted.ts';
import { dealRecordOf } from '../../../shared/domain/call/deal-record.ts';
import { displayedTitle, genericTitle } from '../../../shared/domain/call/title.ts';
import { nonBlank } from '../../../shared/domain/non-blank.ts';

const T0 = '2026-11-20T10:00:00.000Z';

test('nonBlank: the text as written when it has more than white space; undefined otherwise', () => {
  assert.equal(nonBlank('Dana'), 'Dana');
  assert.equal(nonBlank('  Dana Reyes \n'), '  Dana Reyes \n', 'not trimmed');
  for (const blank of [undefined, '', ' ', '\t\n ', '\u00a0\u2003', '\u3000\u2028'])
    assert.equal(nonBlank(blank), undefined, JSON.stringify(blank));
  // Zero-width characters are not white space: U+FEFF is kept like U+200B, though trim() strips it.
  for (const zeroWidth of ['\u200b', '\ufeff', ' \ufeff '])
    assert.equal(nonBlank(zeroWidth), zeroWidth, JSON.stringify(zeroWidth));
});

test('the title trims white space but keeps U+FEFF, as the normaliser does', () => {
  assert.equal(
    displayedTitle({ aiTitleEnabled: false, callTitle: ' \ufeffAcme\ufeff\n', callDate: T0 }),
    '\ufeffAcme\ufeff',
  );
  assert.equal(genericTitle({ repName: '\ufeff', callDate: T0 }), 'Call with \ufeff on 2026-11-20');
});

test('the title trims the rep name and e-mail, and passes over blank ones', () => {
  assert.equal(genericTitle({ repName: '  Dana Reyes  ', callDate: T0 }), 'Call with Dana Reyes on 2026-11-20');
  assert.equal(
    genericTitle({ repName: ' \t', repEmail: ' dana@acme.test ', callDate: T0 }),
    'Call with dana@acme.test on 2026-11-20',
  );
  assert.equal(genericTitle({ repName: ' ', repEmail: '', callDate: T0 }), 'Call with unknown rep on 2026-11-20');
  assert.equal(displayedTitle({ aiTitleEnabled: true, aiTitle: '  Pricing  ', callDate: T0 }), 'Pricing');
  assert.equal(
    displayedTitle({ aiTitleEnabled: false, callTitle: '   ', repName: 'Dana', callDate: T0 }),
    'Call with Dana on 2026-11-20',
  );
});

const submitted = (repName: string | undefined, repEmail: string | undefined): CallSubmittedData => ({
  callId: 'c1',
  teamId: 't1',
  keyId: 'k1',
  submittedAt: T0,
  submission: {
    aiTitleEnabled: false,
    tags: [],
    metadata: {},
    audioUrl: 'https://a.test/x.wav',
    repName,
    repEmail,
    deal: { dealSize: 1 },
  },
  attributedTo: { kind: 'owner', email: 'olive@acme.test', name: 'Olive Owner' },
  capacity: { reservedMinutes: 1, autoRechargedMinutes: 0 },
  warnings: [],
});

test('the history row keeps the rep name and e-mail as sent, and null for blank ones (its title trims)', () => {
  const rowOf = (data: CallSubmittedData) =>
    evolveHistoryRow(undefined, {
      id: 'e0',
      streamId: 'call-c1',
      revision: 0,
      position: 1n,
      type: 'CallSubmitted',
      data: JSON.parse(JSON.stringify(data)),
      metadata: {},
      recordedAt: new Date(T0),
    })!;
  const row = rowOf(submitted('  Dana Reyes ', ' '));
  assert.deepEqual(
    [row.repName, row.repEmail, row.title],
    ['  Dana Reyes ', null, 'Call with Dana Reyes on 2026-11-20'],
  );
  const none = rowOf(submitted(undefined, '\t'));
  assert.deepEqual([none.repName, none.repEmail], [null, null]);
});

test('the deal record keeps the rep name and e-mail as sent, and null for blank ones', () => {
  const event = { revision: 3, data: { deal: { dealSize: 1 }, at: T0 } };
  const record = dealRecordOf(submitted(' Dana ', 'dana@acme.test '), event);
  assert.deepEqual([record.repName, record.repEmail], [' Dana ', 'dana@acme.test ']);
  const blank = dealRecordOf(submitted('  ', undefined), event);
  assert.deepEqual([blank.repName, blank.repEmail], [null, null]);
});
