import assert from 'node:assert/strict';
import type { LookupAddress, LookupOptions } from 'node:dns';
import { test } from 'node:test';
import { guardedLookup, type ResolveHost } from '../../../shared/adapters/audio/guarded-lookup.ts';

const resolver =
  (table: Record<string, LookupAddress[]>): ResolveHost =>
  async (hostname) => {
    const found = table[hostname];
    if (found) return found;
    throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  };

const table = {
  'public.test': [
    { address: '203.0.0.1', family: 4 },
    { address: '2606:4700::1', family: 6 },
  ],
  'mixed.test': [
    { address: '203.0.0.1', family: 4 },
    { address: '10.0.0.1', family: 4 },
  ],
  'v6only.test': [{ address: '2606:4700::1', family: 6 }],
};
const refuseTen = (address: string) => (address.startsWith('10.') ? new Error(`refused ${address}`) : undefined);

/** Calls the lookup the way net.connect does and collects what it hands back. */
const lookUp = (hostname: string, options: LookupOptions) =>
  new Promise<{ error: Error | null; address: string | LookupAddress[]; family?: number }>((resolve) =>
    guardedLookup(resolver(table), refuseTen)(hostname, options, (error, address, family) =>
      resolve({ error, address, family }),
    ),
  );

test('single-address form: the first checked address and its family', async () => {
  assert.deepEqual(await lookUp('public.test', {}), { error: null, address: '203.0.0.1', family: 4 });
  assert.deepEqual(await lookUp('public.test', { family: 6 }), { error: null, address: '2606:4700::1', family: 6 });
});

test('all form (happy eyeballs): every checked address, filtered by family', async () => {
  assert.deepEqual((await lookUp('public.test', { all: true })).address, table['public.test']);
  assert.deepEqual((await lookUp('public.test', { all: true, family: 4 })).address, [
    { address: '203.0.0.1', family: 4 },
  ]);
});

test('one refused address refuses the host, whichever address would have been used', async () => {
  const single = await lookUp('mixed.test', {});
  assert.equal(single.error?.message, 'refused 10.0.0.1');
  const all = await lookUp('mixed.test', { all: true });
  assert.equal(all.error?.message, 'refused 10.0.0.1');
});

test('resolution failures and an empty answer for the family surface as ENOTFOUND-like errors', async () => {
  const missing = await lookUp('missing.test', {});
  assert.equal((missing.error as NodeJS.ErrnoException).code, 'ENOTFOUND');
  const noV4 = await lookUp('v6only.test', { family: 4 });
  assert.equal((noV4.error as NodeJS.ErrnoException).code, 'ENOTFOUND');
});
