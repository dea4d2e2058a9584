import { getDomain } from 'tldts';
import type { DnsResolver } from '../dns/dns-resolver.js';
import { parseTags, txtLookup, withPrefix } from './dns-txt.js';

export interface DmarcReport {
  record: string | null;
  /** Where the record was found: the domain itself, or its organisational domain (RFC 7489 6.6.3). */
  found_at: string | null;
  /** `p=`, or for a subdomain that fell back to the organisational domain, its `sp=` (else `p=`). */
  policy: 'none' | 'quarantine' | 'reject' | null;
  subdomain_policy: 'none' | 'quarantine' | 'reject' | null;
  /** `s` strict, `r` relaxed (the default). Read as written: mailauth 4.x reads `s` as relaxed. */
  adkim: 'r' | 's';
  aspf: 'r' | 's';
  pct: number;
  rua: string[];
  /** `dns_error` when the lookup failed; `invalid` when a record exists without a valid `p=`. */
  error: string | null;
}

const POLICIES = new Set(['none', 'quarantine', 'reject']);

/**
 * RFC 7489 6.6.3: ask `_dmarc.<domain>`; when it has no record, ask `_dmarc.<organisational
 * domain>`, found through the Public Suffix List (tldts, MIT, ICANN and private sections).
 */
export async function checkDmarc(resolver: DnsResolver, domain: string, signal?: AbortSignal): Promise<DmarcReport> {
  const empty: DmarcReport = { record: null, found_at: null, policy: null, subdomain_policy: null, adkim: 'r', aspf: 'r', pct: 100, rua: [], error: null };
  const org = getDomain(domain, { allowPrivateDomains: true }) ?? domain;
  for (const at of org === domain ? [domain] : [domain, org]) {
    const txt = await txtLookup(resolver, `_dmarc.${at}`, signal);
    if (txt.status === 'error') return { ...empty, error: 'dns_error' };
    const records = withPrefix(txt.values, /^v=DMARC1\s*(;|$)/i);
    if (records.length !== 1) continue; // none, or several (6.6.3: then none applies)
    const record = records[0]!.trim();
    const tags = parseTags(record);
    const p = tags.p?.toLowerCase();
    const sp = tags.sp?.toLowerCase();
    if (p === undefined || !POLICIES.has(p)) return { ...empty, record, found_at: at, error: 'invalid' };
    const subdomainPolicy = (sp !== undefined && POLICIES.has(sp) ? sp : p) as DmarcReport['policy'];
    const pct = Number(tags.pct ?? 100);
    return {
      record,
      found_at: at,
      policy: (at === domain ? p : subdomainPolicy) as DmarcReport['policy'],
      subdomain_policy: subdomainPolicy,
      adkim: tags.adkim?.toLowerCase() === 's' ? 's' : 'r',
      aspf: tags.aspf?.toLowerCase() === 's' ? 's' : 'r',
      pct: Number.isInteger(pct) && pct >= 0 && pct <= 100 ? pct : 100,
      rua: (tags.rua ?? '').split(',').map((u) => u.trim()).filter((u) => u !== ''),
      error: null,
    };
  }
  return empty;
}
