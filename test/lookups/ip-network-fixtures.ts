/**
 * Small files in each IP network import format, written by the tests themselves: a few hundred
 * prefixes over both families, two dated pfx2as snapshots with an origin change and two possible
 * hijacks (a more specific prefix, and a second origin), an as-rel slice, and AS names.
 */

/** Holders: the registry's opaque ids link address blocks to their AS numbers. */
export const RIR_FILE = [
  '# NRO delegated-extended, written by the test',
  '2.3|nro|20261101|420|19821213|20261101|+0000',
  'nro|*|ipv4|*|230|summary',
  'nro|*|ipv6|*|120|summary',
  'nro|*|asn|*|8|summary',
  'arin|US|asn|64500|1|20100315|allocated|org-acme|e-stats',
  'ripencc|DE|asn|64510|2|20120101|allocated|org-beta|e-stats',
  'apnic|JP|asn|64520|1|20150601|assigned|org-gamma|e-stats',
  // 203.0.113.0 + 512 addresses: one delegation of two /24s.
  'arin|US|ipv4|203.0.113.0|512|20110420|allocated|org-acme|e-stats',
  // 198.51.100.0 + 768: not one CIDR block (a /23 and a /24).
  'lacnic|BR|ipv4|198.51.100.0|768|20090909|assigned|org-delta|e-stats',
  'ripencc|DE|ipv4|192.0.2.0|512|20120102|allocated|org-beta|e-stats',
  'apnic|JP|ipv6|2001:db8::|32|20150602|allocated|org-gamma|e-stats',
  'afrinic|ZA|ipv4|100.64.0.0|65536||allocated|org-epsilon|e-stats',
  'arin|ZZ|ipv4|172.16.0.0|4096|00000000|available||e-stats',
  'ripencc||ipv6|2a00::|12|20050101|reserved||e-stats',
  ...Array.from({ length: 200 }, (_, i) => `ripencc|NL|ipv4|10.${i}.0.0|65536|2001${String((i % 12) + 1).padStart(2, '0')}01|allocated|org-bulk${i}|e-stats`),
  ...Array.from({ length: 100 }, (_, i) => `apnic|AU|ipv6|2400:${(i + 1).toString(16)}::|32|20160101|allocated|org-v6-${i}|e-stats`),
  'arin|US|ipv4|not-an-address|256|20100101|allocated|org-x|e-stats',
  'arin|US|ipv4',
  '',
].join('\n');

const bulkV4 = (origin: (i: number) => number) => Array.from({ length: 200 }, (_, i) => `10.${i}.0.0\t16\t${origin(i)}`);
const bulkV6 = (origin: (i: number) => number) => Array.from({ length: 100 }, (_, i) => `2400:${(i + 1).toString(16)}::\t32\t${origin(i)}`);

/** 2026-10-01: the baseline. */
export const PFX2AS_OCT = [
  '203.0.113.0\t24\t64500',
  '198.51.100.0\t24\t64501',
  '192.0.2.0\t23\t64510',
  '2001:db8:100::\t48\t64520',
  '100.64.0.0\t16\t64530,64531',
  ...bulkV4((i) => 65000 + i),
  ...bulkV6((i) => 66000 + i),
  '',
].join('\n');

/**
 * 2026-11-01: 198.51.100.0/24 moves from 64501 to 64502 (64501 no longer announces it: an origin
 * change, no hijack); 192.0.2.0/24 appears from 64666 while 64510 still announces 192.0.2.0/23 (a
 * more specific hijack); 2001:db8:100::/48 gains 64667 beside 64520 (a second origin); 10.7.0.0/16
 * moves to 65999 (origin change); 10.8.0.0/16 is withdrawn.
 */
export const PFX2AS_NOV = [
  '203.0.113.0\t24\t64500',
  '198.51.100.0\t24\t64502',
  '192.0.2.0\t23\t64510',
  '192.0.2.0\t24\t64666',
  '2001:db8:100::\t48\t64520_64667',
  '100.64.0.0\t16\t64530,64531',
  ...bulkV4((i) => (i === 7 ? 65999 : 65000 + i)).filter((l) => !l.startsWith('10.8.0.0\t')),
  ...bulkV6((i) => 66000 + i),
  '',
].join('\n');

/** CAIDA as2org: organisations, then ASes naming them. */
export const AS2ORG_FILE = [
  '# format:org_id|changed|org_name|country|source',
  'ORG-ACME|20260101|Acme Networks, Inc.|US|ARIN',
  'ORG-BETA|20260101|Beta Hosting GmbH|DE|RIPE',
  'ORG-GAMMA|20260101|Gamma KK|JP|APNIC',
  'ORG-EVIL|20260101|Mallory Transit|RU|RIPE',
  '# format:aut|changed|aut_name|org_id|opaque_id|source',
  '64500|20260101|ACME-NET|ORG-ACME|x|ARIN',
  '64510|20260101|BETA-AS|ORG-BETA|x|RIPE',
  '64520|20260101|GAMMA-AS|ORG-GAMMA|x|APNIC',
  '64666|20260101|MALLORY|ORG-EVIL|x|RIPE',
  '64400|20260101|UPSTREAM-ONE|ORG-ACME|x|ARIN',
  'notanumber|20260101|X|ORG-X|x|ARIN',
  '',
].join('\n');

export const SIMPLE_ASNAMES_FILE = ['asn,name,country', '64500,"ACME-NET, Acme Networks",US', 'AS64502,NEWCO,GB', '64401,UPSTREAM-TWO', 'x,y,z', ''].join('\n');

export const ASREL_FILE = [
  '# source: test slice of CAIDA serial-1',
  '64400|64500|-1',
  '64401|64500|-1',
  '64500|64600|0',
  '64601|64500|0',
  '64500|64700|-1',
  '64400|64510|-1',
  '64500|64500|0',
  '1|2|7',
  '',
].join('\n');
