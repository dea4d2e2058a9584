import { DOMAIN_REPORT_KIND, type DomainReport } from '../src/lookups/domain/domain-report.js';
import { normaliseDomain } from '../src/lookups/domain/domain-name.js';
import { ERROR_CODES } from '../src/shared/errors.js';
import type { NormaliseResult, Pipeline } from './pipeline.js';

/** Lists in one cell (records, name servers, subdomains) are joined with this, as the ip pipeline joins its own. */
export const DOMAIN_LIST_SEPARATOR = ';';

export function normaliseDomainCell(raw: string): NormaliseResult {
  if (raw.trim() === '') return { ok: false, code: ERROR_CODES.emptyValue, message: 'the domain cell is empty' };
  const n = normaliseDomain(raw);
  return n.ok ? { ok: true, key: n.domain } : { ok: false, code: n.code, message: n.message };
}

const cell = (value: string | number | boolean | null | undefined) => (value === null || value === undefined ? '' : String(value));
const joined = (values: readonly string[]) => values.join(DOMAIN_LIST_SEPARATOR);

/**
 * Job type `domain` (and the run of a `domain` monitor): one domain per row. The cells carry what a
 * monitor compares between runs (records, registrar, expiry, subdomains) as sorted lists, so that a
 * DNS server's rotation of its records is not a change.
 */
export const domainPipeline: Pipeline<DomainReport> = {
  type: 'domain',
  lookupKind: DOMAIN_REPORT_KIND,
  keyHeader: 'domain',
  keyAliases: [['domain name', 'domain_name', 'hostname', 'host', 'website', 'site', 'url']],
  headerless: false,
  normalise: normaliseDomainCell,
  resultColumns: ['a', 'aaaa', 'mx', 'ns', 'txt', 'caa', 'soa', 'dns_errors', 'spf', 'dmarc_policy', 'registrar', 'created_at', 'expires_at', 'age_days', 'dnssec', 'company', 'subdomains', 'discovery_found'],
  resultCells(r: DomainReport): string[] {
    const reg = r.registration.status === 'ok' ? r.registration : null;
    const company = r.company as { name?: string } | null;
    const errors = (['A', 'AAAA', 'MX', 'NS', 'TXT', 'CAA', 'SOA'] as const).filter((t) => r.dns[t].error !== null);
    return [
      joined(r.dns.A.values),
      joined(r.dns.AAAA.values),
      joined(r.dns.MX.values),
      joined(r.dns.NS.values),
      joined(r.dns.TXT.values),
      joined(r.dns.CAA.values),
      joined(r.dns.SOA.values),
      joined(errors),
      cell((r.email_auth.spf as { record: string | null }).record),
      cell((r.email_auth.dmarc as { policy: string | null }).policy),
      cell(reg?.registrar),
      cell(reg?.created_at),
      cell(reg?.expires_at),
      cell(reg?.age_days),
      cell(reg?.dnssec),
      cell(company?.name),
      r.subdomains?.status === 'ok' ? joined(r.subdomains.names.map((s) => s.name)) : '',
      joined(r.discovery.filter((f) => f.status === 'found').map((f) => f.path)),
    ];
  },
  isFound(r: DomainReport): boolean {
    return r.exists;
  },
};
