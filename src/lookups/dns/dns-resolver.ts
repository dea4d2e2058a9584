/**
 * The DNS layer every lookup that talks to the network shares (email validity now; enrichment and
 * domain reports later). It is a dependency, never a global: production passes the system's
 * resolver or the servers of SLUICE_DNS_SERVERS, tests a DNS server of their own on loopback.
 *
 * A query never throws for what the DNS said: the answer carries its `rcode`, so that a caller can
 * tell a name that does not exist (NXDOMAIN: final) from a server that failed or did not answer
 * (SERVFAIL, TIMEOUT: try again later). Mixing them up turns an outage into `invalid` verdicts.
 */
export interface DnsResolver {
  query(name: string, type: DnsRecordType, signal?: AbortSignal): Promise<DnsAnswer>;
}

export const DNS_RECORD_TYPES = ['A', 'AAAA', 'MX', 'TXT', 'NS', 'CNAME', 'CAA', 'SOA'] as const;
export type DnsRecordType = (typeof DNS_RECORD_TYPES)[number];

export const DNS_RCODES = {
  noError: 'NOERROR',
  nxDomain: 'NXDOMAIN',
  servFail: 'SERVFAIL',
  refused: 'REFUSED',
  /** No answer from any server in time: not a DNS code, but a state of its own. */
  timeout: 'TIMEOUT',
  /** Any other code (FORMERR, NOTIMP, ...): treated as a failure, not as an answer. */
  other: 'OTHER',
} as const;
export type DnsRcode = (typeof DNS_RCODES)[keyof typeof DNS_RCODES];

export type DnsRecord =
  | { type: 'A' | 'AAAA' | 'NS' | 'CNAME'; value: string; ttl: number }
  | { type: 'MX'; preference: number; exchange: string; ttl: number }
  | { type: 'TXT'; value: string; ttl: number }
  /** RFC 8659: which CAs may issue for the name (`issue`, `issuewild`) and where they report (`iodef`). */
  | { type: 'CAA'; flags: number; tag: string; value: string; ttl: number }
  | { type: 'SOA'; mname: string; rname: string; serial: number; refresh: number; retry: number; expire: number; minimum: number; ttl: number };

export interface DnsAnswer {
  rcode: DnsRcode;
  /** Records of the asked type only (a CNAME chain's own records are followed, not returned). */
  records: DnsRecord[];
  /** Seconds this answer may be kept: the least TTL of its records, or the negative-cache time. */
  ttl: number;
}

/** Whether an answer says something about the name (kept for its TTL) or only about the servers. */
export function isFinalAnswer(answer: DnsAnswer): boolean {
  return answer.rcode === DNS_RCODES.noError || answer.rcode === DNS_RCODES.nxDomain;
}

/** `host:port` pairs; a bare host gets port 53; IPv6 as `[::1]:5353`. */
export function parseDnsServers(text: string): { host: string; port: number }[] {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((entry) => {
      const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
      if (bracketed) return { host: bracketed[1]!, port: Number(bracketed[2] ?? 53) };
      const colon = entry.lastIndexOf(':');
      if (colon > 0 && entry.indexOf(':') === colon) return { host: entry.slice(0, colon), port: Number(entry.slice(colon + 1)) };
      return { host: entry, port: 53 };
    });
}
