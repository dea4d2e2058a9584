import { DNS_RCODES, type DnsResolver } from '../dns/dns-resolver.js';
import { checkDmarc } from '../enrich/dmarc-check.js';
import type { GuardedGetOptions } from '../enrich/guarded-get.js';
import { bimiRecord, mtaStsRecord, tlsRptRecord } from '../enrich/mail-auth-records.js';
import { fetchMtaStsPolicy } from '../enrich/mta-sts-policy.js';
import type { DomainInfo, RdapClient } from '../enrich/rdap-client.js';
import { checkSpf } from '../enrich/spf-check.js';
import type { LookupOutcome, LookupProvider } from '../lookup-provider.js';
import { askCt, subdomainSection, type SubdomainSection } from './ct-subdomains.js';
import { fetchDiscoveryFiles, type DiscoveryFile } from './discovery-files.js';
import { readRecords, type DomainRecords } from './dns-records.js';
import { normaliseDomain } from './domain-name.js';

export const DOMAIN_REPORT_KIND = 'domain_report';

/** Everything a domain report talks to, passed in (src/main/open-domain-report.ts builds the real ones). */
export interface DomainReportDeps {
  resolver: DnsResolver;
  /** HTTPS under the webhook address policy: MTA-STS policy and discovery files. */
  fetch: GuardedGetOptions;
  rdap?: RdapClient | undefined;
  /** The remote certificate-transparency service; unset: the report has no `subdomains`. */
  ct?: LookupProvider | undefined;
  /** Sluice's company directory, by domain (a parent domain matches too). */
  company?: ((domain: string, signal?: AbortSignal) => Promise<unknown>) | undefined;
  now: () => number;
}

export interface DomainReport {
  domain: string;
  /** False when the name answered NXDOMAIN for every type. */
  exists: boolean;
  dns: DomainRecords;
  email_auth: Record<string, unknown>;
  registration: (DomainInfo & { status: 'ok' }) | { status: 'unknown'; reason: string };
  company: unknown;
  subdomains?: SubdomainSection;
  discovery: DiscoveryFile[];
  checked_at: string;
}

/**
 * The domain report (spec 4.5's domain search; docs/domain-report.md). Every part is best-effort: a
 * registry away or a DNS server failing says so inside its section, and the rest is still answered.
 */
export async function buildDomainReport(deps: DomainReportDeps, domain: string, signal?: AbortSignal): Promise<DomainReport> {
  const r = deps.resolver;
  const dns = await readRecords(r, domain, signal);
  const mxHost = dns.MX.values.map((v) => v.split(' ')[1]!).find((h) => h !== '.' && h !== '');
  const mxIp = mxHost === undefined ? null : firstA(await r.query(mxHost, 'A', signal));
  const [spf, dmarc, mtaSts, tlsRpt, bimi, registration, company, ct, discovery] = await Promise.all([
    checkSpf(r, domain, mxIp, signal),
    checkDmarc(r, domain, signal),
    mtaStsRecord(r, domain, signal),
    tlsRptRecord(r, domain, signal),
    bimiRecord(r, domain, signal),
    registrationOf(deps.rdap, domain, signal),
    deps.company ? deps.company(domain, signal).catch(() => null) : Promise.resolve(null),
    askCt(deps.ct, domain, signal),
    dns.exists ? fetchDiscoveryFiles(domain, deps.fetch, signal) : Promise.resolve([]),
  ]);
  const policy = mtaSts.record !== null ? await fetchMtaStsPolicy(domain, deps.fetch, signal) : null;
  const report: DomainReport = {
    domain,
    exists: dns.exists,
    dns,
    email_auth: {
      spf,
      dmarc,
      mta_sts: { record: mtaSts.record, id: mtaSts.tags.id ?? null, policy, error: mtaSts.error },
      tls_rpt: { record: tlsRpt.record, rua: (tlsRpt.tags.rua ?? '').split(',').map((u) => u.trim()).filter((u) => u !== ''), error: tlsRpt.error },
      bimi: { record: bimi.record, logo_url: bimi.tags.l || null, authority_url: bimi.tags.a || null, error: bimi.error },
      caa: dns.CAA.values,
    },
    registration,
    company,
    discovery,
    checked_at: new Date(deps.now()).toISOString(),
  };
  if (deps.ct) report.subdomains = subdomainSection(domain, ct, registration.status === 'ok' ? registration.created_at : null);
  return report;
}

async function registrationOf(rdap: RdapClient | undefined, domain: string, signal?: AbortSignal): Promise<DomainReport['registration']> {
  if (!rdap) return { status: 'unknown', reason: 'not_configured' };
  try {
    const info = await rdap.lookup(domain, signal);
    return info === null ? { status: 'unknown', reason: 'not_found' } : { status: 'ok', ...info };
  } catch (e: unknown) {
    return { status: 'unknown', reason: e instanceof Error && /^[a-z_0-9]+$/.test(e.message) ? e.message : 'rdap_failed' };
  }
}

function firstA(answer: Awaited<ReturnType<DnsResolver['query']>>): string | null {
  if (answer.rcode !== DNS_RCODES.noError) return null;
  const a = answer.records.find((x) => x.type === 'A');
  return a && a.type === 'A' ? a.value : null;
}

/**
 * The report as a lookup provider, so that the single lookup, the bulk search and monitors go
 * through the engine's result cache, limits and billing like every other lookup. Keys are
 * normalised domains; a report never fails as a whole (its parts say what failed).
 */
export class DomainReportProvider implements LookupProvider<DomainReport> {
  readonly kind = DOMAIN_REPORT_KIND;
  readonly name = 'embedded-domain-report';
  readonly maxBatch = 10;
  /**
   * Not kept in the result cache: a report is the network's state at the time asked, and the cache
   * would answer the charge window's (months) old DNS and registration data to a repeat lookup.
   * The limiters then count it in this process only, which suits it: its calls go to many hosts.
   */
  readonly answersLocally = true;

  constructor(private readonly deps: DomainReportDeps) {}

  async lookup(keys: readonly string[], signal?: AbortSignal): Promise<LookupOutcome<DomainReport>[]> {
    return Promise.all(
      keys.map(async (key): Promise<LookupOutcome<DomainReport>> => {
        const n = normaliseDomain(key);
        if (!n.ok) return { ok: false, retryable: false, code: n.code, message: n.message };
        try {
          return { ok: true, result: await buildDomainReport(this.deps, n.domain, signal) };
        } catch (e: unknown) {
          return { ok: false, retryable: true, code: 'lookup_failed', message: e instanceof Error ? e.message : String(e) };
        }
      }),
    );
  }
}
