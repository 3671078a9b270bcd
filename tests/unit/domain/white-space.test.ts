/**
 * White space (shared/domain/white-space.ts): what `trim()` removes but U+FEFF, every character of
 * it Unicode White_Space; U+FEFF, U+200B and U+0085 are kept.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isWhiteSpaceOnly, isWhiteSpaceUnit, trimWhiteSpace } from '../../../shared/domain/white-space.ts';

test('white space is every UTF-16 unit trim() removes but U+FEFF, each of them Unicode White_Space', () => {
  const differ: string[] = [];
  for (let unit = 0; unit <= 0xffff; unit++) {
    const c = String.fromCharCode(unit);
    const expected = c.trim() === '' && unit !== 0xfeff;
    if (isWhiteSpaceUnit(unit) !== expected) differ.push(unit.toString(16));
    if (isWhiteSpaceUnit(unit) && !/^\p{White_Space}$/u.test(c)) differ.push(`${unit.toString(16)} not White_Space`);
  }
  assert.deepEqual(differ, []);
});

test('trimWhiteSpace strips white space at both ends and keeps U+FEFF, U+200B and U+0085', () => {
  assert.equal(trimWhiteSpace(' \t\n\u00a0\u2003Acme\u3000\u2028\r'), 'Acme');
  assert.equal(trimWhiteSpace('\ufeffAcme\ufeff'), '\ufeffAcme\ufeff');
  assert.equal(trimWhiteSpace(' \ufeff Acme \u200b '), '\ufeff Acme \u200b');
  assert.equal(trimWhiteSpace('\u0085x\u0085'), '\u0085x\u0085');
  assert.equal(trimWhiteSpace(' a b '), 'a b', 'inner white space kept');
  assert.equal(trimWhiteSpace('   '), '');
  const same = 'no white space at the ends';
  assert.equal(trimWhiteSpace(same), same);
});

test('isWhiteSpaceOnly: empty or white space only; U+FEFF alone is not', () => {
  for (const blank of ['', ' ', '\t\r\n', '\u00a0\u2000\u200a\u202f\u205f\u3000'])
    assert.ok(isWhiteSpaceOnly(blank), JSON.stringify(blank));
  for (const text of ['\ufeff', ' \ufeff ', '\u200b', '\u2060', '\u0085', 'x'])
    assert.ok(!isWhiteSpaceOnly(text), JSON.stringify(text));
});
