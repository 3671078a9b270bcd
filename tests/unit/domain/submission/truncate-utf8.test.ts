import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  TRANSCRIPT_MAX_BYTES,
  truncateUtf8,
  utf8ByteLength,
} from '../../../../shared/domain/submission/truncate-utf8.ts';

test('the inline transcript cap is 500 KB read as 500 × 1024 = 512,000 bytes', () => {
  assert.equal(TRANSCRIPT_MAX_BYTES, 512_000);
});

test('text within the budget is kept whole', () => {
  assert.deepEqual(truncateUtf8('héllo', 6), { text: 'héllo', truncated: false, originalBytes: 6 });
});

// Each row puts a multi-byte character across the cut: it must be dropped whole, never split.
const cases = [
  { name: '2-byte é', char: 'é', bytes: 2 },
  { name: '3-byte €', char: '€', bytes: 3 },
  { name: '4-byte 😀 (a surrogate pair in UTF-16)', char: '😀', bytes: 4 },
] as const;

for (const { name, char, bytes } of cases) {
  test(`a ${name} straddling the cut is dropped whole`, () => {
    const text = `ab${char}cd`;
    for (let cut = 2; cut < 2 + bytes; cut++) {
      const result = truncateUtf8(text, cut);
      assert.equal(result.text, 'ab', `cut at ${cut}`);
      assert.equal(result.truncated, true);
      assert.equal(result.originalBytes, 4 + bytes);
    }
    assert.equal(truncateUtf8(text, 2 + bytes).text, `ab${char}`, 'a cut right after the character keeps it');
  });
}

test('a long transcript is cut to at most the budget, and the result is valid UTF-8 that round-trips', () => {
  const text = '日本語😀é'.repeat(60_000);
  const result = truncateUtf8(text, TRANSCRIPT_MAX_BYTES);
  const bytes = utf8ByteLength(result.text);
  assert.ok(bytes <= TRANSCRIPT_MAX_BYTES && bytes > TRANSCRIPT_MAX_BYTES - 4, `kept ${bytes} bytes`);
  assert.equal(Buffer.from(result.text, 'utf8').toString('utf8'), result.text);
  assert.ok(text.startsWith(result.text));
  assert.equal(result.originalBytes, utf8ByteLength(text));
});

test('a zero budget keeps nothing; a negative one is a programming error', () => {
  assert.equal(truncateUtf8('abc', 0).text, '');
  assert.throws(() => truncateUtf8('abc', -1), RangeError);
});
