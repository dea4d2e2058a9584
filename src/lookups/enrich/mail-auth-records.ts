import type { DnsResolver } from '../dns/dns-resolver.js';
import { parseTags, txtLookup, withPrefix } from './dns-txt.js';

/**
 * DKIM selectors are chosen by the sender and cannot be listed from DNS, so enrichment probes the
 * ones large providers and mail platforms document or are seen to use (docs/email-enrich-compliance.md).
 * None answering means `unknown`, never `fail`: the domain may sign with a selector not on this list.
 */
export const DKIM_SELECTORS = [
  'default', 'google', 'selector1', 'selector2', 'k1', 'k2', 'k3', 's1', 's2', 'dkim', 'mail', 'smtp',
  'mandrill', 'mxvault', 'everlytickey1', 'everlytickey2', 'sig1', 'zoho', 'protonmail', 'fm1', 'fm2', 'fm3', 'mailjet', 'amazonses',
] as const;

export interface TagRecord {
  record: string | null;
  tags: Record<string, string>;
  error: string | null;
}

async function tagRecord(resolver: DnsResolver, name: string, prefix: RegExp, signal?: AbortSignal): Promise<TagRecord> {
  const txt = await txtLookup(resolver, name, signal);
  if (txt.status === 'error') return { record: null, tags: {}, error: 'dns_error' };
  const records = withPrefix(txt.values, prefix);
  if (records.length === 0) return { record: null, tags: {}, error: null };
  if (records.length > 1) return { record: null, tags: {}, error: 'multiple_records' };
  return { record: records[0]!.trim(), tags: parseTags(records[0]!), error: null };
}

/** RFC 8461 3.1: `_mta-sts.<domain>` TXT `v=STSv1; id=...`. */
export const mtaStsRecord = (r: DnsResolver, domain: string, s?: AbortSignal) => tagRecord(r, `_mta-sts.${domain}`, /^v=STSv1\s*(;|$)/, s);
/** RFC 8460 3: `_smtp._tls.<domain>` TXT `v=TLSRPTv1; rua=...`. */
export const tlsRptRecord = (r: DnsResolver, domain: string, s?: AbortSignal) => tagRecord(r, `_smtp._tls.${domain}`, /^v=TLSRPTv1\s*(;|$)/, s);
/** BIMI (draft-brand-indicators-for-message-identification): `default._bimi.<domain>` `v=BIMI1; l=...; a=...`. */
export const bimiRecord = (r: DnsResolver, domain: string, s?: AbortSignal) => tagRecord(r, `default._bimi.${domain}`, /^v=BIMI1\s*(;|$)/i, s);

export interface DkimReport {
  /** `found` when a selector answered with a key; `unknown` otherwise (never `fail`). */
  status: 'found' | 'unknown';
  selectors: { selector: string; record: string; key_type: string }[];
  probed: readonly string[];
}

/** Probes every listed selector; a record with `p=` empty is a revoked key and not counted as found. */
export async function probeDkim(resolver: DnsResolver, domain: string, signal?: AbortSignal): Promise<DkimReport> {
  const answers = await Promise.all(
    DKIM_SELECTORS.map(async (selector) => ({ selector, txt: await txtLookup(resolver, `${selector}._domainkey.${domain}`, signal) })),
  );
  const selectors: DkimReport['selectors'] = [];
  for (const { selector, txt } of answers) {
    const record = txt.values.map((v) => v.trim()).find((v) => /(^|;)\s*p=/i.test(v));
    if (record === undefined) continue;
    const tags = parseTags(record);
    if ((tags.p ?? '') === '') continue;
    selectors.push({ selector, record, key_type: (tags.k ?? 'rsa').toLowerCase() });
  }
  return { status: selectors.length > 0 ? 'found' : 'unknown', selectors, probed: DKIM_SELECTORS };
}
