/**
 * AES-256-GCM with a random 96-bit nonce: `nonce ‖ tag ‖ ciphertext`. The associated data binds a
 * ciphertext to what it belongs to (a call id), so it cannot be moved to another call and read
 * there. Also the key-encryption key derived from DATA_KEY_SECRET, and wrapping of data keys.
 * See docs/decisions/0014-erasure-crypto-shredding.md.
 */
import {
  createCipheriv,
  createDecipheriv,
  createSecretKey,
  hkdfSync,
  type KeyObject,
  randomBytes,
  randomFillSync,
} from 'node:crypto';

import { DataKeysUnavailableError } from '../../ports/data-keys.ts';

const NONCE = 12;
const TAG = 16;

/**
 * A 32-byte key as the cipher takes it. A KeyObject made once (`cipherKey`) is what a key used
 * again should be: from a Buffer, Node.js builds a new key handle at every cipher, which costs
 * more than the encryption of a call's personal fields itself.
 */
export type CipherKey = Buffer | KeyObject;

/** The key handle of a 32-byte key, for a key used more than once. */
export const cipherKey = (key: Buffer): KeyObject => createSecretKey(key);

/**
 * Random nonces drawn from a pool filled 1,024 at a time: each is still 96 random bits from the
 * system's CSPRNG, used once, but one fill replaces a call into the generator per seal.
 */
const noncePool = Buffer.alloc(NONCE * 1024);
let noncesLeft = 0;
const nextNonce = (): Buffer => {
  if (noncesLeft === 0) {
    randomFillSync(noncePool);
    noncesLeft = noncePool.length / NONCE;
  }
  noncesLeft -= 1;
  // A copy: the pool is refilled in place, and the nonce travels with the ciphertext.
  return Buffer.from(noncePool.subarray(noncesLeft * NONCE, (noncesLeft + 1) * NONCE));
};

/** Encrypts `plain` under a 32-byte key. */
export const seal = (key: CipherKey, plain: Buffer, associated: string): Buffer => {
  const nonce = nextNonce();
  const cipher = createCipheriv('aes-256-gcm', key, nonce);
  cipher.setAAD(Buffer.from(associated, 'utf8'));
  const body = Buffer.concat([cipher.update(plain), cipher.final()]);
  return Buffer.concat([nonce, cipher.getAuthTag(), body]);
};

/** Decrypts what `seal` made; throws when the key, the associated data or the bytes differ. */
export const open = (key: CipherKey, sealed: Buffer, associated: string): Buffer => {
  if (sealed.length < NONCE + TAG) throw new Error('sealed value too short');
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(0, NONCE));
  decipher.setAAD(Buffer.from(associated, 'utf8'));
  decipher.setAuthTag(sealed.subarray(NONCE, NONCE + TAG));
  return Buffer.concat([decipher.update(sealed.subarray(NONCE + TAG)), decipher.final()]);
};

/** A fresh random data key. */
export const newDataKey = (): Buffer => randomBytes(32);

/** The key-encryption key: HKDF-SHA256 of DATA_KEY_SECRET, so any secret of 32+ characters gives a full key. */
export const keyEncryptionKey = (secret: string): KeyObject =>
  cipherKey(
    Buffer.from(
      hkdfSync(
        'sha256',
        Buffer.from(secret, 'utf8'),
        Buffer.from('call-data-keys', 'utf8'),
        Buffer.from('key-encryption-key v1', 'utf8'),
        32,
      ),
    ),
  );

/** A data key wrapped for storage, bound to its call. */
export const wrapKey = (kek: CipherKey, key: Buffer, callId: string): Buffer => seal(kek, key, `data-key:${callId}`);

/**
 * A stored data key unwrapped. When it does not open, the likely cause is this process's
 * DATA_KEY_SECRET, not the call: a process configured with another secret than the one that
 * wrapped the keys cannot open any of them. So the failure is the key store's, and retriable: a
 * consumer retries the record in place (its readiness says so) instead of dead-lettering every
 * call it reads, and a request answers 503.
 */
export const unwrapKey = (kek: CipherKey, wrapped: Buffer, callId: string): Buffer => {
  try {
    return open(kek, wrapped, `data-key:${callId}`);
  } catch (error) {
    throw new DataKeysUnavailableError(
      `the data key of call ${callId} does not open with this process's DATA_KEY_SECRET: every process must run with the secret that wrapped the stored keys`,
      { cause: error },
    );
  }
};
