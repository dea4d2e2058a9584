/**
 * What both adapters' breach index and company directory share: the result-cache kinds their
 * imports forget (the lookups name them so too: the storage layer may not import the lookups), and
 * how a misspelt company name is cut into pieces for the spelling search.
 */
import type { BreachRecord, EmailBreachRecord } from './records.js';

export const PHONE_BREACHES_KIND = 'phone_breaches';
export const EMAIL_BREACHES_KIND = 'email_breaches';
export const COMPANY_KIND = 'company';

/**
 * The core name cut into 2 to 4 pieces of at least 3 characters; a name shorter than 6 into its
 * first and last 3 (which overlap). By pigeonhole, a name one edit away keeps all pieces but one.
 */
export function spellingPieces(chars: readonly string[]): string[] {
  const n = chars.length;
  if (n < 6) return [...new Set([chars.slice(0, 3).join(''), chars.slice(n - 3).join('')])];
  const count = Math.min(4, Math.floor(n / 3));
  return Array.from({ length: count }, (_, i) => chars.slice(Math.floor((i * n) / count), Math.floor(((i + 1) * n) / count)).join(''));
}

/** Breach rows, in the order the query gave them, grouped by number. */
export function breachesByPhone(rows: Iterable<{ phone: string; breach: string; breached_at: string | null }>): Map<string, BreachRecord[]> {
  const byPhone = new Map<string, BreachRecord[]>();
  for (const row of rows) {
    const records = byPhone.get(row.phone);
    const record = { breach: row.breach, breachedAt: row.breached_at };
    if (records === undefined) byPhone.set(row.phone, [record]);
    else records.push(record);
  }
  return byPhone;
}

/** The separator of stored data classes; the import refuses a class that holds it. */
export const DATA_CLASS_SEPARATOR = ';';

/** Email breach rows, in the order the query gave them, grouped by address. */
export function breachesByEmail(
  rows: Iterable<{ email: string; breach: string; breached_at: string | null; data_classes: string }>,
): Map<string, EmailBreachRecord[]> {
  const byEmail = new Map<string, EmailBreachRecord[]>();
  for (const row of rows) {
    const record = { breach: row.breach, breachedAt: row.breached_at, dataClasses: row.data_classes === '' ? [] : row.data_classes.split(DATA_CLASS_SEPARATOR) };
    const records = byEmail.get(row.email);
    if (records === undefined) byEmail.set(row.email, [record]);
    else records.push(record);
  }
  return byEmail;
}
