import { BlockList, isIPv4, isIPv6 } from 'node:net';
import { DNS_RCODES, type DnsResolver } from '../dns/dns-resolver.js';
import { txtLookup, withPrefix } from './dns-txt.js';

/** RFC 7208 4.6.4: at most 10 terms that cause DNS lookups, and (4.6.4 again) at most 2 void lookups. */
export const SPF_LOOKUP_LIMIT = 10;
export const SPF_VOID_LIMIT = 2;

export const SPF_RESULTS = ['none', 'neutral', 'pass', 'fail', 'softfail', 'temperror', 'permerror'] as const;
export type SpfResult = (typeof SPF_RESULTS)[number];

export interface SpfReport {
  record: string | null;
  /** check_host() for `ip` (the domain's first mail server), or the `all` qualifier with no IP. */
  result: SpfResult;
  /** The IP the result is for; null when the domain has no mail server address to test. */
  checked_ip: string | null;
  lookups: number;
  void_lookups: number;
  lookup_limit: number;
  void_limit: number;
  /** Why a permerror or temperror (`too_many_lookups`, `multiple_records`, ...); null otherwise. */
  error: string | null;
}

const QUALIFIERS: Record<string, SpfResult> = { '+': 'pass', '-': 'fail', '~': 'softfail', '?': 'neutral' };

class SpfError extends Error {
  constructor(readonly result: 'permerror' | 'temperror', readonly why: string) {
    super(why);
  }
}

/**
 * Our own check_host() over the shared DNS layer, not mailauth: mailauth 4.x (the line that runs on
 * Node 20) takes a resolver too, but we need the lookup counts as data, which it does not return.
 * Macros (RFC 7208 section 7) are not expanded: a term using one is a permerror here, said as such.
 */
export async function checkSpf(resolver: DnsResolver, domain: string, ip: string | null, signal?: AbortSignal): Promise<SpfReport> {
  const counts = { lookups: 0, voids: 0 };
  const base = { checked_ip: ip, lookup_limit: SPF_LOOKUP_LIMIT, void_limit: SPF_VOID_LIMIT };
  const top = await spfRecord(resolver, domain, signal);
  if (top.kind !== 'record') {
    return { ...base, record: null, result: top.kind === 'error' ? 'temperror' : top.kind === 'multiple' ? 'permerror' : 'none', lookups: 0, void_lookups: 0, error: top.kind === 'none' ? null : top.kind === 'multiple' ? 'multiple_records' : 'dns_error' };
  }
  try {
    const result = await evaluate(resolver, domain, top.record, ip, counts, signal, 0);
    return { ...base, record: top.record, result, lookups: counts.lookups, void_lookups: counts.voids, error: null };
  } catch (e: unknown) {
    if (!(e instanceof SpfError)) throw e;
    return { ...base, record: top.record, result: e.result, lookups: counts.lookups, void_lookups: counts.voids, error: e.why };
  }
}

type Fetched = { kind: 'record'; record: string } | { kind: 'none' } | { kind: 'multiple' } | { kind: 'error' };

async function spfRecord(resolver: DnsResolver, domain: string, signal?: AbortSignal): Promise<Fetched> {
  const txt = await txtLookup(resolver, domain, signal);
  if (txt.status === 'error') return { kind: 'error' };
  const records = withPrefix(txt.values, /^v=spf1(\s|$)/i);
  if (records.length === 0) return { kind: 'none' };
  if (records.length > 1) return { kind: 'multiple' };
  return { kind: 'record', record: records[0]!.trim() };
}

async function evaluate(
  resolver: DnsResolver,
  domain: string,
  record: string,
  ip: string | null,
  counts: { lookups: number; voids: number },
  signal: AbortSignal | undefined,
  depth: number,
): Promise<SpfResult> {
  const terms = record.split(/\s+/).slice(1).filter((t) => t !== '');
  let redirect: string | null = null;
  let allResult: SpfResult | null = null;
  let matched: SpfResult | null = null;
  const count = (): void => {
    counts.lookups++;
    if (counts.lookups > SPF_LOOKUP_LIMIT) throw new SpfError('permerror', 'too_many_lookups');
  };
  const voided = (): void => {
    counts.voids++;
    if (counts.voids > SPF_VOID_LIMIT) throw new SpfError('permerror', 'too_many_void_lookups');
  };
  for (const term of terms) {
    if (term.includes('%')) throw new SpfError('permerror', 'macros_not_supported');
    const modifier = /^([a-z][a-z0-9_.-]*)=(.*)$/i.exec(term);
    if (modifier) {
      if (modifier[1]!.toLowerCase() === 'redirect') redirect = modifier[2]!;
      continue;
    }
    const m = /^([+\-~?]?)([a-z0-9]+)(?::([^/]*))?(\/\d+)?(\/\/\d+)?$/i.exec(term);
    if (!m) throw new SpfError('permerror', 'syntax');
    const qualifier = QUALIFIERS[m[1] || '+']!;
    const mechanism = m[2]!.toLowerCase();
    const target = m[3] || domain;
    let hit = false;
    switch (mechanism) {
      case 'all':
        allResult ??= qualifier;
        hit = ip !== null;
        break;
      case 'ip4':
      case 'ip6':
        hit = ip !== null && inNetwork(ip, m[3] ?? '', m[4] ?? (mechanism === 'ip4' ? '/32' : '/128'));
        break;
      case 'include': {
        count();
        const inner = await spfRecord(resolver, target, signal);
        if (inner.kind === 'error') throw new SpfError('temperror', 'dns_error');
        if (inner.kind === 'none') {
          voided();
          throw new SpfError('permerror', 'include_without_record');
        }
        if (inner.kind === 'multiple') throw new SpfError('permerror', 'multiple_records');
        const result = await evaluate(resolver, target, inner.record, ip, counts, signal, depth + 1);
        hit = result === 'pass';
        break;
      }
      case 'a':
      case 'mx':
      case 'exists': {
        count();
        const hosts = mechanism === 'mx' ? await mxHosts(resolver, target, voided, signal) : [target];
        const addresses: string[] = [];
        for (const host of hosts) addresses.push(...(await addressesOf(resolver, host, mechanism === 'exists' ? 'A' : ip !== null && isIPv6(ip) ? 'AAAA' : 'A', voided, signal)));
        hit = ip !== null && (mechanism === 'exists' ? addresses.length > 0 : addresses.some((a) => inNetwork(ip, a, (isIPv6(ip) ? m[5]?.slice(1) : m[4]) ?? (isIPv6(ip) ? '/128' : '/32'))));
        break;
      }
      case 'ptr':
        // Counted as RFC 7208 says; not evaluated (it asks for reverse DNS and is deprecated, 5.5).
        count();
        break;
      default:
        throw new SpfError('permerror', 'unknown_mechanism');
    }
    if (hit && matched === null) matched = qualifier;
    if (matched !== null && ip !== null) return matched;
  }
  if (redirect !== null && allResult === null) {
    count();
    const inner = await spfRecord(resolver, redirect, signal);
    if (inner.kind === 'error') throw new SpfError('temperror', 'dns_error');
    if (inner.kind !== 'record') {
      if (inner.kind === 'none') voided();
      throw new SpfError('permerror', 'redirect_without_record');
    }
    return evaluate(resolver, redirect, inner.record, ip, counts, signal, depth + 1);
  }
  if (ip === null) return depth === 0 ? (allResult ?? 'neutral') : 'neutral';
  return 'neutral';
}

async function mxHosts(resolver: DnsResolver, name: string, voided: () => void, signal?: AbortSignal): Promise<string[]> {
  const answer = await resolver.query(name, 'MX', signal);
  if (answer.rcode !== DNS_RCODES.noError && answer.rcode !== DNS_RCODES.nxDomain) throw new SpfError('temperror', 'dns_error');
  const hosts = answer.records.flatMap((r) => (r.type === 'MX' ? [r.exchange] : []));
  if (hosts.length === 0) voided();
  return hosts.slice(0, 10);
}

async function addressesOf(resolver: DnsResolver, name: string, type: 'A' | 'AAAA', voided: () => void, signal?: AbortSignal): Promise<string[]> {
  const answer = await resolver.query(name, type, signal);
  if (answer.rcode !== DNS_RCODES.noError && answer.rcode !== DNS_RCODES.nxDomain) throw new SpfError('temperror', 'dns_error');
  const values = answer.records.flatMap((r) => (r.type === type ? [r.value] : []));
  if (values.length === 0) voided();
  return values;
}

function inNetwork(ip: string, network: string, prefix: string): boolean {
  const family = isIPv4(ip) ? 'ipv4' : 'ipv6';
  if ((family === 'ipv4' && !isIPv4(network)) || (family === 'ipv6' && !isIPv6(network))) return false;
  const bits = Number(prefix.replace(/^\/+/, ''));
  const list = new BlockList();
  try {
    list.addSubnet(network, bits, family);
  } catch {
    throw new SpfError('permerror', 'syntax');
  }
  return list.check(ip, family);
}
