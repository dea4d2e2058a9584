import { AppError, ERROR_CODES } from '../../shared/errors.js';
import { collapseBlanks } from './company-names.js';

/** The directory file's own columns; `name` is required, any other column goes into `extra`. */
export const COMPANY_FILE_COLUMNS = ['name', 'domain', 'description', 'industry', 'employee_count', 'country', 'website'] as const;
export type CompanyColumn = (typeof COMPANY_FILE_COLUMNS)[number];

/**
 * The header names each column is found by, compared by `headerKey` (without case, blanks,
 * dashes and underscores), as CRMs, Sheets and Excel exports write them. No name is in two lists.
 */
export const COMPANY_COLUMN_ALIASES: Readonly<Record<CompanyColumn, readonly string[]>> = {
  name: ['name', 'company', 'company name', 'organization', 'organisation', 'organization name', 'organisation name', 'account name', 'business name', 'firma', 'firmenname', 'unternehmen'],
  domain: ['domain', 'company domain', 'website domain', 'domain name'],
  website: ['website', 'url', 'homepage', 'web', 'web site', 'website url', 'company website', 'company url', 'webseite'],
  industry: ['industry', 'sector', 'vertical', 'branche'],
  employee_count: ['employee count', 'employees', 'number of employees', 'num employees', 'headcount', 'size', 'company size', 'staff', 'mitarbeiter'],
  country: ['country', 'company country', 'hq country', 'country code', 'land'],
  description: ['description', 'about', 'summary', 'company description'],
};

/** `E-mail Address`, `e_mail address` and `EmailAddress` are one key: `emailaddress`. */
export function headerKey(name: string): string {
  return collapseBlanks(name).toLowerCase().replace(/[\s_-]+/gu, '');
}

/** One `--map "Header=column"`: the file's header cell that holds a directory column. */
export interface CompanyMapping {
  header: string;
  column: CompanyColumn;
}

export interface CompanyHeader {
  at: Partial<Record<CompanyColumn, number>>;
  /** Further columns: lower-case header and where it is. */
  extra: { name: string; index: number }[];
}

/**
 * The `--map` values, each `Header=column` or several joined by commas (`"Company Name=name,Web=website"`).
 * A header holding a comma cannot be given in the joined form; repeat `--map` for it.
 */
export function parseCompanyMap(values: readonly string[]): CompanyMapping[] {
  const mappings: CompanyMapping[] = [];
  for (const value of values) {
    for (const piece of value.split(',')) {
      if (piece.trim() === '') continue;
      const eq = piece.lastIndexOf('=');
      const header = eq < 0 ? '' : piece.slice(0, eq).trim();
      const column = eq < 0 ? '' : piece.slice(eq + 1).trim().toLowerCase();
      if (header === '' || !(COMPANY_FILE_COLUMNS as readonly string[]).includes(column)) {
        throw new AppError(ERROR_CODES.badArgument, `--map "${piece.trim()}": write "Header Name=column", where column is one of ${COMPANY_FILE_COLUMNS.join(', ')}`);
      }
      if (mappings.some((m) => m.column === column)) throw new AppError(ERROR_CODES.badArgument, `--map names the ${column} column twice`);
      mappings.push({ header, column: column as CompanyColumn });
    }
  }
  return mappings;
}

/**
 * Where each directory column is: first the `--map` entries, then for every other column the one
 * header cell whose `headerKey` is among its aliases. Two cells that could be the same column are
 * refused (`ambiguous_column`) rather than guessed between. Only `name` must be found. A header
 * name repeated exactly counts once, its first cell.
 */
export function companyHeader(header: readonly string[], map: readonly CompanyMapping[] = []): CompanyHeader {
  const keys = header.map(headerKey);
  const shown = header.map((cell) => JSON.stringify(collapseBlanks(cell))).join(', ');
  const at: Partial<Record<CompanyColumn, number>> = {};
  const taken = new Set<number>();
  for (const { header: name, column } of map) {
    const index = keys.indexOf(headerKey(name));
    if (index < 0) {
      throw new AppError(ERROR_CODES.columnNotFound, `--map "${name}=${column}": the file has no column named "${name}"; its header is ${shown}`, {
        details: { missing: [name], header: [...header] },
      });
    }
    at[column] = index;
    taken.add(index);
  }
  for (const column of COMPANY_FILE_COLUMNS) {
    if (at[column] !== undefined) continue;
    const aliases = COMPANY_COLUMN_ALIASES[column].map(headerKey);
    const found = [...new Set(keys.filter((key, i) => !taken.has(i) && aliases.includes(key)))].map((key) => keys.indexOf(key));
    if (found.length > 1) {
      const names = found.map((i) => `"${collapseBlanks(header[i]!)}"`);
      throw new AppError(
        ERROR_CODES.ambiguousColumn,
        `columns ${names.join(' and ')} could each be the ${column} column; choose one with --map "${collapseBlanks(header[found[0]!]!)}=${column}"`,
        { details: { column, candidates: found.map((i) => header[i]) } },
      );
    }
    if (found.length === 1) {
      at[column] = found[0]!;
      taken.add(found[0]!);
    }
  }
  if (at.name === undefined) {
    throw new AppError(
      ERROR_CODES.columnNotFound,
      `the header row needs a company name column, headed one of ${COMPANY_COLUMN_ALIASES.name.join(', ')}, or named with --map "Your Column=name"; its header is ${shown}`,
      { details: { missing: ['name'], header: [...header] } },
    );
  }
  const extra: CompanyHeader['extra'] = [];
  const seen = new Set([...taken].map((i) => keys[i]!));
  header.forEach((cell, index) => {
    const name = collapseBlanks(cell).toLowerCase();
    if (taken.has(index) || name === '' || seen.has(keys[index]!)) return;
    seen.add(keys[index]!);
    extra.push({ name, index });
  });
  return { at, extra };
}
