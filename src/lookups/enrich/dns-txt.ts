import { DNS_RCODES, type DnsResolver } from '../dns/dns-resolver.js';

/** A TXT lookup as enrichment needs it: the strings, or why there are none (absent vs. DNS failing). */
export interface TxtLookup {
  /** `ok`: the name answered (maybe with no records); `missing`: NXDOMAIN; `error`: SERVFAIL or no answer. */
  status: 'ok' | 'missing' | 'error';
  values: string[];
}

export async function txtLookup(resolver: DnsResolver, name: string, signal?: AbortSignal): Promise<TxtLookup> {
  const answer = await resolver.query(name, 'TXT', signal);
  if (answer.rcode === DNS_RCODES.nxDomain) return { status: 'missing', values: [] };
  if (answer.rcode !== DNS_RCODES.noError) return { status: 'error', values: [] };
  return { status: 'ok', values: answer.records.flatMap((r) => (r.type === 'TXT' ? [r.value] : [])) };
}

/** The records of a TXT set that start with `prefix` (case-insensitive), e.g. `v=spf1`. */
export function withPrefix(values: readonly string[], prefix: RegExp): string[] {
  return values.filter((v) => prefix.test(v.trim()));
}

/** `k=v; k=v` tag lists (DMARC, MTA-STS, TLS-RPT, BIMI, DKIM): keys lower-cased, values trimmed. */
export function parseTags(record: string): Record<string, string> {
  const tags: Record<string, string> = {};
  for (const part of record.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 1) continue;
    tags[part.slice(0, eq).trim().toLowerCase()] = part.slice(eq + 1).trim();
  }
  return tags;
}
