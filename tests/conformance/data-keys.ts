/**
 * The data key store conformance suite (shared/ports/data-keys.ts): every adapter passes it
 * unchanged. `dataKeysConformance(name, factory, options)` is called once per adapter from a
 * `*.test.ts` file. Keys are asked for one at a time and many at once, since the adapters create
 * and look keys up in batches: each call must still get its own outcome.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { describe, test } from 'node:test';
import { keyEncryptionKey } from '../../shared/adapters/crypto/aes-gcm.ts';
import type { CipherKey } from '../../shared/adapters/crypto/aes-gcm.ts';
import type { DataKeyStore } from '../../shared/ports/data-keys.ts';

export interface DataKeysHandle {
  keys: DataKeyStore;
  /** Closes the store and removes what the test stored. */
  cleanup(): Promise<void>;
}

export interface DataKeysFactory {
  /** A store over fresh, empty storage, wrapping keys with `kek`. */
  fresh(kek: CipherKey): Promise<DataKeysHandle>;
  /** A second store over the same storage as `handle` (another process), wrapping keys with `kek`. */
  sameStorage(handle: DataKeysHandle, kek: CipherKey): Promise<DataKeysHandle>;
}

const KEK = keyEncryptionKey('data-keys-conformance-secret-0123456789abcdef');
const OTHER_KEK = keyEncryptionKey('another-data-keys-secret-0123456789abcdefgh');

/** A call id as the service makes them (UUID version 7 or 4: the store takes any text id). */
const callId = () => randomUUID();

const hex = (key: Buffer | undefined) => key?.toString('hex');

export const dataKeysConformance = (name: string, factory: DataKeysFactory, options: { skip?: string } = {}) => {
  describe(`data key store conformance: ${name}`, { skip: options.skip }, () => {
    const withStore = async (fn: (keys: DataKeyStore, handle: DataKeysHandle) => Promise<void>) => {
      const handle = await factory.fresh(KEK);
      try {
        await fn(handle.keys, handle);
      } finally {
        await handle.cleanup();
      }
    };

    test('obtain makes a call one 32-byte key; obtain and find later give the same key', async () => {
      await withStore(async (keys) => {
        const id = callId();
        assert.equal(await keys.find(id), undefined, 'no key before the first obtain');
        const made = await keys.obtain(id);
        assert.ok(made instanceof Buffer && made.length === 32);
        assert.equal(hex(await keys.obtain(id)), hex(made));
        assert.equal(hex(await keys.find(id)), hex(made));
      });
    });

    test('many calls at once: each gets a key of its own, and every lookup at once finds its call’s', async () => {
      await withStore(async (keys) => {
        const ids = Array.from({ length: 300 }, callId);
        const made = await Promise.all(ids.map((id) => keys.obtain(id)));
        assert.equal(new Set(made.map(hex)).size, ids.length, 'no two calls share a key');
        const found = await Promise.all([...ids, callId()].map((id) => keys.find(id)));
        assert.deepEqual(found.slice(0, -1).map(hex), made.map(hex));
        assert.equal(found.at(-1), undefined, 'a call without a key finds none, beside the others');
      });
    });

    test('obtains of one call at the same moment, in one process or two, agree on one key', async () => {
      await withStore(async (keys, handle) => {
        const other = await factory.sameStorage(handle, KEK);
        try {
          const ids = Array.from({ length: 50 }, callId);
          const here = ids.flatMap((id) => [keys.obtain(id), keys.obtain(id)]);
          const there = ids.map((id) => other.keys.obtain(id));
          const [mine, theirs] = await Promise.all([Promise.all(here), Promise.all(there)]);
          ids.forEach((id, i) => {
            assert.equal(hex(mine[2 * i]), hex(mine[2 * i + 1]), `call ${id}: one key in one process`);
            assert.equal(hex(mine[2 * i]), hex(theirs[i]), `call ${id}: one key across the two`);
          });
        } finally {
          await other.cleanup();
        }
      });
    });

    test('a destroyed key is gone for good: find and obtain give none, beside calls whose keys stay', async () => {
      await withStore(async (keys) => {
        const [kept, erased, neverMade] = [callId(), callId(), callId()];
        const keptKey = await keys.obtain(kept);
        await keys.obtain(erased);
        await keys.destroy(erased);
        await keys.destroy(erased);
        await keys.destroy(neverMade);
        const [a, b, c, d, e] = await Promise.all([
          keys.find(erased),
          keys.obtain(erased),
          keys.obtain(neverMade),
          keys.find(kept),
          keys.obtain(kept),
        ]);
        assert.deepEqual([a, b, c], [undefined, undefined, undefined]);
        assert.equal(hex(d), hex(keptKey));
        assert.equal(hex(e), hex(keptKey));
        // Only a tombstone reads as destroyed: a call without a key is not an erased one.
        const never = callId();
        assert.deepEqual(await Promise.all([erased, neverMade, kept, never].map((id) => keys.destroyed(id))), [
          true,
          true,
          false,
          false,
        ]);
      });
    });

    test('odd call ids are stored and found as they are', async () => {
      await withStore(async (keys) => {
        const ids = ['x', 'call-\u00e9\u200b\u{1f600}', `${'z'.repeat(300)}`, "quote ' and \\ backslash", ' padded '];
        const made = await Promise.all(ids.map((id) => keys.obtain(id)));
        assert.equal(new Set(made.map(hex)).size, ids.length);
        assert.deepEqual((await Promise.all(ids.map((id) => keys.find(id)))).map(hex), made.map(hex));
      });
    });

    test('a call id the storage refuses (NUL) fails alone: the calls asking beside it get their keys', async () => {
      await withStore(async (keys) => {
        const ids = Array.from({ length: 20 }, callId);
        const odd = `nul\u0000${callId()}`;
        const [oddMade, ...made] = await Promise.allSettled([keys.obtain(odd), ...ids.map((id) => keys.obtain(id))]);
        assert.ok(
          made.every((m) => m.status === 'fulfilled' && m.value?.length === 32),
          'every other call has its key',
        );
        const [oddFound, ...found] = await Promise.allSettled([keys.find(odd), ...ids.map((id) => keys.find(id))]);
        assert.deepEqual(
          found.map((f) => (f.status === 'fulfilled' ? hex(f.value) : String(f.reason))),
          made.map((m) => (m.status === 'fulfilled' ? hex(m.value) : '')),
        );
        // Stored as it is (SQLite) or refused (PostgreSQL text holds no NUL): never another call's key.
        if (oddMade.status === 'fulfilled' && oddFound.status === 'fulfilled')
          assert.equal(hex(oddFound.value), hex(oddMade.value));
      });
    });

    test('a store wrapping with another secret cannot read the keys: it fails, it does not invent one', async () => {
      await withStore(async (keys, handle) => {
        const id = callId();
        await keys.obtain(id);
        const other = await factory.sameStorage(handle, OTHER_KEK);
        try {
          await assert.rejects(other.keys.find(id));
          await assert.rejects(other.keys.obtain(id));
        } finally {
          await other.cleanup();
        }
      });
    });
  });
};
