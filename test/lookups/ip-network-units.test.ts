import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseAsNamesLine, parseAsRelLine, parsePfx2asLine, parseRirLine } from '../../src/lookups/ip/ip-import-formats.js';
import { lines } from '../../src/lookups/ip/ip-imports.js';
import { RangeTable, keyWords } from '../../src/lookups/ip/range-table.js';
import { bigIntToKey, keyToText, parseCidr, parseIp } from '../../src/shared/ip-keys.js';

describe('addresses as keys', () => {
  it.each([
    ['192.0.2.1', '192.0.2.1'],
    [' 10.0.0.255 ', '10.0.0.255'],
    ['2001:DB8::1', '2001:db8::1'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1'],
    ['2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::1'],
    ['::', '::'],
    ['::1', '::1'],
    ['1::', '1::'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2:3:4:5:6'],
    ['::ffff:192.0.2.1', '192.0.2.1'],
    ['::ffff:c000:201', '192.0.2.1'],
    ['64:ff9b::192.0.2.33', '64:ff9b::c000:221'],
  ])('%j reads as %j', (input, canonical) => {
    const key = parseIp(input);
    expect(key && keyToText(key.family, key.key)).toBe(canonical);
  });

  it.each(['', '1.2.3', '256.1.1.1', '01.2.3.4', '192.0.2.0/24', 'fe80::1%eth0', '[::1]', '1.2.3.4:80', 'example.com', ':::'])('%j is no address', (input) => {
    expect(parseIp(input)).toBeUndefined();
  });

  it('clears host bits of a CIDR and keeps its length', () => {
    expect(parseCidr('10.1.2.3/8')).toEqual({ family: 4, key: Buffer.from([10, 0, 0, 0]), length: 8 });
    const v6 = parseCidr('2001:db8:ffff::1/32')!;
    expect([v6.family, keyToText(6, v6.key), v6.length]).toEqual([6, '2001:db8::', 32]);
    expect(parseCidr('10.0.0.0/33')).toBeUndefined();
  });
});

describe('import lines', () => {
  it.each([
    ['2.3|nro|20261101|420|19821213|20261101|+0000', { kind: 'date', date: '2026-11-01' }],
    ['2|apnic|x|1|19830613|20261102|+1000', { kind: 'date', date: '2026-11-02' }],
    ['apnic|*|ipv4|*|1|summary', { kind: 'skip' }],
    ['arin|ZZ|ipv4|172.16.0.0|4096|00000000|available||e-stats', { kind: 'skip' }],
    ['arin|US|ipv4|1.2.3.0|256|2010-01-01|allocated|x|e-stats', { kind: 'invalid', code: 'invalid_date' }],
    ['arin|US|ipv4|255.255.255.0|512|20100101|allocated|x|e-stats', { kind: 'invalid', code: 'invalid_prefix' }],
    ['arin|US|ipv6|2001:db8::|129|20100101|allocated|x|e-stats', { kind: 'invalid', code: 'invalid_prefix' }],
    ['arin|US|asn|x|1|20100101|allocated|x|e-stats', { kind: 'invalid', code: 'invalid_asn' }],
    ['arin|US|asn|64500|1|20100101|allocated||e-stats', { kind: 'skip' }],
    ['arin|US|other|1|1|20100101|allocated|x', { kind: 'invalid', code: 'malformed_line' }],
  ])('RIR %j', (line, expected) => {
    expect(parseRirLine(line)).toMatchObject(expected);
  });

  it('RIR: an IPv4 count is a range, an IPv6 length a prefix, a blank country or ZZ is null', () => {
    const v4 = parseRirLine('lacnic|br|ipv4|198.51.100.0|768|20090909|assigned|org-d') as { kind: 'range'; row: { startKey: Buffer; endKey: Buffer; cc: string | null; opaqueId: string | null } };
    expect([keyToText(4, v4.row.startKey), keyToText(4, v4.row.endKey), v4.row.cc, v4.row.opaqueId]).toEqual(['198.51.100.0', '198.51.102.255', 'BR', 'org-d']);
    const v6 = parseRirLine('ripencc||ipv6|2001:db8::|32||allocated') as { kind: 'range'; row: { endKey: Buffer; cc: string | null; allocatedAt: string | null; opaqueId: string | null } };
    expect([keyToText(6, v6.row.endKey), v6.row.cc, v6.row.allocatedAt, v6.row.opaqueId]).toEqual(['2001:db8:ffff:ffff:ffff:ffff:ffff:ffff', null, null, null]);
  });

  it.each([
    ['192.0.2.0\t24\t64500', { kind: 'prefix', row: { family: 4, length: 24, origins: '64500' } }],
    ['192.0.2.7\t24\t64500_64501', { kind: 'prefix', row: { family: 4, length: 24, origins: '64500_64501', startKey: Buffer.from([192, 0, 2, 0]) } }],
    ['2001:db8::\t32\t1,2,3', { kind: 'prefix', row: { family: 6, length: 32, origins: '1,2,3' } }],
    ['192.0.2.0 24 64500', { kind: 'prefix' }],
    ['192.0.2.0\t33\t64500', { kind: 'invalid', code: 'invalid_prefix' }],
    ['192.0.2.0\t24\tAS64500', { kind: 'invalid', code: 'invalid_asn' }],
    ['192.0.2.0\t24\t64500__1', { kind: 'invalid', code: 'invalid_asn' }],
    ['192.0.2.0\t24\t99999999999', { kind: 'invalid', code: 'invalid_asn' }],
    ['192.0.2.0\t24', { kind: 'invalid', code: 'malformed_line' }],
  ])('pfx2as %j', (line, expected) => {
    expect(parsePfx2asLine(line)).toMatchObject(expected);
  });

  it.each([
    ['ORG-X|20260101|X, Inc.|us|ARIN', { kind: 'asOrg', row: { orgId: 'ORG-X', name: 'X, Inc.', country: 'US' } }],
    ['64500|20260101|X-NET|ORG-X|oid|ARIN', { kind: 'asName', row: { asn: 64500, name: 'X-NET', orgId: 'ORG-X', country: null } }],
    ['64500|20260101|X-NET|ORG-X', { kind: 'invalid', code: 'malformed_line' }],
    ['AS64500,X-NET,DE', { kind: 'asName', row: { asn: 64500, name: 'X-NET', country: 'DE' } }],
    ['64500,"X-NET, the ""real"" one",DE', { kind: 'asName', row: { name: 'X-NET, the "real" one', country: 'DE' } }],
    ['64500,X-NET, Y', { kind: 'asName', row: { name: 'X-NET, Y', country: null } }],
    ['64500,X-NET', { kind: 'asName', row: { name: 'X-NET', country: null } }],
    ['asn,name,country', { kind: 'skip' }],
    ['64500,,DE', { kind: 'invalid', code: 'malformed_line' }],
  ])('AS names %j', (line, expected) => {
    expect(parseAsNamesLine(line)).toMatchObject(expected);
  });

  it.each([
    ['1|2|-1', { kind: 'asRel', row: { a: 1, b: 2, rel: -1 } }],
    ['1|2|0|bgp', { kind: 'asRel', row: { a: 1, b: 2, rel: 0 } }],
    ['1|2|1', { kind: 'invalid', code: 'malformed_line' }],
    ['1|1|0', { kind: 'invalid', code: 'invalid_asn' }],
    ['# comment', { kind: 'skip' }],
  ])('as-rel %j', (line, expected) => {
    expect(parseAsRelLine(line)).toMatchObject(expected);
  });

  it('splits lines across chunks, drops CRs, and yields an overlong line as undefined without keeping it', async () => {
    const chunks = ['a\r', '\nb', 'c\n', 'x'.repeat(70_000), 'y'.repeat(10), '\nlast'];
    const out: (string | undefined)[] = [];
    for await (const line of lines(Readable.from(chunks.map((c) => Buffer.from(c))))) out.push(line);
    expect(out).toEqual(['a', 'bc', undefined, 'last']);
  });
});

describe('RangeTable', () => {
  it('finds the innermost range as a brute-force scan does, over random nested IPv4 and IPv6 prefixes', () => {
    let seed = 1;
    const next = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    for (const [family, bits] of [[4, 32], [6, 128]] as const) {
      const prefixes: { first: bigint; last: bigint; length: number }[] = [];
      for (let i = 0; i < 400; i++) {
        const length = Math.floor(next() * 12) + (family === 4 ? 8 : 20);
        const top = BigInt(Math.floor(next() * 64)) << BigInt(bits - 6);
        const host = BigInt(bits - length);
        const first = ((top + (BigInt(Math.floor(next() * 2 ** 20)) << BigInt(bits - 26))) >> host) << host;
        prefixes.push({ first, last: first + (1n << host) - 1n, length });
      }
      const table = RangeTable.build(family, prefixes.length, (i) => prefixes[i]!.first, (i) => prefixes[i]!.last);
      for (let q = 0; q < 2000; q++) {
        const probe = q % 2 === 0 ? prefixes[q % prefixes.length]!.first + BigInt(Math.floor(next() * 1000)) : BigInt(Math.floor(next() * 64)) << BigInt(bits - 6);
        const hits = prefixes.map((p, i) => ({ ...p, i })).filter((p) => p.first <= probe && probe <= p.last);
        const longest = Math.max(-1, ...hits.map((h) => h.length));
        const found = table.find(keyWords(bigIntToKey(probe, family)));
        if (longest < 0) expect(found).toBe(-1);
        else {
          expect(prefixes[found]!.length).toBe(longest);
          expect(prefixes[found]!.first <= probe && probe <= prefixes[found]!.last).toBe(true);
          expect(table.chain(found).map((i) => prefixes[i]!.length)).toEqual(hits.map((h) => h.length).sort((a, b) => b - a));
        }
      }
    }
  });
});
