import { isIPv4, isIPv6 } from 'node:net';

/** An address family as the stores keep it: 4 or 6. */
export type IpFamily = 4 | 6;

/** Bytes of a fixed-width key per family: keys of one family compare as memcmp does, which is numeric order. */
export const KEY_BYTES: Readonly<Record<IpFamily, number>> = { 4: 4, 6: 16 };
export const FAMILY_BITS: Readonly<Record<IpFamily, number>> = { 4: 32, 6: 128 };

/** An address as a fixed-width big-endian key. */
export interface IpKey {
  family: IpFamily;
  key: Buffer;
}

/**
 * A textual IPv4 or IPv6 address as a key, or undefined when it is none. An IPv4-mapped IPv6
 * address (`::ffff:192.0.2.1`) is the IPv4 address: routing tables and registries list it there.
 * No zone (`%eth0`), no brackets, no prefix length: a lookup takes one address.
 */
export function parseIp(text: string): IpKey | undefined {
  const s = text.trim();
  if (isIPv4(s)) return { family: 4, key: Buffer.from(s.split('.').map(Number)) };
  if (!isIPv6(s) || s.includes('%')) return undefined;
  const key = ipv6Bytes(s);
  if (key.subarray(0, 10).every((b) => b === 0) && key[10] === 0xff && key[11] === 0xff) return { family: 4, key: Buffer.from(key.subarray(12)) };
  return { family: 6, key };
}

function ipv6Bytes(s: string): Buffer {
  let text = s.toLowerCase();
  const lastColon = text.lastIndexOf(':');
  if (text.slice(lastColon + 1).includes('.')) {
    // An embedded IPv4 tail (`::ffff:192.0.2.1`) is the last two groups, written in decimal.
    const [a = 0, b = 0, c = 0, d = 0] = text.slice(lastColon + 1).split('.').map(Number);
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', rest] = text.split('::') as [string, string | undefined];
  const groups = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const left = groups(head);
  const right = rest === undefined ? [] : groups(rest);
  const words = rest === undefined ? left : [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  const out = Buffer.alloc(16);
  words.forEach((w, i) => out.writeUInt16BE(w, i * 2));
  return out;
}

/** A key back as text: dotted quad, or RFC 5952's compressed lower-case IPv6 form. */
export function keyToText(family: IpFamily, key: Uint8Array): string {
  if (family === 4) return `${key[0]}.${key[1]}.${key[2]}.${key[3]}`;
  const words: number[] = [];
  for (let i = 0; i < 16; i += 2) words.push((key[i]! << 8) | key[i + 1]!);
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j;
  }
  const hex = words.map((w) => w.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

export function keyToBigInt(key: Uint8Array): bigint {
  let n = 0n;
  for (const b of key) n = (n << 8n) | BigInt(b);
  return n;
}

export function bigIntToKey(n: bigint, family: IpFamily): Buffer {
  const out = Buffer.alloc(KEY_BYTES[family]);
  for (let i = out.length - 1; i >= 0; i--) {
    out[i] = Number(n & 0xffn);
    n >>= 8n;
  }
  return out;
}

/** The first and last address of `key/length`; the key's host bits are cleared. */
export function prefixBounds(family: IpFamily, key: Uint8Array, length: number): { first: bigint; last: bigint } {
  const hostBits = BigInt(FAMILY_BITS[family] - length);
  const first = (keyToBigInt(key) >> hostBits) << hostBits;
  return { first, last: first + (1n << hostBits) - 1n };
}

/** `address/length` with the host bits cleared, as a CIDR is written. */
export function cidrText(family: IpFamily, first: bigint, length: number): string {
  return `${keyToText(family, bigIntToKey(first, family))}/${length}`;
}

/** A CIDR (`192.0.2.0/24`, `2001:db8::/32`) as key and length, host bits cleared; undefined when it is none. */
export function parseCidr(text: string): { family: IpFamily; key: Buffer; length: number } | undefined {
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  return prefixOf(text.slice(0, slash), text.slice(slash + 1));
}

/** An address and a length, as pfx2as writes them in two columns. */
export function prefixOf(address: string, lengthText: string): { family: IpFamily; key: Buffer; length: number } | undefined {
  if (!/^\d{1,3}$/.test(lengthText)) return undefined;
  const s = address.trim();
  // Not parseIp: a prefix of the IPv4-mapped range stays IPv6 with its own length.
  const family: IpFamily | undefined = isIPv4(s) ? 4 : isIPv6(s) && !s.includes('%') ? 6 : undefined;
  if (family === undefined) return undefined;
  const length = Number(lengthText);
  if (length > FAMILY_BITS[family]) return undefined;
  const raw = family === 4 ? Buffer.from(s.split('.').map(Number)) : ipv6Bytes(s);
  return { family, key: bigIntToKey(prefixBounds(family, raw, length).first, family), length };
}
