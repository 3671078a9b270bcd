import { test } from 'node:test';
import assert from 'node:assert/strict';
import { accepted, base, refused, refusedWith } from './helpers.ts';

const tags = (n: number) => Array.from({ length: n }, (_, i) => `tag-${i}`);

test('at most 20 tags: 20 are accepted', () => {
  assert.equal(accepted({ ...base, tags: tags(20) }).submission.tags.length, 20);
});

test('at most 20 tags: 21 are a 400', () => {
  refusedWith({ ...base, call_tags: tags(21) }, [{ field: 'call_tags', message: 'at most 20 tags (got 21)' }]);
});

test('at most 20 tags, counted as kept: 22 entries that are 20 tags once trimmed and merged are accepted', () => {
  const sent = [...tags(20), ' tag-3 ', 'tag-7'];
  assert.deepEqual(accepted({ ...base, tags: sent }).submission.tags, tags(20));
  refusedWith({ ...base, tags: [...tags(21), 'tag-0'] }, [{ field: 'tags', message: 'at most 20 tags (got 21)' }]);
});

test('each tag at most 50 characters: 50 are accepted, 51 are a 400 naming the tag', () => {
  accepted({ ...base, tags: ['x'.repeat(50)] });
  refusedWith({ ...base, call_tags: ['ok', 'a', 'b', 'x'.repeat(51)] }, [
    { field: 'call_tags[3]', message: 'each tag at most 50 characters' },
  ]);
});

test('tag characters are code points: 50 emoji (100 UTF-16 units) are 50 characters', () => {
  accepted({ ...base, tags: ['😀'.repeat(50)] });
  refused({ ...base, tags: ['😀'.repeat(51)] });
});

test('a flag or a skin-toned emoji is two code points, so two characters (README): 25 flags fill a tag', () => {
  accepted({ ...base, tags: ['🇫🇷'.repeat(25)] });
  refusedWith({ ...base, tags: ['🇫🇷'.repeat(26)] }, [{ field: 'tags[0]', message: 'each tag at most 50 characters' }]);
  accepted({ ...base, notes: '👍🏽'.repeat(1000) });
  refusedWith({ ...base, notes: '👍🏽'.repeat(1001) }, [{ field: 'notes', message: 'notes at most 2000 characters' }]);
});

test('each tag must be a non-empty string; tags must be an array', () => {
  refusedWith({ ...base, tags: ['ok', 3, '  ', null] }, [
    { field: 'tags[1]', message: 'each tag must be a string' },
    { field: 'tags[2]', message: 'each tag must be non-empty' },
    { field: 'tags[3]', message: 'each tag must be a string' },
  ]);
  refusedWith({ ...base, callTags: 'a,b' }, [{ field: 'callTags', message: 'callTags must be an array of strings' }]);
});

test('tags are trimmed and exact duplicates dropped, order kept', () => {
  assert.deepEqual(accepted({ ...base, tags: [' demo ', 'Demo', 'demo', 'q4'] }).submission.tags, [
    'demo',
    'Demo',
    'q4',
  ]);
});

test('a tag of U+FEFF is a tag; tags that differ by U+FEFF are two, those that differ by white space one', () => {
  assert.deepEqual(accepted({ ...base, tags: ['\ufeff'] }).submission.tags, ['\ufeff']);
  assert.deepEqual(accepted({ ...base, tags: ['\ufeffx', 'x', '\u3000x\u00a0', 'x\ufeff'] }).submission.tags, [
    '\ufeffx',
    'x',
    'x\ufeff',
  ]);
  refusedWith({ ...base, tags: ['ok', '\u2003\u00a0\n'] }, [
    { field: 'tags[1]', message: 'each tag must be non-empty' },
  ]);
});

test('a tag is counted once trimmed: 50 characters inside white space pass', () => {
  assert.deepEqual(accepted({ ...base, tags: [` ${'x'.repeat(50)}\u3000`] }).submission.tags, ['x'.repeat(50)]);
  refused({ ...base, tags: [`\ufeff${'x'.repeat(50)}`] });
});

for (const name of ['notes', 'callNotes', 'call_notes', 'dealNotes', 'deal_notes']) {
  test(`${name}: at most 2000 characters — 2000 accepted, 2001 a 400`, () => {
    accepted({ ...base, [name]: 'n'.repeat(2000) });
    refusedWith({ ...base, [name]: 'n'.repeat(2001) }, [{ field: name, message: `${name} at most 2000 characters` }]);
  });
}

test('deal.notes: at most 2000 characters', () => {
  accepted({ ...base, deal: { notes: 'é'.repeat(2000) } });
  refusedWith({ ...base, deal: { notes: 'n'.repeat(2001) } }, [
    { field: 'deal.notes', message: 'deal.notes at most 2000 characters' },
  ]);
});

const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`key${i}`, i]));

test('metadata at most 20 keys: 20 are accepted', () => {
  assert.equal(Object.keys(accepted({ ...base, metadata: keys(20) }).submission.metadata).length, 20);
});

test('metadata at most 20 keys: 21 are a 400', () => {
  refusedWith({ ...base, metadata: keys(21) }, [{ field: 'metadata', message: 'metadata at most 20 keys (got 21)' }]);
});

test('metadata not nested: an object or array value is a 400 naming the key', () => {
  const message = 'metadata must be flat: values are strings, numbers, booleans or null, not objects or arrays';
  refusedWith({ ...base, metadata: { source: 'aircall', contact: { id: 1 }, ids: [1, 2] } }, [
    { field: 'metadata.contact', message },
    { field: 'metadata.ids', message },
  ]);
});

test('metadata values may be strings, numbers, booleans or null; the object must be an object', () => {
  const metadata = { source: 'aircall', callId: 981, inbound: true, dealId: null, syncMethod: 'webhook' };
  assert.deepEqual(accepted({ ...base, metadata }).submission.metadata, metadata);
  refusedWith({ ...base, metadata: ['source'] }, [
    { field: 'metadata', message: 'metadata must be a flat object of key/value pairs' },
  ]);
  refusedWith({ ...base, metadata: 'source=aircall' }, [
    { field: 'metadata', message: 'metadata must be a flat object of key/value pairs' },
  ]);
});

test('a "__proto__" metadata key stays a plain key', () => {
  const { submission } = accepted(JSON.parse('{"transcript":"x","metadata":{"__proto__":"p"}}'));
  assert.equal(Object.getPrototypeOf(submission.metadata), Object.prototype);
  assert.deepEqual(Object.keys(submission.metadata), ['__proto__']);
});

test('a transcript over 500 KB is accepted, truncated on a character boundary, with a warning', () => {
  const transcript = `${'a'.repeat(511_999)}€ and more`;
  const { submission, warnings } = accepted({ transcript });
  assert.equal(submission.transcript?.text, 'a'.repeat(511_999));
  assert.equal(submission.transcript?.truncated, true);
  assert.equal(submission.transcript?.originalBytes, 511_999 + 3 + 9);
  assert.deepEqual(warnings, [
    'transcript truncated from 512011 to 512000 bytes or fewer: the inline transcript limit is 500 KB (512,000 bytes)',
  ]);
});

test('a transcript of exactly 512,000 bytes is kept whole, without a warning', () => {
  const { submission, warnings } = accepted({ transcript: 'a'.repeat(512_000) });
  assert.equal(submission.transcript?.truncated, false);
  assert.deepEqual(warnings, []);
});
