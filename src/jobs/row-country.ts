import type { KeyOrigin } from '../../pipelines/pipeline.js';
import type { PhoneCountryCounts } from '../storage/job-records.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';

/**
 * Headers taken as the country column when the job names none, compared as `headerKey` compares:
 * `Country`, `Country Code`, `country_code`, `COUNTRY-CODE`, `Land` (de, nl, sv), `Pays`, `País`.
 */
const COUNTRY_HEADERS: ReadonlySet<string> = new Set(['country', 'countrycode', 'land', 'pays', 'pais']);

/** A header cell as compared: without case, accents, blanks, dashes or underscores. */
function headerKey(cell: string): string {
  return cell
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[\s\-_]/g, '');
}

/**
 * The column holding each row's country: the one the job names (`countryColumn`, compared without
 * case and then as headerKey does; absent is `column_not_found`), else the leftmost header in
 * COUNTRY_HEADERS, else none. A file without a header row has none, and may not name one.
 */
export function findCountryColumn(header: readonly string[] | undefined, named: string | undefined): number | undefined {
  if (named !== undefined) {
    const wanted = named.trim().toLowerCase();
    let index = header?.findIndex((cell) => cell.trim().toLowerCase() === wanted) ?? -1;
    if (index < 0) index = header?.findIndex((cell) => headerKey(cell) === headerKey(named)) ?? -1;
    if (index < 0) {
      throw new AppError(ERROR_CODES.columnNotFound, `no country column named "${named}" in the header row${header ? ` (${header.slice(0, 20).join(', ')})` : ''}`, {
        details: { column: named },
      });
    }
    return index;
  }
  const index = header?.findIndex((cell) => COUNTRY_HEADERS.has(headerKey(cell))) ?? -1;
  return index < 0 ? undefined : index;
}

/**
 * How many numbers of a job ended in which country, and how many had their own `+CC` overrule the
 * row's country. Bounded: one entry per country libphonenumber knows (about 250) plus `001`.
 */
export class CountryTally {
  private readonly byCountry = new Map<string, number>();
  private overrides = 0;

  add(origin: KeyOrigin): void {
    this.byCountry.set(origin.country, (this.byCountry.get(origin.country) ?? 0) + 1);
    if (origin.overrodeRow) this.overrides++;
  }

  /** Null when no number was read: a job of no phone lookup, or one whose every number is invalid. */
  result(): PhoneCountryCounts | null {
    if (this.byCountry.size === 0) return null;
    const sorted = [...this.byCountry].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
    return { byCountry: Object.fromEntries(sorted), overrides: this.overrides };
  }
}
