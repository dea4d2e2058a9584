import { AppError, ERROR_CODES } from '../../shared/errors.js';
import type { CompanyRecord } from '../../storage/records.js';
import { charCount, collapseBlanks, coreName, domainOf, MAX_COMPANY_CHARS, nameKey } from './company-names.js';

/** The directory file's own columns; `name` is required, any other column goes into `extra`. */
export const COMPANY_FILE_COLUMNS = ['name', 'domain', 'description', 'industry', 'employee_count', 'country', 'website'] as const;
type Column = (typeof COMPANY_FILE_COLUMNS)[number];

export interface CompanyHeader {
  at: Partial<Record<Column, number>>;
  /** Further columns: lower-case header and where it is. */
  extra: { name: string; index: number }[];
}

/**
 * Where each column is; the header names them in any order and case, with a blank for the
 * underscore if it likes (`Employee Count`). Only `name` must be there.
 */
export function companyHeader(header: string[]): CompanyHeader {
  const names = header.map((cell) => {
    const name = collapseBlanks(cell).toLowerCase();
    const known = name.replaceAll(' ', '_');
    return (COMPANY_FILE_COLUMNS as readonly string[]).includes(known) ? known : name;
  });
  if (!names.includes('name')) {
    throw new AppError(ERROR_CODES.columnNotFound, `the header row needs a name column (and may have ${COMPANY_FILE_COLUMNS.slice(1).join(', ')} and more)`, {
      details: { missing: ['name'] },
    });
  }
  const at: Partial<Record<Column, number>> = {};
  const extra: CompanyHeader['extra'] = [];
  const seen = new Set<string>();
  names.forEach((name, index) => {
    if (name === '' || seen.has(name)) return;
    seen.add(name);
    if ((COMPANY_FILE_COLUMNS as readonly string[]).includes(name)) at[name as Column] = index;
    else extra.push({ name, index });
  });
  return { at, extra };
}

export type CompanyLine = { ok: true; record: CompanyRecord } | { ok: false; code: string };

const COUNT = /^(?:\d+|\d{1,3}(?:[, _]\d{3})+)$/;

/**
 * One directory line, checked: a name of 1 to 200 characters (`empty_value`, `company_too_long`),
 * a domain that reads as a host (`invalid_domain`; `https://www.acme.com/` is stored `acme.com`),
 * a whole employee count (`invalid_employee_count`; `1,200` is 1200). Empty cells are nulls.
 */
export function companyLine(cells: string[], header: CompanyHeader): CompanyLine {
  const cell = (column: Column) => {
    const index = header.at[column];
    const value = index === undefined ? '' : collapseBlanks(cells[index] ?? '');
    return value === '' ? null : value;
  };
  const name = cell('name');
  if (name === null) return { ok: false, code: ERROR_CODES.emptyValue };
  if (charCount(name) > MAX_COMPANY_CHARS) return { ok: false, code: ERROR_CODES.companyTooLong };
  const rawDomain = cell('domain');
  const domain = rawDomain === null ? null : (domainOf(rawDomain) ?? false);
  if (domain === false) return { ok: false, code: ERROR_CODES.invalidDomain };
  const rawCount = cell('employee_count');
  const employeeCount = rawCount === null ? null : COUNT.test(rawCount) ? Number(rawCount.replace(/[, _]/g, '')) : NaN;
  if (employeeCount !== null && !Number.isSafeInteger(employeeCount)) return { ok: false, code: ERROR_CODES.invalidEmployeeCount };
  const extra: Record<string, string> = {};
  for (const { name: column, index } of header.extra) {
    const value = collapseBlanks(cells[index] ?? '');
    if (value !== '') extra[column] = value;
  }
  return {
    ok: true,
    record: {
      name,
      nameKey: nameKey(name),
      coreKey: coreName(name),
      domain,
      description: cell('description'),
      industry: cell('industry'),
      employeeCount,
      country: cell('country'),
      website: cell('website'),
      extra: Object.keys(extra).length === 0 ? null : JSON.stringify(extra),
    },
  };
}
