import { isIP } from 'node:net';
import { DNS_RCODES, type DnsAnswer, type DnsResolver } from '../dns/dns-resolver.js';

export type MxStep =
  /** Hosts in preference order; `implicit` when the domain has no MX but an address (RFC 5321 §5.1). */
  | { kind: 'hosts'; hosts: string[]; implicit: boolean }
  /** RFC 7505 `MX 0 .`: the domain says it takes no mail. */
  | { kind: 'null_mx' }
  | { kind: 'nxdomain' }
  /** The name exists but has neither MX nor address. */
  | { kind: 'no_mx' }
  /** SERVFAIL, REFUSED or no answer: nothing is known about the domain. */
  | { kind: 'transient'; rcode: string };

/**
 * The domain's mail hosts. Only a DNS answer (NOERROR or NXDOMAIN) makes a verdict; a server's
 * failure is transient, whatever the name. The MX answer comes first and the A/AAAA only without
 * MX records, as RFC 5321 §5.1 asks.
 */
export async function mxStep(resolver: DnsResolver, domain: string, signal?: AbortSignal): Promise<MxStep> {
  const mx = await resolver.query(domain, 'MX', signal);
  if (mx.rcode === DNS_RCODES.nxDomain) return { kind: 'nxdomain' };
  if (mx.rcode !== DNS_RCODES.noError) return { kind: 'transient', rcode: mx.rcode };
  const records = mx.records.flatMap((r) => (r.type === 'MX' ? [r] : []));
  if (records.some((r) => r.exchange === '' || r.exchange === '.')) {
    // RFC 7505 §3: a null MX must be the only record; with others beside it we still honour it.
    return { kind: 'null_mx' };
  }
  if (records.length > 0) {
    const sorted = [...records].sort((a, b) => a.preference - b.preference || a.exchange.localeCompare(b.exchange));
    const hosts = [...new Set(sorted.map((r) => r.exchange.replace(/\.$/, '').toLowerCase()))];
    return { kind: 'hosts', hosts, implicit: false };
  }
  const [a, aaaa] = await Promise.all([resolver.query(domain, 'A', signal), resolver.query(domain, 'AAAA', signal)]);
  if (hasAddress(a) || hasAddress(aaaa)) return { kind: 'hosts', hosts: [domain], implicit: true };
  if (a.rcode === DNS_RCODES.nxDomain) return { kind: 'nxdomain' };
  if (a.rcode !== DNS_RCODES.noError && aaaa.rcode !== DNS_RCODES.noError) return { kind: 'transient', rcode: a.rcode };
  return { kind: 'no_mx' };
}

function hasAddress(answer: DnsAnswer): boolean {
  return answer.rcode === DNS_RCODES.noError && answer.records.length > 0;
}

/**
 * The addresses of one MX host, IPv4 first (a mail host's IPv6 is less often in its SPF and in
 * reputation lists). An IP literal as exchange is not allowed by RFC 5321 but seen; it is used as is.
 */
export async function hostAddresses(resolver: DnsResolver, host: string, signal?: AbortSignal): Promise<{ addresses: string[]; transient: boolean }> {
  if (isIP(host) !== 0) return { addresses: [host], transient: false };
  const [a, aaaa] = await Promise.all([resolver.query(host, 'A', signal), resolver.query(host, 'AAAA', signal)]);
  const addresses = [...a.records, ...aaaa.records].flatMap((r) => (r.type === 'A' || r.type === 'AAAA' ? [r.value] : []));
  const transient = addresses.length === 0 && (a.rcode !== DNS_RCODES.noError && a.rcode !== DNS_RCODES.nxDomain);
  return { addresses, transient };
}
