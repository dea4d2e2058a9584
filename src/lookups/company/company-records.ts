import { ERROR_CODES } from '../../shared/errors.js';
import type { CompanyRecord } from '../../storage/records.js';
import type { CompanyColumn, CompanyHeader } from './company-header.js';
import { charCount, collapseBlanks, coreName, domainOf, MAX_COMPANY_CHARS, nameKey } from './company-names.js';

/** An optional cell that could not be read: left empty, the company kept. */
export interface CompanyWarning {
  column: CompanyColumn;
  code: string;
}

export type CompanyLine = { ok: true; record: CompanyRecord; warnings: CompanyWarning[] } | { ok: false; code: string };

/** `1200`, `1,200`, `1 200`, `1_200`. Not `1.200`: in English exports that is one point two. */
const COUNT = /^(?:\d+|\d{1,3}(?:[, _]\d{3})+)$/;

/**
 * Top-level labels of hosts that are nobody's public website: a directory entry pointing at one
 * would give every lookup of that name a domain no one can reach.
 */
const PRIVATE_TLDS = new Set(['localhost', 'local', 'internal', 'arpa']);

/**
 * The domain a website URL names: `https://www.Acme.com/about` → `acme.com` (scheme, user, port,
 * path, query dropped; lower case; a leading `www.` removed). Undefined for an IP address (v4 or
 * v6), `localhost` and hosts under PRIVATE_TLDS, or anything that is not a host name with an
 * alphabetic top-level label.
 */
export function websiteDomain(website: string): string | undefined {
  const host = domainOf(website);
  if (host === undefined) return undefined;
  return PRIVATE_TLDS.has(host.slice(host.lastIndexOf('.') + 1)) ? undefined : host;
}

/**
 * One directory line, checked. The name is required: a line without one (`empty_value`) or with
 * more than 200 characters (`company_too_long`) is refused. An optional cell that cannot be read
 * is left empty and reported as a warning, the company kept: a domain that is no host
 * (`invalid_domain`), a website that names no public host (`invalid_website`), an employee count
 * that is not a whole number (`invalid_employee_count`: `50-100`, `~5000`, `1.200`). Without a
 * readable domain cell, the domain is the website's (`websiteDomain`). Empty cells are nulls.
 */
export function companyLine(cells: string[], header: CompanyHeader): CompanyLine {
  const cell = (column: CompanyColumn) => {
    const index = header.at[column];
    const value = index === undefined ? '' : collapseBlanks(cells[index] ?? '');
    return value === '' ? null : value;
  };
  const name = cell('name');
  if (name === null) return { ok: false, code: ERROR_CODES.emptyValue };
  if (charCount(name) > MAX_COMPANY_CHARS) return { ok: false, code: ERROR_CODES.companyTooLong };
  const warnings: CompanyWarning[] = [];
  const readable = <T>(column: CompanyColumn, code: string, read: (raw: string) => T | undefined): T | null => {
    const raw = cell(column);
    if (raw === null) return null;
    const value = read(raw);
    if (value !== undefined) return value;
    warnings.push({ column, code });
    return null;
  };
  const ownDomain = readable('domain', ERROR_CODES.invalidDomain, domainOf);
  const website = readable('website', ERROR_CODES.invalidWebsite, (raw) => (websiteDomain(raw) === undefined ? undefined : raw));
  const domain = ownDomain ?? (website === null ? null : websiteDomain(website)!);
  const employeeCount = readable('employee_count', ERROR_CODES.invalidEmployeeCount, (raw) => {
    const n = COUNT.test(raw) ? Number(raw.replace(/[, _]/g, '')) : NaN;
    return Number.isSafeInteger(n) ? n : undefined;
  });
  const extra: Record<string, string> = {};
  for (const { name: column, index } of header.extra) {
    const value = collapseBlanks(cells[index] ?? '');
    if (value !== '') extra[column] = value;
  }
  return {
    ok: true,
    warnings,
    record: {
      name,
      nameKey: nameKey(name),
      coreKey: coreName(name),
      domain,
      description: cell('description'),
      industry: cell('industry'),
      employeeCount,
      country: cell('country'),
      website,
      extra: Object.keys(extra).length === 0 ? null : JSON.stringify(extra),
    },
  };
}
