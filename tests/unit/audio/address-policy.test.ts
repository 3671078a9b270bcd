import assert from 'node:assert/strict';
import { isIP } from 'node:net';
import { test } from 'node:test';
import { type AddressVerdict, classifyAddress } from '../../../shared/adapters/audio/address-policy.ts';

type Row = readonly [address: string, expected: AddressVerdict, why: string];
const allowed = { allowed: true } as const;
const refused = (reason: (AddressVerdict & { allowed: false })['reason'], embeddedIpv4?: string): AddressVerdict =>
  embeddedIpv4 === undefined ? { allowed: false, reason } : { allowed: false, reason, embeddedIpv4 };

const ipv4: Row[] = [
  ['93.184.216.34', allowed, 'public (example.com)'],
  ['8.8.8.8', allowed, 'public resolver'],
  ['1.1.1.1', allowed, 'public resolver'],
  ['9.255.255.255', allowed, 'just below 10/8'],
  ['11.0.0.0', allowed, 'just above 10/8'],
  ['100.63.255.255', allowed, 'just below 100.64/10'],
  ['100.128.0.0', allowed, 'just above 100.64/10'],
  ['172.15.255.255', allowed, 'just below 172.16/12'],
  ['172.32.0.0', allowed, 'just above 172.16/12'],
  ['192.167.255.255', allowed, 'just below 192.168/16'],
  ['192.169.0.0', allowed, 'just above 192.168/16'],
  ['198.17.255.255', allowed, 'just below 198.18/15'],
  ['198.20.0.0', allowed, 'just above 198.18/15'],
  ['223.255.255.255', allowed, 'last unicast before multicast'],
  ['0.0.0.0', refused('unspecified'), 'unspecified'],
  ['0.255.255.255', refused('unspecified'), '"this network" 0/8'],
  ['10.0.0.1', refused('private'), '10/8'],
  ['10.255.255.255', refused('private'), '10/8 top'],
  ['100.64.0.0', refused('cgnat'), 'CGNAT bottom'],
  ['100.127.255.255', refused('cgnat'), 'CGNAT top'],
  ['127.0.0.1', refused('loopback'), 'loopback'],
  ['127.255.255.254', refused('loopback'), 'all of 127/8'],
  ['169.254.0.1', refused('link-local'), 'link-local'],
  ['169.254.169.254', refused('metadata'), 'cloud metadata'],
  ['169.254.170.2', refused('metadata'), 'ECS task metadata'],
  ['168.63.129.16', refused('metadata'), 'Azure wire server'],
  ['100.100.100.200', refused('metadata'), 'Alibaba metadata'],
  ['172.16.0.0', refused('private'), '172.16/12 bottom'],
  ['172.31.255.255', refused('private'), '172.16/12 top'],
  ['192.0.0.8', refused('reserved'), 'IETF protocol assignments 192.0.0/24'],
  ['192.0.2.1', refused('documentation'), 'TEST-NET-1'],
  ['192.88.99.1', refused('reserved'), '6to4 relay anycast'],
  ['192.168.1.1', refused('private'), '192.168/16'],
  ['198.18.0.1', refused('benchmarking'), '198.18/15 bottom'],
  ['198.19.255.255', refused('benchmarking'), '198.18/15 top'],
  ['198.51.100.7', refused('documentation'), 'TEST-NET-2'],
  ['203.0.113.9', refused('documentation'), 'TEST-NET-3'],
  ['224.0.0.1', refused('multicast'), 'multicast bottom'],
  ['239.255.255.255', refused('multicast'), 'multicast top'],
  ['240.0.0.1', refused('reserved'), 'class E'],
  ['254.255.255.255', refused('reserved'), 'class E top'],
  ['255.255.255.255', refused('broadcast'), 'limited broadcast'],
];

const ipv6: Row[] = [
  ['2606:4700::1111', allowed, 'public (Cloudflare)'],
  ['2001:4860:4860::8888', allowed, 'public (Google)'],
  ['2a00:1450:4001:80b::200e', allowed, 'public, compressed in the middle'],
  ['2606:4700:0000:0000:0000:0000:0000:1111', allowed, 'uncompressed with zero padding'],
  ['2606:4700::1111%eth0', allowed, 'zone id is ignored'],
  ['64:ff9b::8.8.8.8', allowed, 'NAT64 of a public IPv4'],
  ['64:ff9b::5db8:d822', allowed, 'NAT64 of 93.184.216.34 in hex'],
  ['2002:5db8:d822::1', allowed, '6to4 of a public IPv4'],
  ['::', refused('unspecified'), 'unspecified'],
  ['0:0:0:0:0:0:0:0', refused('unspecified'), 'unspecified, long form'],
  ['::1', refused('loopback'), 'loopback'],
  ['0000:0000:0000:0000:0000:0000:0000:0001', refused('loopback'), 'loopback, long form'],
  ['fc00::1', refused('private'), 'unique local fc00::/7'],
  ['fdff:ffff::1', refused('private'), 'unique local fd…'],
  ['fd00:ec2::254', refused('metadata'), 'AWS metadata over IPv6'],
  ['fe80::1', refused('link-local'), 'link-local'],
  ['fe80::1%eth0', refused('link-local'), 'link-local with zone'],
  ['febf:ffff::1', refused('link-local'), 'top of fe80::/10'],
  ['fec0::1', refused('private'), 'deprecated site-local'],
  ['ff02::1', refused('multicast'), 'multicast'],
  ['FF05::1:3', refused('multicast'), 'upper-case hex'],
  ['2001:db8::1', refused('documentation'), 'documentation 2001:db8::/32'],
  ['3fff::1', refused('documentation'), 'documentation 3fff::/20'],
  ['2001:2::1', refused('benchmarking'), 'benchmarking 2001:2::/48'],
  ['2001:0:4136:e378:8000:63bf:3fff:fdd2', refused('reserved'), 'Teredo'],
  ['100::1', refused('reserved'), 'discard-only 100::/64'],
  ['4000::1', refused('reserved'), 'outside global unicast 2000::/3'],
  ['::ffff:127.0.0.1', refused('loopback', '127.0.0.1'), 'IPv4-mapped loopback, dotted'],
  ['::ffff:7f00:1', refused('loopback', '127.0.0.1'), 'IPv4-mapped loopback, hex (as WHATWG URL writes it)'],
  ['0:0:0:0:0:ffff:a9fe:a9fe', refused('metadata', '169.254.169.254'), 'IPv4-mapped metadata, long form'],
  ['::ffff:10.1.2.3', refused('private', '10.1.2.3'), 'IPv4-mapped private'],
  ['::ffff:8.8.8.8', refused('ipv4-mapped', '8.8.8.8'), 'IPv4-mapped public: refused anyway'],
  ['::127.0.0.1', refused('loopback', '127.0.0.1'), 'IPv4-compatible loopback'],
  ['::0.0.0.2', refused('unspecified', '0.0.0.2'), 'IPv4-compatible of 0/8'],
  ['::8.8.8.8', refused('ipv4-compatible', '8.8.8.8'), 'IPv4-compatible public: refused anyway'],
  ['64:ff9b::127.0.0.1', refused('loopback', '127.0.0.1'), 'NAT64 of loopback'],
  ['64:ff9b::a9fe:a9fe', refused('metadata', '169.254.169.254'), 'NAT64 of metadata'],
  ['64:ff9b::c0a8:1', refused('private', '192.168.0.1'), 'NAT64 of private'],
  ['64:ff9b:1::1', refused('private'), 'local-use NAT64'],
  ['2002:7f00:1::1', refused('loopback', '127.0.0.1'), '6to4 of loopback'],
  ['2002:a00:1::', refused('private', '10.0.0.1'), '6to4 of private'],
];

const notAnIp = [
  '',
  'localhost',
  'example.com',
  '[::1]', // brackets belong to URLs, not addresses
  '127.1', // short forms are URL syntax; WHATWG URL turns them into dotted quads first
  '0x7f.0.0.1',
  '0177.0.0.1', // leading zero: octal to some parsers, decimal to others
  '127.0.0.01',
  '256.0.0.1',
  '1.2.3',
  '1.2.3.4.5',
  ' 8.8.8.8',
  '1::2::3',
  ':::',
  ':1::2',
  '1::2:',
  '1:2:3:4:5:6:7:8:9',
  '1:2:3:4:5:6:7',
  '1:2:3:4:5:6:7:8::',
  '::12345',
  '::g',
  '::1.2.3',
  '::1.2.3.4:5',
  '1:2:3:4:5:6:7:1.2.3.4',
  'fe80::1%',
  '%eth0',
];

for (const [address, expected, why] of [...ipv4, ...ipv6]) {
  test(`${address} → ${expected.allowed ? 'allowed' : `refused as ${expected.reason}`} (${why})`, () => {
    assert.ok(isIP(address.replace(/%.*$/, '')), 'the table only holds real IP addresses');
    assert.deepEqual(classifyAddress(address), expected);
  });
}

test('anything that is not an IP address is refused as not-an-ip', () => {
  for (const text of notAnIp) {
    assert.deepEqual(classifyAddress(text), { allowed: false, reason: 'not-an-ip' }, JSON.stringify(text));
  }
});

test('every IPv4 address in the table is judged the same inside IPv4-mapped IPv6, except that public ones are refused too', () => {
  for (const [address, expected] of ipv4) {
    const mapped = classifyAddress(`::ffff:${address}`);
    assert.equal(mapped.allowed, false, address);
    assert.deepEqual(mapped, expected.allowed ? refused('ipv4-mapped', address) : refused(expected.reason, address));
  }
});
