import { promises as dns } from 'node:dns';
import { isIP, isIPv4, isIPv6 } from 'node:net';
import { AppError, ERROR_CODES } from '../shared/errors.js';

/**
 * The SSRF guard for webhook URLs: a customer-supplied URL must only ever reach public addresses.
 * The check runs at creation and again at every delivery on the address actually connected to,
 * because DNS can answer differently the second time (DNS rebinding).
 */

type Range = { prefix: Uint8Array; bits: number; reason: string };

function range(cidr: string, reason = ''): Range {
  const [text = '', bits = ''] = cidr.split('/');
  const prefix = parseIPv4(text) ?? parseIPv6(text);
  if (prefix === undefined) throw new Error(`bad range ${cidr}`);
  return { prefix, bits: Number(bits), reason };
}

function compile(table: ReadonlyArray<readonly [cidr: string, reason: string]>): Range[] {
  return table.map(([cidr, reason]) => range(cidr, reason));
}

/** First match wins, so single addresses come before the ranges that contain them. */
const V4_RANGES = compile([
  ['169.254.169.254/32', 'metadata'], // AWS, GCP, Azure, OpenStack instance metadata
  ['169.254.170.2/32', 'metadata'], // AWS ECS task credentials
  ['100.100.100.200/32', 'metadata'], // Alibaba Cloud
  ['168.63.129.16/32', 'metadata'], // Azure wireserver: looks public, reaches the host agent
  ['255.255.255.255/32', 'broadcast'],
  ['0.0.0.0/8', 'unspecified'], // connecting to 0.0.0.0 reaches this host
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'cgnat'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link_local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'],
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', 'reserved'], // retired 6to4 relay anycast
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
]);

const V6_RANGES = compile([
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['100::/64', 'discard'],
  ['2001::/32', 'reserved'], // Teredo tunnels to an obfuscated IPv4 we will not unpick
  ['2001:2::/48', 'benchmarking'],
  ['2001:db8::/32', 'documentation'],
  ['2001::/23', 'reserved'], // IETF protocol assignments: none is a webhook receiver
  ['3fff::/20', 'documentation'],
  ['fd00:ec2::254/128', 'metadata'], // AWS instance metadata over IPv6
  ['fc00::/7', 'unique_local'],
  ['fe80::/10', 'link_local'],
  ['fec0::/10', 'site_local'],
  ['ff00::/8', 'multicast'],
]);

/** Forms that carry an IPv4 address inside an IPv6 one: a relay or the kernel would connect to that IPv4. */
const MAPPED = range('::ffff:0:0/96');
const COMPATIBLE = range('::/96');
const NAT64 = range('64:ff9b::/96');
const NAT64_LOCAL = range('64:ff9b:1::/48');
const SIX_TO_FOUR = range('2002::/16');
const GLOBAL_UNICAST = range('2000::/3');

function inRange(bytes: Uint8Array, { prefix, bits }: Range): boolean {
  for (let bit = 0; bit < bits; bit += 8) {
    const take = Math.min(8, bits - bit);
    const mask = (0xff << (8 - take)) & 0xff;
    if (((bytes[bit / 8]! ^ prefix[bit / 8]!) & mask) !== 0) return false;
  }
  return true;
}

function parseIPv4(text: string): Uint8Array | undefined {
  if (!isIPv4(text)) return undefined;
  return Uint8Array.from(text.split('.').map(Number));
}

function parseIPv6(text: string): Uint8Array | undefined {
  if (!isIPv6(text)) return undefined;
  // isIPv6 has vetted the syntax, so all that is left is expanding '::' and a trailing dotted quad.
  const wordsOf = (part: string): number[] =>
    part === ''
      ? []
      : part.split(':').flatMap((group) => {
          const v4 = parseIPv4(group);
          return v4 === undefined ? [parseInt(group, 16)] : [(v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!];
        });
  const [head = '', tail] = text.split('::');
  const left = wordsOf(head);
  const right = tail === undefined ? [] : wordsOf(tail);
  const words = [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right];
  const bytes = new Uint8Array(16);
  words.forEach((word, i) => bytes.set([word >> 8, word & 0xff], i * 2));
  return bytes;
}

function reasonV4(bytes: Uint8Array): string | undefined {
  return V4_RANGES.find((r) => inRange(bytes, r))?.reason;
}

function reasonV6(bytes: Uint8Array): string | undefined {
  const exact = V6_RANGES.find((r) => r.bits === 128 && inRange(bytes, r));
  if (exact !== undefined) return exact.reason;
  if (inRange(bytes, MAPPED) || inRange(bytes, NAT64)) return reasonV4(bytes.subarray(12));
  // Deprecated form with no legitimate use; judging the IPv4 first gives the more useful reason.
  if (inRange(bytes, COMPATIBLE)) return reasonV4(bytes.subarray(12)) ?? 'reserved';
  if (inRange(bytes, NAT64_LOCAL)) {
    // Only the /96 layout puts the IPv4 in the last four bytes; a shorter local prefix spreads it
    // across the middle, which we refuse rather than guess at.
    const layout96 = bytes.subarray(6, 12).every((b) => b === 0);
    return layout96 ? reasonV4(bytes.subarray(12)) : 'reserved';
  }
  if (inRange(bytes, SIX_TO_FOUR)) return reasonV4(bytes.subarray(2, 6));
  const listed = V6_RANGES.find((r) => inRange(bytes, r));
  if (listed !== undefined) return listed.reason;
  // Everything allocated for the public internet is in 2000::/3; the rest is reserved by IANA.
  return inRange(bytes, GLOBAL_UNICAST) ? undefined : 'reserved';
}

/** Why an address is not public, or undefined when it is public. */
export function blockedReason(ip: string): string | undefined {
  const zone = ip.indexOf('%');
  if (zone !== -1) {
    // Only scoped (link-local) addresses need a zone; no public receiver is reached through one.
    const bytes = /^[\w.-]+$/.test(ip.slice(zone + 1)) ? parseIPv6(ip.slice(0, zone)) : undefined;
    return bytes === undefined ? 'not_an_ip' : (reasonV6(bytes) ?? 'link_local');
  }
  const v4 = parseIPv4(ip);
  if (v4 !== undefined) return reasonV4(v4);
  const v6 = parseIPv6(ip);
  return v6 === undefined ? 'not_an_ip' : reasonV6(v6);
}

export type Resolver = (hostname: string) => Promise<Array<{ address: string; family: 4 | 6 }>>;

/** dns.promises.lookup(hostname, { all: true, verbatim: true }) */
export const systemResolver: Resolver = async (hostname) => {
  const results = await dns.lookup(hostname, { all: true, verbatim: true });
  return results.map(({ address, family }) => ({ address, family: family === 6 ? 6 : 4 }));
};

type Resolved = Awaited<ReturnType<Resolver>>;

export interface AddressPolicy {
  allowPrivate: boolean;
  resolve: Resolver;
}

const PUBLIC_ONLY = 'webhook URL must resolve to a public address';

function invalidUrl(message: string, cause?: unknown): AppError {
  return new AppError(ERROR_CODES.invalidUrl, message, { statusCode: 422, cause });
}

function blocked(message: string, details: Record<string, unknown>, statusCode?: number): AppError {
  return new AppError(ERROR_CODES.blockedAddress, message, { statusCode, details, retryable: false });
}

/** Names that resolve locally on many hosts without any DNS query we could inspect. */
function isLocalName(host: string): boolean {
  const name = host.endsWith('.') ? host.slice(0, -1) : host;
  return name === 'localhost' || name.endsWith('.localhost') || name === 'metadata.google.internal';
}

function firstBlocked(host: string, addresses: Resolved, statusCode?: number): AppError | undefined {
  for (const { address } of addresses) {
    const reason = blockedReason(address);
    // One private answer is enough: the socket may connect to any of them. The message reaches the
    // customer, so it names only their own host: echoing the answer would map our internal DNS
    // for anyone who can create a webhook. The address stays in `details`, which only logs see.
    if (reason !== undefined) return blocked(`webhook URL host ${host} does not resolve to a public address`, { host, address, reason }, statusCode);
  }
  return undefined;
}

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** Validates a webhook URL at creation; see the module comment for why resolution is checked again later. */
export async function checkWebhookUrl(raw: string, policy: AddressPolicy): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch (e: unknown) {
    throw invalidUrl('webhook URL is not a valid URL', e);
  }
  const httpAllowed = policy.allowPrivate && url.protocol === 'http:';
  if (url.protocol !== 'https:' && !httpAllowed) throw invalidUrl('webhook URL must use https');
  // Credentials in the URL would be stored and logged as plain text with the endpoint.
  if (url.username !== '' || url.password !== '') throw invalidUrl('webhook URL must not carry credentials');
  // The WHATWG parser has already turned 2130706433, 0x7f.1 and [::ffff:127.0.0.1] into canonical IPs.
  const host = unbracket(url.hostname);
  if (host === '') throw invalidUrl('webhook URL has no host');
  if (policy.allowPrivate) {
    if (isIP(host) === 0) await resolveOrThrow(host, policy);
    return url;
  }
  if (isIP(host) !== 0) {
    const reason = blockedReason(host);
    if (reason !== undefined) throw blocked(`${PUBLIC_ONLY}: ${host} (${reason})`, { host, address: host, reason }, 422);
    return url;
  }
  if (isLocalName(host)) throw blocked(`${PUBLIC_ONLY}: ${host} is a local name`, { host, reason: 'local_name' }, 422);
  const error = firstBlocked(host, await resolveOrThrow(host, policy), 422);
  if (error !== undefined) throw error;
  return url;
}

async function resolveOrThrow(host: string, policy: AddressPolicy): Promise<Resolved> {
  let addresses: Resolved;
  try {
    addresses = await policy.resolve(host);
  } catch (e: unknown) {
    throw invalidUrl(`webhook URL host ${host} does not resolve`, e);
  }
  if (addresses.length === 0) throw invalidUrl(`webhook URL host ${host} does not resolve`);
  return addresses;
}

/**
 * A `lookup` for net.connect / tls.connect, so that the address checked is the one connected to:
 * checking a name and then letting the socket resolve it again would let a rebinding DNS server
 * answer public first and private second.
 */
export function guardedLookup(
  policy: AddressPolicy,
): (hostname: string, options: object, callback: (...args: any[]) => void) => void {
  return (hostname, options, callback) => {
    const { all, family } = options as { all?: boolean; family?: number | string };
    const wanted = family === 4 || family === 'IPv4' ? 4 : family === 6 || family === 'IPv6' ? 6 : undefined;
    const deliver = (addresses: Resolved): void => {
      const error = policy.allowPrivate ? undefined : firstBlocked(hostname, addresses);
      if (error !== undefined) return callback(error);
      const usable = wanted === undefined ? addresses : addresses.filter((a) => a.family === wanted);
      const first = usable[0];
      if (first === undefined) {
        callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname }));
      } else if (all === true) {
        callback(null, usable.map(({ address, family: f }) => ({ address, family: f })));
      } else {
        callback(null, first.address, first.family);
      }
    };
    // Two-argument then: an exception thrown by the callback must not call it a second time.
    policy.resolve(hostname).then(deliver, (e: unknown) => callback(e));
  };
}

/** For an IP-literal host at delivery time (lookup is skipped by Node for literals). */
export function assertConnectable(ip: string, policy: AddressPolicy): void {
  if (policy.allowPrivate) return;
  const address = unbracket(ip);
  const reason = blockedReason(address);
  if (reason !== undefined) throw blocked(`${PUBLIC_ONLY}: ${address} (${reason})`, { host: address, address, reason });
}
