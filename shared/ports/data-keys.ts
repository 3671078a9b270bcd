/**
 * Data key store port: one random 256-bit key per call, under which the call's personal fields are
 * encrypted wherever they are stored or published (docs/decisions/0014-erasure-crypto-shredding.md).
 * Keys are stored wrapped (encrypted) by a key-encryption key from DATA_KEY_SECRET. Destroying a
 * call's key erases every copy of those fields at once: events, topic records, backups.
 */
import { BackendUnavailableError } from './unavailable.ts';

export interface DataKeyStore {
  /**
   * The call's key, created (durably) when it has none. Undefined when the call's key was destroyed:
   * an erased call takes no new personal data. Concurrent calls for one call id agree on one key.
   */
  obtain(callId: string): Promise<Buffer | undefined>;
  /** The call's key; undefined when it has none or it was destroyed. */
  find(callId: string): Promise<Buffer | undefined>;
  /**
   * Whether the call's key was destroyed (its tombstone is stored). Unlike `find`, it tells an
   * erased call from one that never had a key (a call stored before encryption existed).
   */
  destroyed(callId: string): Promise<boolean>;
  /** Destroys the call's key for good (a tombstone stays, so it is never made again). Idempotent. */
  destroy(callId: string): Promise<void>;
  /** Releases what the adapter opened (not a database handle it was given). */
  close(): Promise<void>;
}

/** The key store cannot be reached or refused the operation for a reason worth retrying. */
export class DataKeysUnavailableError extends BackendUnavailableError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('DATA_KEYS_UNAVAILABLE', message, options);
    this.name = 'DataKeysUnavailableError';
  }
}
