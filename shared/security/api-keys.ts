/**
 * Push API keys.
 *
 * Format: `pk_` + 27 base62 characters encoding 20 random bytes (160 bits; the floor is 128) +
 * 6 base62 characters of CRC-32 over everything before them. 36 characters in all, only
 * [0-9A-Za-z_], so a double click selects the whole key. The checksum (the GitHub token scheme)
 * lets the service refuse a mistyped or truncated key without a lookup, and lets secret scanners
 * recognise a real key; CRC-32 catches every single-character change.
 *
 * Storage: only `hashApiKey(key, secret)` — HMAC-SHA256 keyed with a server secret — is stored.
 * Random 160-bit keys need no slow hash; the keyed hash means a leaked table alone cannot be used
 * to test candidate keys. The hash is the lookup key. `keyId` is a separate random, non-secret id
 * (`key_` + 17 base62 characters) for listing, revoking and logging: deriving it from the key
 * would put key material in logs.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const API_KEY_PREFIX = 'pk_';
/** Random bytes in a key: 160 bits. */
export const API_KEY_RANDOM_BYTES = 20;
const BODY_CHARS = 27; // ceil(160 / log2(62))
const CHECKSUM_CHARS = 6; // ceil(32 / log2(62))
/** Length of every key: `pk_` + 27 + 6. */
export const API_KEY_LENGTH = API_KEY_PREFIX.length + BODY_CHARS + CHECKSUM_CHARS;
const KEY_ID_BYTES = 12;
const KEY_ID_CHARS = 17; // ceil(96 / log2(62))

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_SHAPE = new RegExp(`^${API_KEY_PREFIX}[0-9A-Za-z]{${BODY_CHARS + CHECKSUM_CHARS}}$`);

/** Big-endian base62 of `bytes`, left-padded with '0' to `width` characters. */
export const base62 = (bytes: Uint8Array, width: number): string => {
  let n = bytes.reduce((acc, byte) => (acc << 8n) | BigInt(byte), 0n);
  let out = '';
  while (n > 0n) {
    out = BASE62[Number(n % 62n)] + out;
    n /= 62n;
  }
  if (out.length > width) throw new RangeError(`${bytes.length} bytes do not fit in ${width} base62 characters`);
  return out.padStart(width, '0');
};

const CRC_TABLE = Array.from({ length: 256 }, (_, i) => {
  let c = i;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

/** CRC-32 (IEEE 802.3, as zlib) of a string's UTF-8 bytes. */
export const crc32 = (text: string): number => {
  let crc = 0xffffffff;
  for (const byte of Buffer.from(text, 'utf8')) crc = (CRC_TABLE[(crc ^ byte) & 0xff] ?? 0) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
};

const checksum = (head: string): string => {
  const value = crc32(head);
  return base62(Uint8Array.of(value >>> 24, (value >>> 16) & 0xff, (value >>> 8) & 0xff, value & 0xff), CHECKSUM_CHARS);
};

/** Builds a key from exactly API_KEY_RANDOM_BYTES random bytes (an argument, so tests can fix them). */
export const formatApiKey = (random: Uint8Array): string => {
  if (random.length !== API_KEY_RANDOM_BYTES)
    throw new RangeError(`an API key needs ${API_KEY_RANDOM_BYTES} random bytes, got ${random.length}`);
  const head = API_KEY_PREFIX + base62(random, BODY_CHARS);
  return head + checksum(head);
};

/** A new key from the system's CSPRNG. Shown to its owner once; store only its hash. */
export const generateApiKey = (): string => formatApiKey(randomBytes(API_KEY_RANDOM_BYTES));

/** Builds a key id from KEY_ID_BYTES random bytes. */
export const formatKeyId = (random: Uint8Array): string => `key_${base62(random, KEY_ID_CHARS)}`;

/** A new non-secret key id, `key_` + 17 base62 characters (96 bits). */
export const generateKeyId = (): string => formatKeyId(randomBytes(KEY_ID_BYTES));

export type ParsedApiKey = { ok: true; key: string } | { ok: false; reason: 'invalid-format' | 'bad-checksum' };

/**
 * Checks a presented key without any lookup: shape first (prefix, length, alphabet), then the
 * checksum. Nothing is trimmed: a header value with spaces inside is not a key.
 */
export const parseApiKey = (raw: unknown): ParsedApiKey => {
  if (typeof raw !== 'string' || !KEY_SHAPE.test(raw)) return { ok: false, reason: 'invalid-format' };
  const head = raw.slice(0, -CHECKSUM_CHARS);
  return checksum(head) === raw.slice(-CHECKSUM_CHARS) ? { ok: true, key: raw } : { ok: false, reason: 'bad-checksum' };
};

/** The stored form of a key: HMAC-SHA256(secret, key) as 64 lower-case hex characters. */
export const hashApiKey = (key: string, secret: string | Uint8Array): string =>
  createHmac('sha256', secret).update(key, 'utf8').digest('hex');

const HEX = /^(?:[0-9a-fA-F]{2})*$/;

/**
 * Constant-time equality of two hex strings (e.g. a computed hash and a stored one). Different
 * lengths or non-hex input are unequal; only the length can leak, and hashes have a fixed one.
 */
export const safeEqualHex = (a: string, b: string): boolean => {
  if (a.length !== b.length || !HEX.test(a) || !HEX.test(b)) return false;
  return timingSafeEqual(Buffer.from(a, 'hex'), Buffer.from(b, 'hex'));
};
