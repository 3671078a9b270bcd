import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  API_KEY_LENGTH,
  API_KEY_RANDOM_BYTES,
  base62,
  crc32,
  formatApiKey,
  formatKeyId,
  generateApiKey,
  generateKeyId,
  hashApiKey,
  parseApiKey,
  safeEqualHex,
} from '../../../shared/security/api-keys.ts';

const bytes = (fill: number, n = API_KEY_RANDOM_BYTES) => new Uint8Array(n).fill(fill);

test('a key is pk_ + base62 of ≥ 128 random bits + a checksum, 36 characters of [0-9A-Za-z_]', () => {
  assert.ok(API_KEY_RANDOM_BYTES * 8 >= 128);
  const key = generateApiKey();
  assert.ok(key.startsWith('pk_'));
  assert.equal(key.length, API_KEY_LENGTH);
  assert.equal(API_KEY_LENGTH, 36);
  assert.match(key, /^pk_[0-9A-Za-z]{33}$/);
  assert.deepEqual(parseApiKey(key), { ok: true, key });
});

test('formatting is deterministic in the random bytes and keeps leading zero bytes', () => {
  assert.equal(formatApiKey(bytes(0)), formatApiKey(bytes(0)));
  assert.match(formatApiKey(bytes(0)), /^pk_0{27}[0-9A-Za-z]{6}$/);
  assert.notEqual(formatApiKey(bytes(1)), formatApiKey(bytes(2)));
  assert.throws(() => formatApiKey(bytes(1, 16)), RangeError);
});

test('base62 is big-endian and fixed width', () => {
  assert.equal(base62(Uint8Array.of(0, 61), 3), '00z');
  assert.equal(base62(Uint8Array.of(0, 62), 3), '010');
  assert.equal(base62(bytes(255), 27).length, 27);
  assert.throws(() => base62(bytes(255), 26), RangeError);
});

test('CRC-32 is the IEEE/zlib one', () => {
  assert.equal(crc32('123456789'), 0xcbf43926);
  assert.equal(crc32(''), 0);
});

test('every single-character typo is rejected by the checksum, without a lookup', () => {
  const key = formatApiKey(Uint8Array.from({ length: API_KEY_RANDOM_BYTES }, (_, i) => i * 13));
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  for (let i = 3; i < key.length; i++) {
    for (const c of alphabet) {
      if (c === key[i]) continue;
      const typo = key.slice(0, i) + c + key.slice(i + 1);
      assert.deepEqual(parseApiKey(typo), { ok: false, reason: 'bad-checksum' }, typo);
    }
  }
});

test('two adjacent characters swapped are rejected', () => {
  const key = generateApiKey();
  for (let i = 3; i < key.length - 1; i++) {
    if (key[i] === key[i + 1]) continue;
    const swapped = key.slice(0, i) + key[i + 1] + key[i] + key.slice(i + 2);
    assert.equal(parseApiKey(swapped).ok, false);
  }
});

test('anything not shaped like a key is invalid-format', () => {
  const key = generateApiKey();
  for (const raw of [
    undefined,
    42,
    '',
    'pk_',
    key.slice(0, -1),
    `${key}0`,
    ` ${key}`,
    `Bearer ${key}`,
    `sk_${key.slice(3)}`,
    `PK_${key.slice(3)}`,
    `${key.slice(0, 10)}-${key.slice(11)}`,
  ]) {
    assert.deepEqual(parseApiKey(raw), { ok: false, reason: 'invalid-format' }, String(raw));
  }
});

test('the stored form is HMAC-SHA256 hex, keyed by the server secret', () => {
  const key = formatApiKey(bytes(7));
  const stored = hashApiKey(key, 'server-secret');
  assert.match(stored, /^[0-9a-f]{64}$/);
  assert.equal(hashApiKey(key, 'server-secret'), stored);
  assert.notEqual(hashApiKey(key, 'another-secret'), stored);
  assert.notEqual(hashApiKey(formatApiKey(bytes(8)), 'server-secret'), stored);
  assert.ok(!stored.includes(key.slice(3, 20)));
  // RFC 4231 test case 2: the construction is plain HMAC-SHA256.
  assert.equal(
    hashApiKey('what do ya want for nothing?', 'Jefe'),
    '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
  );
});

test('hashes compare in constant time; different lengths or non-hex never match', () => {
  const a = hashApiKey('pk_a', 's');
  assert.equal(safeEqualHex(a, a), true);
  assert.equal(safeEqualHex(a, a.toUpperCase()), true);
  assert.equal(safeEqualHex(a, hashApiKey('pk_b', 's')), false);
  assert.equal(safeEqualHex(a, a.slice(0, -2)), false);
  assert.equal(safeEqualHex(`${a.slice(0, -1)}g`, `${a.slice(0, -1)}g`), false);
  assert.equal(safeEqualHex('', ''), true);
});

test('a key id is a separate, non-secret random id', () => {
  assert.match(generateKeyId(), /^key_[0-9A-Za-z]{17}$/);
  assert.notEqual(generateKeyId(), generateKeyId());
  assert.equal(formatKeyId(bytes(0, 12)), `key_${'0'.repeat(17)}`);
});
