import { isIPv4, isIPv6 } from 'node:net';
import { DNS_RCODES, type DnsResolver } from '../dns/dns-resolver.js';

/**
 * DNS blocklists (RFC 5782): `<reversed ip>.<zone>` answering an A record in 127.0.0.0/8 means
 * listed. Only zones the operator configures (SLUICE_DNSBL_ZONES) are asked: most lists' terms of
 * use forbid queries through public resolvers or at volume without a licence, so none is a default.
 */
export async function dnsblListings(resolver: DnsResolver, ip: string, zones: readonly string[], signal?: AbortSignal): Promise<string[] | null> {
  const reversed = reverse(ip);
  if (reversed === undefined || zones.length === 0) return null;
  const answers = await Promise.all(zones.map(async (zone) => ({ zone, answer: await resolver.query(`${reversed}.${zone}`, 'A', signal) })));
  if (answers.some(({ answer }) => answer.rcode !== DNS_RCODES.noError && answer.rcode !== DNS_RCODES.nxDomain)) {
    // A zone that did not answer says nothing; the ones that did still count.
    const listed = answers.filter(({ answer }) => isListed(answer.records));
    return listed.length > 0 ? listed.map(({ zone }) => zone) : null;
  }
  return answers.filter(({ answer }) => isListed(answer.records)).map(({ zone }) => zone);
}

function isListed(records: readonly { type: string; value?: string }[]): boolean {
  return records.some((r) => r.type === 'A' && typeof r.value === 'string' && r.value.startsWith('127.'));
}

function reverse(ip: string): string | undefined {
  if (isIPv4(ip)) return ip.split('.').reverse().join('.');
  if (!isIPv6(ip)) return undefined;
  const [head = '', tail = ''] = ip.split('::');
  const h = head === '' ? [] : head.split(':');
  const t = tail === '' ? [] : tail.split(':');
  const groups = ip.includes('::') ? [...h, ...Array(8 - h.length - t.length).fill('0'), ...t] : h;
  return groups.map((g) => g.padStart(4, '0')).join('').split('').reverse().join('.');
}
