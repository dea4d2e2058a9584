import { normaliseEmail } from '../../pipelines/gender.js';
import { normalisePhone } from '../../pipelines/phone-breaches.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { DATA_CLASS_SEPARATOR } from '../storage/directory-rules.js';
import type { BreachRow, EmailBreachRow } from '../storage/records.js';
import type { BreachesPort, Store } from '../storage/store.js';

/**
 * Where a breach list goes: the store's two indexes, or the phone index alone (which then loads
 * phone files only).
 */
export type BreachTargets = BreachesPort | Pick<Store, 'breaches' | 'emailBreaches'>;

/** One kind of breach file, chosen by its header: reads lines into a batch, and stores the batch. */
export interface BreachForm {
  /** Adds one line to the pending batch; or the code of why it cannot. */
  read(cells: readonly string[]): string | undefined;
  /** Stores the pending batch in one atomic write: its valid lines, and how many pairs were new. */
  flush(): Promise<{ rows: number; added: number }>;
}

const MAX_BREACH_NAME = 200;
/** Generous for any real breach (HIBP's largest lists about 40); beyond that a cell is not a list of data classes. */
const MAX_DATA_CLASSES = 100;
const MAX_DATA_CLASS = 100;

const PHONE_COLUMNS = ['phone', 'breach', 'breached_at'] as const;
const EMAIL_COLUMNS = ['email', 'breach', 'breached_at'] as const;
const DATA_CLASSES = 'data_classes';

/**
 * The form the header names (any order and case; other columns ignored): `phone`, `breach`,
 * `breached_at` for the phone index, or `email`, `breach`, `breached_at` and optionally
 * `data_classes` for the email index. A header with both a phone and an email column is refused:
 * which index its lines belong to would be a guess.
 */
export function breachForm(header: readonly string[], targets: BreachTargets, defaultCountry: string | undefined): BreachForm {
  const names = header.map((cell) => cell.trim().toLowerCase());
  const hasEmail = names.includes('email');
  if (hasEmail && names.includes('phone')) {
    throw new AppError(ERROR_CODES.ambiguousColumn, 'the header row has both a phone and an email column; a breach file holds numbers or addresses, give each its own file');
  }
  if (!hasEmail) {
    const [phoneAt, breachAt, dateAt] = columnsOf(names, PHONE_COLUMNS, 'phone (or email)');
    return batching('emailBreaches' in targets ? targets.breaches : targets, (cells): BreachRow | string => {
      const phone = normalisePhone(cells[phoneAt] ?? '', { defaultCountry });
      if (!phone.ok) return phone.code;
      const common = breachAndDate(cells[breachAt], cells[dateAt]);
      return typeof common === 'string' ? common : { phone: phone.key, ...common };
    });
  }
  if (!('emailBreaches' in targets)) throw new AppError(ERROR_CODES.badArgument, 'an email breach file needs the store\'s email breach index, not the phone index alone');
  const [emailAt, breachAt, dateAt] = columnsOf(names, EMAIL_COLUMNS, 'email');
  const classesAt = names.indexOf(DATA_CLASSES);
  return batching(targets.emailBreaches, (cells): EmailBreachRow | string => {
    const email = normaliseEmail(cells[emailAt] ?? '');
    if (!email.ok) return email.code;
    const common = breachAndDate(cells[breachAt], cells[dateAt]);
    if (typeof common === 'string') return common;
    const dataClasses = classesAt < 0 ? [] : parseDataClasses(cells[classesAt] ?? '');
    return dataClasses === undefined ? ERROR_CODES.invalidDataClasses : { email: email.key, ...common, dataClasses };
  });
}

/**
 * A cell's data classes, `;`-separated (`Email addresses;Passwords`): each trimmed, blanks dropped,
 * repeats dropped (the first spelling kept), in the order given. Undefined for more than 100 classes
 * or one longer than 100 characters.
 */
export function parseDataClasses(cell: string): string[] | undefined {
  const classes = [...new Set(cell.split(DATA_CLASS_SEPARATOR).map((c) => c.trim()).filter((c) => c !== ''))];
  if (classes.length > MAX_DATA_CLASSES || classes.some((c) => c.length > MAX_DATA_CLASS)) return undefined;
  return classes;
}

function batching<T>(index: { add(rows: readonly T[]): Promise<number> }, line: (cells: readonly string[]) => T | string): BreachForm {
  let pending: T[] = [];
  return {
    read(cells) {
      const row = line(cells);
      if (typeof row === 'string') return row;
      pending.push(row);
      return undefined;
    },
    async flush() {
      const rows = pending;
      pending = [];
      return { rows: rows.length, added: rows.length === 0 ? 0 : await index.add(rows) };
    },
  };
}

function breachAndDate(rawBreach: string | undefined, rawDate: string | undefined): { breach: string; breachedAt: string | null } | string {
  const breach = (rawBreach ?? '').trim();
  const date = (rawDate ?? '').trim();
  if (breach === '' || breach.length > MAX_BREACH_NAME) return ERROR_CODES.invalidBreach;
  if (date !== '' && !isIsoDate(date)) return ERROR_CODES.invalidDate;
  return { breach, breachedAt: date === '' ? null : date };
}

function columnsOf(names: readonly string[], columns: readonly [string, string, string], keyName: string): [number, number, number] {
  const missing = columns.filter((name) => !names.includes(name));
  if (missing.length > 0) {
    throw new AppError(ERROR_CODES.columnNotFound, `the header row needs the columns ${[keyName, ...columns.slice(1)].join(', ')}; missing: ${missing.join(', ')}`, {
      details: { missing },
    });
  }
  return [names.indexOf(columns[0]), names.indexOf(columns[1]), names.indexOf(columns[2])];
}

/** A real calendar date written `YYYY-MM-DD`; `2023-02-30` is refused, not rolled over. */
function isIsoDate(text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false;
  const date = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === text;
}
