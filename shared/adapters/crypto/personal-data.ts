/**
 * The one place personal fields are encrypted and decrypted (docs/decisions/0014-erasure-crypto-shredding.md):
 * `seal` before a payload about a call is stored or published, `open` where stored events and log
 * records are read (the sealed event store, the calls.submitted.v1 reader). A sealed payload is the
 * payload without its personal fields plus `sealed`: `v1.` and the base64 of those fields as JSON,
 * AES-256-GCM under the call's data key, bound to the call id. A payload without `sealed` (written
 * before encryption existed, or with no personal field) reads as it is.
 *
 * Keys are cached in memory, as key handles made once (see `cipherKey`): found keys for
 * `KEY_CACHE_TTL_MS`, so another process's erasure is honoured within that time (this process's at
 * once); destroyed keys for good, since a destroyed key never comes back.
 */
import type { KeyObject } from 'node:crypto';
import { DataAtFaultError } from '../../ports/data-at-fault.ts';
import { type DataKeyStore } from '../../ports/data-keys.ts';
import type { Json } from '../../ports/event-store.ts';
import {
  hasPersonalFields,
  mergePersonal,
  SEALED_FIELD,
  SEALED_VERSION as VERSION,
  splitPersonal,
} from '../../domain/call/personal-fields.ts';
import { cipherKey, open, seal } from './aes-gcm.ts';

const KEY_CACHE_MAX = 10_000;
export const KEY_CACHE_TTL_MS = 30_000;

export interface PersonalData {
  /** The payload of `type` about call `callId` with its personal fields encrypted; without them when the call's key was destroyed. */
  seal(callId: string, type: string, data: Json): Promise<Json>;
  /** The payload with its personal fields decrypted, or their erased placeholders when the call's key was destroyed. */
  open(callId: string, type: string, data: Json): Promise<Json>;
  /** As `open`, saying whether the fields were erased (sealed, and the key destroyed). */
  opened(callId: string, type: string, data: Json): Promise<{ data: Json; erased: boolean }>;
  /** Whether a payload carries sealed fields. */
  isSealed(data: Json): boolean;
  /**
   * Whether the call's key was destroyed (the call is erased). Asks the key store unless this
   * process knows it destroyed: a key found earlier is no answer, since another process may have
   * erased the call since.
   */
  destroyed(callId: string): Promise<boolean>;
  /** Destroys the call's key: every sealed copy of its personal fields is unreadable from now on. */
  erase(callId: string): Promise<void>;
  close(): Promise<void>;
}

type JsonObject = { [key: string]: Json };
const sealedOf = (data: Json): string | undefined => {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return undefined;
  const sealed = data[SEALED_FIELD];
  return typeof sealed === 'string' && sealed.startsWith(VERSION) ? sealed : undefined;
};

export const createPersonalData = (keys: DataKeyStore): PersonalData => {
  /** callId → key (with when it was read), or null for a destroyed key. */
  const cache = new Map<string, { key: KeyObject; at: number } | null>();
  const remember = (callId: string, entry: { key: KeyObject; at: number } | null) => {
    // A destroyed key never comes back: a lookup that began before the erasure must not bring it back.
    if (entry !== null && cache.get(callId) === null) return;
    cache.delete(callId);
    cache.set(callId, entry);
    if (cache.size > KEY_CACHE_MAX) cache.delete(cache.keys().next().value!);
  };
  const cached = (callId: string): KeyObject | null | undefined => {
    const entry = cache.get(callId);
    if (entry === undefined) return undefined;
    if (entry !== null && Date.now() - entry.at > KEY_CACHE_TTL_MS) {
      cache.delete(callId);
      return undefined;
    }
    return entry === null ? null : entry.key;
  };
  /**
   * Lookups under way, by call and kind: the followers reading one call's events at the same moment
   * (each of its events, in each follower) share one trip to the key store instead of one each.
   */
  const pending = new Map<string, Promise<KeyObject | undefined>>();
  const lookUp = async (callId: string, create: boolean): Promise<KeyObject | undefined> => {
    const stored = create ? await keys.obtain(callId) : await keys.find(callId);
    const key = stored ? cipherKey(stored) : undefined;
    remember(callId, key ? { key, at: Date.now() } : null);
    return cached(callId) ?? undefined;
  };
  const keyFor = async (callId: string, create: boolean): Promise<KeyObject | undefined> => {
    const known = cached(callId);
    if (known !== undefined) return known ?? undefined;
    const slot = `${create ? 'obtain' : 'find'} ${callId}`;
    let lookup = pending.get(slot);
    if (!lookup) {
      lookup = lookUp(callId, create).finally(() => pending.delete(slot));
      pending.set(slot, lookup);
    }
    return lookup;
  };

  const personalData: PersonalData = {
    async seal(callId, type, data) {
      if (!hasPersonalFields(type) || sealedOf(data) !== undefined) return data;
      const { rest, personal } = splitPersonal(type, data);
      if (Object.keys(personal).length === 0) return data;
      const key = await keyFor(callId, true);
      // An erased call takes no new personal data: the fields are dropped.
      if (!key) return rest;
      const sealed = seal(key, Buffer.from(JSON.stringify(personal), 'utf8'), callId).toString('base64');
      return { ...(rest as JsonObject), [SEALED_FIELD]: `${VERSION}${sealed}` };
    },
    async open(callId, type, data) {
      return (await personalData.opened(callId, type, data)).data;
    },
    async opened(callId, type, data) {
      const sealed = sealedOf(data);
      if (sealed === undefined) return { data, erased: false };
      const { [SEALED_FIELD]: _sealed, ...rest } = data as JsonObject;
      const key = await keyFor(callId, false);
      if (!key) return { data: mergePersonal(type, rest, undefined), erased: true };
      let personal: Record<string, Json>;
      try {
        personal = JSON.parse(
          open(key, Buffer.from(sealed.slice(VERSION.length), 'base64'), callId).toString('utf8'),
        ) as Record<string, Json>;
      } catch (error) {
        // The call's own key opened (a wrong DATA_KEY_SECRET fails before, as the key store's
        // failure): the sealed bytes, or the call id they are bound to, are what is wrong.
        throw new DataAtFaultError(`the sealed personal fields of ${type} of call ${callId} do not open with its key`, {
          cause: error,
        });
      }
      return { data: mergePersonal(type, rest, personal), erased: false };
    },
    isSealed: (data) => sealedOf(data) !== undefined,
    async destroyed(callId) {
      if (cache.get(callId) === null) return true;
      if (!(await keys.destroyed(callId))) return false;
      remember(callId, null);
      return true;
    },
    async erase(callId) {
      await keys.destroy(callId);
      remember(callId, null);
    },
    close: () => keys.close(),
  };
  return personalData;
};
