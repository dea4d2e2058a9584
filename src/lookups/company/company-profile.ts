import type { CompanyRow } from '../../storage/records.js';
import { COMPANY_MATCH_THRESHOLD } from './company-score.js';

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
  /**
   * Confidence that this is the company asked for, 0 to 1 (`companyScore`); every profile returned
   * has at least COMPANY_MATCH_THRESHOLD. Absent from answers cached before scores existed.
   */
  score?: number;
}

/**
 * The answer for one key: the candidates scored at least COMPANY_MATCH_THRESHOLD, best first (the
 * best is the profile), and how the best was found. No such candidate is an answer too, with
 * `match` null.
 */
export interface CompanyResult {
  match: CompanyMatch | null;
  results: CompanyProfile[];
}

export function profileOf(row: CompanyRow, score: number): CompanyProfile {
  return {
    name: row.name,
    domain: row.domain,
    description: row.description,
    industry: row.industry,
    employee_count: row.employee_count,
    country: row.country,
    website: row.website,
    extra: row.extra === null ? {} : (JSON.parse(row.extra) as Record<string, string>),
    score,
  };
}

/**
 * The candidates that count as found. An answer cached before scores existed has none: its
 * candidates were picked without the threshold, so none is trusted (an import forgets the cache).
 */
export function confidentResults(result: CompanyResult): CompanyProfile[] {
  return result.results.filter((c) => typeof c.score === 'number' && c.score >= COMPANY_MATCH_THRESHOLD);
}
