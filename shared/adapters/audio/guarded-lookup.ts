import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';

/** Resolves a host name to all its addresses, like `dns.lookup(host, { all: true })`. */
export type ResolveHost = (hostname: string) => Promise<readonly LookupAddress[]>;

export const systemResolveHost: ResolveHost = (hostname) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses)));
  });

/**
 * A `lookup` for `http.request` / `net.connect` that checks addresses at connect time: it resolves the
 * host, refuses the connection when `refuse` objects to ANY of the addresses, and otherwise hands
 * the very addresses it checked to the socket, so no second resolution can swap them (DNS
 * rebinding). Answers both the single-address and the `all: true` form (Node's happy-eyeballs
 * connect asks for all). Node skips `lookup` for IP literals: the caller must check those itself.
 */
export const guardedLookup =
  (resolveHost: ResolveHost, refuse: (address: string, hostname: string) => Error | undefined): LookupFunction =>
  (hostname, options, callback) => {
    const family = options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : (options.family ?? 0);
    resolveHost(hostname).then(
      (resolved) => {
        const addresses = resolved.filter((a) => family === 0 || a.family === family);
        const first = addresses[0];
        if (first === undefined) {
          const error: NodeJS.ErrnoException = new Error(`getaddrinfo ENOTFOUND ${hostname}`);
          error.code = 'ENOTFOUND';
          return callback(error, '');
        }
        for (const { address } of resolved) {
          const refusal = refuse(address, hostname);
          if (refusal) return callback(refusal, '');
        }
        if (options.all)
          callback(
            null,
            addresses.map(({ address, family }) => ({ address, family })),
          );
        else callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, ''),
    );
  };
