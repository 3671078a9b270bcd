import { test } from 'node:test';
import assert from 'node:assert/strict';
import { accepted, base, refused, refusedWith } from './helpers.ts';
import { findUnstorable, MAX_BODY_DEPTH } from '../../../../shared/domain/submission/storable-text.ts';

const NUL_RULE = 'text may not contain U+0000 or unpaired surrogates';
const nul = (index: number) => `contains U+0000 at index ${index}; ${NUL_RULE}`;
const lone = (hex: string, index: number) => `contains an unpaired surrogate U+${hex} at index ${index}; ${NUL_RULE}`;

test('the reported NUL reproduction: notes "x\\u0000y" is a 400 naming notes and the rule', () => {
  refusedWith({ transcript: 'Rep: hello\nDana: hi', notes: 'x\u0000y' }, [{ field: 'notes', message: nul(1) }]);
});

test('the reported lone-surrogate reproduction: repName "Sam \\ud800 X" is a 400 naming repName', () => {
  refusedWith({ transcript: 'Rep: hi\nDana: ok', repName: 'Sam \ud800 X' }, [
    { field: 'repName', message: lone('D800', 4) },
  ]);
});

test('a reversed pair (low half before high half) is two unpaired surrogates; the first is named', () => {
  refusedWith({ ...base, callTitle: 'ab\udc00\ud800' }, [{ field: 'callTitle', message: lone('DC00', 2) }]);
});

test('a high half at the very end, or a low half at the very start, is unpaired', () => {
  refusedWith({ ...base, rep_name: 'Sam😀\ud83d' }, [{ field: 'rep_name', message: lone('D83D', 4) }]);
  refusedWith({ ...base, call_title: '\ude00Sam' }, [{ field: 'call_title', message: lone('DE00', 0) }]);
});

test('the index counts code points: an emoji before the NUL counts once', () => {
  assert.deepEqual(findUnstorable('😀😀\u0000'), { codePoint: 0, index: 2 });
  assert.equal(findUnstorable('😀 well-formed \t\n text'), undefined);
});

test('every top-level string field is checked, under the name the caller sent', () => {
  const fields = [
    'transcript',
    'repName',
    'rep_name',
    'repEmail',
    'callTitle',
    'call_title',
    'callDate',
    'notes',
    'callNotes',
    'call_notes',
    'audioUrl',
    'durationUnit',
    'dealNotes',
    'deal_notes',
    'dealDate',
    'dealSize',
  ];
  for (const field of fields) {
    const errors = refused({ ...base, [field]: 'a\u0000' });
    assert.ok(
      errors.some((e) => e.field === field && e.message === nul(1)),
      `${field}: ${JSON.stringify(errors)}`,
    );
  }
});

test('tags, deal fields and metadata keys and values are checked at any depth', () => {
  const errors = refused({
    ...base,
    tags: ['ok', 'fine', 'x\u0000'],
    call_tags: ['ok', 'fine', 'x\u0000'],
    deal: { notes: '\ud800', dealDate: '2026-11-20\u0000' },
    metadata: { crm: { note: 'a\u0000' }, 'k\u0000ey': 'v', source: '\udfff' },
    extra: [[{ deep: ['\u0000'] }]],
  });
  const named = (field: string) => errors.find((e) => e.field === field)?.message;
  assert.equal(named('tags[2]'), nul(1));
  assert.equal(named('call_tags[2]'), nul(1));
  assert.equal(named('deal.notes'), lone('D800', 0));
  assert.equal(named('deal.dealDate'), nul(10));
  assert.equal(named('metadata.crm.note'), nul(1));
  assert.equal(named('metadata.k\\u0000ey'), `the key ${nul(1)}`, 'a key is named with the character escaped');
  assert.equal(named('metadata.source'), lone('DFFF', 0));
  assert.equal(named('extra[0][0].deep[0]'), nul(0), 'unknown fields are checked too');
});

test('a key with an unpaired surrogate is named escaped, and a long key is cut on a character boundary', () => {
  const errors = refused({ ...base, metadata: { ['😀'.repeat(150) + '\u0000']: 1 } });
  const field = errors[0]!.field;
  assert.equal(field, `metadata.${'😀'.repeat(100)}…`);
  assert.ok(!/[\ud800-\udfff]/u.test(field), 'no half of a pair in the field name');
});

test('everything else is accepted and stored as sent: controls, C1, non-characters, zero-width and bidi', () => {
  const text =
    'Rep: a\tb\r\n\u0001\u001f\u007f\u0085\u009f \ufffe\uffff\u{1fffe}\u{10ffff} \u200b\u200c\u200d\ufeff \u202e\u2066\u2069 😀👩‍👩‍👧';
  const { submission, warnings } = accepted({
    transcript: text,
    repName: `Sam ${text}`,
    notes: text,
    tags: [text.slice(5, 40)],
    metadata: { [text]: text },
  });
  assert.equal(submission.transcript?.text, text);
  assert.equal(submission.repName, `Sam ${text}`.trim());
  assert.equal(submission.notes, text);
  assert.equal(submission.metadata[text], text);
  assert.deepEqual(warnings, []);
});

test(`the body may nest ${MAX_BODY_DEPTH} levels; one more is a 400 naming where`, () => {
  const nest = (levels: number): unknown => {
    let value: unknown = 'leaf';
    for (let i = 0; i < levels; i++) value = [value];
    return value;
  };
  // The body is level 1, so `extra` may hold MAX_BODY_DEPTH - 1 levels of arrays.
  accepted({ ...base, extra: nest(MAX_BODY_DEPTH - 1) });
  const errors = refused({ ...base, extra: nest(MAX_BODY_DEPTH) });
  assert.equal(errors.length, 1);
  assert.equal(errors[0]!.field, `extra${'[0]'.repeat(MAX_BODY_DEPTH - 1)}`, 'the first container past the limit');
  assert.match(errors[0]!.message, /nested too deep: objects and arrays may nest at most 32 levels/);
});

test('nesting that would overflow the stack of JSON.stringify is a 400, not a crash', () => {
  const depth = 200_000;
  const body = JSON.parse(`{"transcript":"x","extra":${'['.repeat(depth)}${']'.repeat(depth)}}`) as unknown;
  assert.throws(() => JSON.stringify(body), RangeError, 'the body really is too deep for recursive code');
  const errors = refused(body);
  assert.equal(errors.length, 1);
  assert.match(errors[0]!.message, /nested too deep/);
});

test('a flood of bad strings lists 100 and counts the rest', () => {
  const errors = refused({ ...base, extra: Array.from({ length: 5000 }, () => '\u0000') });
  assert.equal(errors.length, 100, 'the normaliser lists at most 100 errors');
  assert.equal(errors[0]!.field, 'extra[0]');
  assert.match(errors.at(-1)!.message, /more errors not listed/);
});

test('the rule is one 400 with the other errors of the body, not instead of them', () => {
  const errors = refused({ notes: 'x\u0000' });
  assert.deepEqual(
    errors.map((e) => e.field),
    ['notes', 'transcript'],
    'the NUL and the missing transcript/audioUrl are both reported',
  );
});
