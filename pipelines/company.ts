import { charCount, collapseBlanks, domainOf, MAX_COMPANY_CHARS } from '../src/lookups/company/company-names.js';
import { COMPANY_KIND, confidentResults, type CompanyResult } from '../src/lookups/company/company-profile.js';
import { ERROR_CODES } from '../src/shared/errors.js';
import { unwrapCell } from './cell-text.js';
import { COMPANY_ALIASES } from './key-aliases.js';
import type { NormaliseResult, Pipeline } from './pipeline.js';

/**
 * One company, by name or by domain, as a key:
 *
 * - quote marks around the whole cell (`"Acme"`, `“Acme”`) and invisible blanks dropped
 *   (`unwrapCell`), blanks trimmed and collapsed; an empty cell is `empty_value`, more than 200 characters
 *   `company_too_long`;
 * - a value with a dot and no blanks that reads as a host is a domain, `domain:<host>`: scheme,
 *   user (`info@`), `www.`, port and path are dropped and it is lower-cased, so
 *   `https://www.Acme.com/about` and `info@acme.com` are both `domain:acme.com`;
 * - anything else is a name, `name:<lower case>`: `ACME  Inc` and `acme inc` are one key, but
 *   `Acme, Inc.` is another (the lookup still finds the same company for both).
 */
export function normaliseCompany(raw: string): NormaliseResult {
  const text = collapseBlanks(unwrapCell(raw));
  if (text === '') return { ok: false, code: ERROR_CODES.emptyValue, message: 'the company cell is empty' };
  if (charCount(text) > MAX_COMPANY_CHARS) {
    return { ok: false, code: ERROR_CODES.companyTooLong, message: `a company name or domain has ${MAX_COMPANY_CHARS} characters or fewer` };
  }
  const domain = domainOf(text);
  return { ok: true, key: domain === undefined ? `name:${text.toLowerCase()}` : `domain:${domain}` };
}

/** Job type `company`: one company name or domain per row, answered from the company directory. */
export const companyPipeline: Pipeline<CompanyResult> = {
  type: 'company',
  lookupKind: COMPANY_KIND,
  keyHeader: 'company',
  keyAliases: COMPANY_ALIASES,
  headerless: false,
  normalise: normaliseCompany,
  // All prefixed `company_`: the input's key column is `company` by default, and input files of
  // companies often have their own `domain`, `country` or `website` columns; two columns of one
  // name would make the header ambiguous for every reader of the file.
  resultColumns: [
    'company_name',
    'company_domain',
    'company_industry',
    'company_employee_count',
    'company_country',
    'company_website',
    'company_description',
    'company_match',
    'company_match_score',
  ],
  resultCells(result: CompanyResult): string[] {
    const best = confidentResults(result)[0];
    if (best === undefined) return ['', '', '', '', '', '', '', '', ''];
    return [
      best.name,
      best.domain ?? '',
      best.industry ?? '',
      best.employee_count === null ? '' : String(best.employee_count),
      best.country ?? '',
      best.website ?? '',
      best.description ?? '',
      result.match ?? '',
      String(best.score),
    ];
  },
  isFound(result: CompanyResult): boolean {
    return confidentResults(result).length > 0;
  },
};
