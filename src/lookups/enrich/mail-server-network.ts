import { keyToText, parseIp } from '../../shared/ip-keys.js';
import type { DnsResolver } from '../dns/dns-resolver.js';
import { answerIp } from '../ip/ip-network-answer.js';
import type { IpNetworkData } from '../ip/ip-network-data.js';
import hostingList from './hosting-asns.json' with { type: 'json' };

/** The network fields of one enrich `mail_servers[]` entry. */
export interface MailServerNetwork {
  /** The origin AS announcing the address in the latest imported pfx2as snapshot. */
  asn: number | null;
  /** That AS's organisation (AS names import), else its AS name. */
  org: string | null;
  /** The country of the registry delegation holding the address, else that of the AS. */
  country: string | null;
  /** true: the origin AS is in hosting-asns.json; null: not known (the list is not exhaustive). */
  hosting: true | null;
}

export type MailServerNetworkLookup = (ip: string) => Promise<MailServerNetwork | null>;

const HOSTING_ASNS: ReadonlySet<number> = new Set(hostingList.networks.flatMap((n) => n.asns));

/** Whether any source the network fields come from (rir, pfx2as, asnames) is imported. */
export function hasNetworkData(data: IpNetworkData): boolean {
  return data.rir !== undefined || data.snapshots.length > 0 || data.names !== undefined;
}

/**
 * The network fields for a mail server's address, from the IP network lookup's loaded data (the
 * same longest-prefix match and registry lookup as `/api/lookup/ip`). Null when nothing is
 * imported, so the report leaves the fields out rather than saying null for every server.
 */
export function mailServerNetwork(data: IpNetworkData, ip: string): MailServerNetwork | null {
  if (!hasNetworkData(data)) return null;
  const address = parseIp(ip);
  if (!address) return null;
  const answer = answerIp(data, address, keyToText(address.family, address.key));
  const asn = answer.asn.asn;
  return {
    asn,
    org: answer.company.name,
    country: answer.network.country ?? answer.asn.country,
    hosting: asn !== null && HOSTING_ASNS.has(asn) ? true : null,
  };
}

/**
 * The mail servers' country for compliance: the first MX host, in preference order, whose
 * address has a country in the imported data. Null when none has (or nothing is imported).
 */
export async function mailServerCountry(resolver: DnsResolver, network: MailServerNetworkLookup, domain: string, signal?: AbortSignal): Promise<string | null> {
  const mx = await resolver.query(domain, 'MX', signal);
  const hosts = mx.records.flatMap((x) => (x.type === 'MX' ? [x] : [])).sort((a, b) => a.preference - b.preference).map((x) => x.exchange.toLowerCase()).filter((h) => h !== '' && h !== '.');
  for (const host of hosts.slice(0, 5)) {
    const a = await resolver.query(host, 'A', signal);
    for (const record of a.records) {
      if (record.type !== 'A') continue;
      const country = (await network(record.value))?.country ?? null;
      if (country !== null) return country;
    }
  }
  return null;
}
