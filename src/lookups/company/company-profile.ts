import type { CompanyRow } from '../../storage/records.js';

/** Lookup kind of company search: billing, the result cache and the provider map use it. */
export { COMPANY_KIND } from '../../storage/directory-rules.js';

/** How the best candidate was found; the output's `company_match` column. */
export const COMPANY_MATCHES = {
  /** The key's domain, or a parent of it (`eu.acme.com` finds `acme.com`). */
  domain: 'domain',
  /** The name as written, in any case and spacing. */
  name: 'name',
  /** A name that differs in legal form, punctuation, spelling or by missing words. */
  near: 'near',
} as const;
export type CompanyMatch = (typeof COMPANY_MATCHES)[keyof typeof COMPANY_MATCHES];

/** One company of the directory, in the API's snake_case. */
export interface CompanyProfile {
  name: string;
  domain: string | null;
  description: string | null;
  industry: string | null;
  employee_count: number | null;
  country: string | null;
  website: string | null;
  /** The directory's further columns, by lower-case header (`ticker`, `linkedin`, ...). */
  extra: Record<string, string>;
}

/**
 * The answer for one key: the candidates, best first (the best is the profile), and how the best
 * was found. No candidate is an answer too, with `match` null.
 */
export interface CompanyResult {
  match: CompanyMatch | null;
  results: CompanyProfile[];
}

export function profileOf(row: CompanyRow): CompanyProfile {
  return {
    name: row.name,
    domain: row.domain,
    description: row.description,
    industry: row.industry,
    employee_count: row.employee_count,
    country: row.country,
    website: row.website,
    extra: row.extra === null ? {} : (JSON.parse(row.extra) as Record<string, string>),
  };
}
