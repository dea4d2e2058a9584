import { DNS_RCODES, type DnsRecord, type DnsRecordType, type DnsResolver } from '../dns/dns-resolver.js';

/** The record types a domain report shows, in the order it shows them. */
export const REPORT_RECORD_TYPES = ['A', 'AAAA', 'MX', 'NS', 'TXT', 'CAA', 'SOA'] as const satisfies readonly DnsRecordType[];

/**
 * One record type's answer: the values as text (so that a monitor can compare them and a reader can
 * read them), or why there are none. `error` only for a server that failed: a name without records
 * of the type is `[]`, not an error, so that a DNS outage never looks like records removed.
 */
export interface RecordSet {
  values: string[];
  error: 'dns_error' | null;
}

export type DomainRecords = Record<(typeof REPORT_RECORD_TYPES)[number], RecordSet> & { exists: boolean };

export async function readRecords(resolver: DnsResolver, domain: string, signal?: AbortSignal): Promise<DomainRecords> {
  const answers = await Promise.all(REPORT_RECORD_TYPES.map((type) => resolver.query(domain, type, signal)));
  const out = { exists: !answers.every((a) => a.rcode === DNS_RCODES.nxDomain) } as DomainRecords;
  REPORT_RECORD_TYPES.forEach((type, i) => {
    const answer = answers[i]!;
    const failed = answer.rcode !== DNS_RCODES.noError && answer.rcode !== DNS_RCODES.nxDomain;
    // Sorted: DNS servers rotate record order, and a monitor must not see a rotation as a change.
    out[type] = { values: failed ? [] : answer.records.map(recordText).sort(), error: failed ? 'dns_error' : null };
  });
  return out;
}

/** Zone-file presentation (RFC 1035 5.1), lower-cased names. */
export function recordText(r: DnsRecord): string {
  switch (r.type) {
    case 'MX':
      return `${r.preference} ${r.exchange.toLowerCase()}`;
    case 'CAA':
      return `${r.flags} ${r.tag} "${r.value}"`;
    case 'SOA':
      return `${r.mname.toLowerCase()} ${r.rname.toLowerCase()} ${r.serial} ${r.refresh} ${r.retry} ${r.expire} ${r.minimum}`;
    case 'TXT':
      return r.value;
    default:
      return r.value.toLowerCase();
  }
}
