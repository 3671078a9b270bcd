/**
 * Which IP addresses the audio fetcher may connect to: only public internet addresses. Pure; the
 * HTTP adapter calls it on every address a host resolves to, at connect time.
 *
 * IPv6 forms that carry an IPv4 address are judged by that address: NAT64 (64:ff9b::/96) and 6to4
 * (2002::/16) are allowed when the embedded address is public. IPv4-mapped (::ffff:0:0/96) and
 * IPv4-compatible (::/96) addresses are always refused — no public DNS answer legitimately holds
 * one, and a dual-stack socket would connect to the embedded IPv4 — with the embedded address's
 * class as the reason when that is not public, and `ipv4-mapped` / `ipv4-compatible` otherwise.
 * IPv6 outside 2000::/3 (global unicast) is refused as `reserved` unless a rule below names it.
 */

/** Why an address is refused. */
export type BlockedAddressReason =
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'metadata'
  | 'cgnat'
  | 'multicast'
  | 'broadcast'
  | 'documentation'
  | 'benchmarking'
  | 'reserved'
  | 'ipv4-mapped'
  | 'ipv4-compatible'
  | 'not-an-ip';

/** The verdict on one address; `embeddedIpv4` is set when an IPv6 address was judged by the IPv4 inside it. */
export type AddressVerdict =
  { allowed: true } | { allowed: false; reason: BlockedAddressReason; embeddedIpv4?: string };

type Rule<R> = readonly [network: bigint, prefix: number, reason: R];

const DECIMAL_OCTET = /^(?:0|[1-9][0-9]{0,2})$/;
const HEX_GROUP = /^[0-9a-fA-F]{1,4}$/;

/** Strict dotted quad (no leading zeros, no short forms) as an unsigned 32-bit number. */
const parseIpv4 = (text: string): number | undefined => {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0;
  for (const part of parts) {
    if (!DECIMAL_OCTET.test(part)) return undefined;
    const octet = Number(part);
    if (octet > 255) return undefined;
    value = value * 256 + octet;
  }
  return value;
};

/**
 * RFC 4291 text form as a 128-bit number: 1–4 hex digits per group, at most one `::`, an optional
 * trailing dotted quad (two groups) and an optional `%zone`.
 */
const parseIpv6 = (text: string): bigint | undefined => {
  const zone = text.indexOf('%');
  if (zone === 0 || zone === text.length - 1) return undefined;
  let rest = zone === -1 ? text : text.slice(0, zone);

  const lastColon = rest.lastIndexOf(':');
  if (lastColon === -1) return undefined;
  const last = rest.slice(lastColon + 1);
  if (last.includes('.')) {
    const v4 = parseIpv4(last);
    if (v4 === undefined) return undefined;
    rest = `${rest.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }

  const halves = rest.split('::');
  if (halves.length > 2) return undefined;
  const groupsOf = (half: string) => (half === '' ? [] : half.split(':'));
  const head = groupsOf(halves[0] ?? '');
  const tail = halves.length === 2 ? groupsOf(halves[1] ?? '') : [];
  if (![...head, ...tail].every((group) => HEX_GROUP.test(group))) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;

  let value = 0n;
  for (const group of [...head, ...Array<string>(missing).fill('0'), ...tail]) {
    value = (value << 16n) | BigInt(Number.parseInt(group, 16));
  }
  return value;
};

const ipv4Rules: readonly Rule<BlockedAddressReason>[] = [
  // Cloud metadata services first: they sit inside ranges refused for another reason, or none.
  v4Rule('169.254.169.254/32', 'metadata'), // AWS, GCP, Azure, OpenStack, …
  v4Rule('169.254.170.2/32', 'metadata'), // AWS ECS task metadata
  v4Rule('168.63.129.16/32', 'metadata'), // Azure wire server (a public address)
  v4Rule('100.100.100.200/32', 'metadata'), // Alibaba Cloud
  v4Rule('0.0.0.0/8', 'unspecified'),
  v4Rule('10.0.0.0/8', 'private'),
  v4Rule('100.64.0.0/10', 'cgnat'),
  v4Rule('127.0.0.0/8', 'loopback'),
  v4Rule('169.254.0.0/16', 'link-local'),
  v4Rule('172.16.0.0/12', 'private'),
  v4Rule('192.0.0.0/24', 'reserved'), // IETF protocol assignments
  v4Rule('192.0.2.0/24', 'documentation'),
  v4Rule('192.88.99.0/24', 'reserved'), // deprecated 6to4 relay anycast
  v4Rule('192.168.0.0/16', 'private'),
  v4Rule('198.18.0.0/15', 'benchmarking'),
  v4Rule('198.51.100.0/24', 'documentation'),
  v4Rule('203.0.113.0/24', 'documentation'),
  v4Rule('224.0.0.0/4', 'multicast'),
  v4Rule('255.255.255.255/32', 'broadcast'),
  v4Rule('240.0.0.0/4', 'reserved'),
];

type V6Reason = BlockedAddressReason | 'embedded-nat64' | 'embedded-6to4' | 'mapped' | 'compatible' | 'global';

const ipv6Rules: readonly Rule<V6Reason>[] = [
  v6Rule('::/128', 'unspecified'),
  v6Rule('::1/128', 'loopback'),
  v6Rule('::ffff:0:0/96', 'mapped'),
  v6Rule('::/96', 'compatible'),
  v6Rule('64:ff9b::/96', 'embedded-nat64'),
  v6Rule('64:ff9b:1::/48', 'private'), // local-use NAT64 (RFC 8215)
  v6Rule('fd00:ec2::254/128', 'metadata'), // AWS over IPv6
  v6Rule('fc00::/7', 'private'), // unique local
  v6Rule('fe80::/10', 'link-local'),
  v6Rule('fec0::/10', 'private'), // deprecated site-local
  v6Rule('ff00::/8', 'multicast'),
  v6Rule('2001:db8::/32', 'documentation'),
  v6Rule('3fff::/20', 'documentation'),
  v6Rule('2001:2::/48', 'benchmarking'),
  v6Rule('2001::/23', 'reserved'), // IETF protocol assignments: Teredo, ORCHID, AMT, …
  v6Rule('2002::/16', 'embedded-6to4'),
  v6Rule('2000::/3', 'global'),
  v6Rule('::/0', 'reserved'),
];

/** Classifies one IP address (IPv4 dotted quad or IPv6 text, zone id allowed); anything else is `not-an-ip`. */
export const classifyAddress = (ip: string): AddressVerdict => {
  const v4 = parseIpv4(ip);
  if (v4 !== undefined) return classifyIpv4(v4);
  const v6 = parseIpv6(ip);
  if (v6 === undefined) return { allowed: false, reason: 'not-an-ip' };

  const reason = match(ipv6Rules, v6, 128) ?? 'reserved';
  switch (reason) {
    case 'global':
      return { allowed: true };
    case 'embedded-nat64':
      return judgeEmbedded(Number(v6 & 0xffff_ffffn), undefined);
    case 'embedded-6to4':
      return judgeEmbedded(Number((v6 >> 80n) & 0xffff_ffffn), undefined);
    case 'mapped':
      return judgeEmbedded(Number(v6 & 0xffff_ffffn), 'ipv4-mapped');
    case 'compatible':
      return judgeEmbedded(Number(v6 & 0xffff_ffffn), 'ipv4-compatible');
    default:
      return { allowed: false, reason };
  }
};

/** Judges an IPv6 address by its embedded IPv4; `refuseAnyway` names the reason when the IPv4 is public but the form is not allowed. */
const judgeEmbedded = (v4: number, refuseAnyway: BlockedAddressReason | undefined): AddressVerdict => {
  const verdict = classifyIpv4(v4);
  const embeddedIpv4 = formatIpv4(v4);
  if (!verdict.allowed) return { allowed: false, reason: verdict.reason, embeddedIpv4 };
  return refuseAnyway ? { allowed: false, reason: refuseAnyway, embeddedIpv4 } : { allowed: true };
};

const classifyIpv4 = (v4: number): AddressVerdict => {
  const reason = match(ipv4Rules, BigInt(v4), 32);
  return reason === undefined ? { allowed: true } : { allowed: false, reason };
};

const match = <R>(rules: readonly Rule<R>[], address: bigint, bits: number): R | undefined => {
  for (const [network, prefix, reason] of rules) {
    const shift = BigInt(bits - prefix);
    if (address >> shift === network >> shift) return reason;
  }
  return undefined;
};

const formatIpv4 = (v4: number) => [24, 16, 8, 0].map((shift) => (v4 >>> shift) & 0xff).join('.');

function v4Rule(cidr: string, reason: BlockedAddressReason): Rule<BlockedAddressReason> {
  const [address = '', prefix = ''] = cidr.split('/');
  const value = parseIpv4(address);
  if (value === undefined) throw new Error(`bad IPv4 rule ${cidr}`);
  return [BigInt(value), Number(prefix), reason];
}

function v6Rule(cidr: string, reason: V6Reason): Rule<V6Reason> {
  const [address = '', prefix = ''] = cidr.split('/');
  const value = parseIpv6(address);
  if (value === undefined) throw new Error(`bad IPv6 rule ${cidr}`);
  return [value, Number(prefix), reason];
}
