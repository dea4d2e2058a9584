import fs from 'node:fs';
import { parseCountry } from '../../pipelines/phone-breaches.js';
import type { Engine } from '../jobs/engine.js';
import { readCsvRows } from '../jobs/csv-reader.js';
import { companyHeader, parseCompanyMap, type CompanyHeader, type CompanyMapping } from '../lookups/company/company-header.js';
import { companyLine } from '../lookups/company/company-records.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import type { CompanyRecord } from '../storage/records.js';
import type { CompaniesPort } from '../storage/store.js';
import { breachForm, type BreachForm, type BreachTargets } from './breach-forms.js';
import { IP_IMPORT_USAGE_LINES, ipImportCommand, isIpImport } from './ip-import-command.js';
import { parseCommand, printJson, type CliIo } from './cli-io.js';
import { importPasswordsCommand, PASSWORD_IMPORT_USAGE } from './password-import-command.js';

export const IMPORT_USAGE_LINES = [
  'sluice import breaches FILE [--default-country CC] [--json]',
  'sluice import companies FILE [--map "Header=column"]... [--json]',
  PASSWORD_IMPORT_USAGE,
  ...IP_IMPORT_USAGE_LINES,
] as const;
export const IMPORT_USAGE = IMPORT_USAGE_LINES.join('\n  ');

/** Bad rows listed by number; the rest are only counted, so a broken export does not flood the terminal. */
const LISTED_INVALID = 10;

/** What every import counts. */
interface Tally {
  rows: number;
  /** Entries new to the index or directory. */
  imported: number;
  invalid: number;
  invalid_by_code: Record<string, number>;
  /** The first few bad rows; `row` counts the header as row 1 and skips blank lines. */
  first_invalid: { row: number; code: string }[];
}

export interface ImportSummary extends Tally {
  /** Valid rows whose pair the index already held, or that repeated an earlier row of the file. */
  skipped: number;
}

export interface CompanyImportSummary extends Tally {
  /** Companies already in the directory (by domain, else by name) whose values changed. */
  updated: number;
  /** Companies already in the directory with exactly these values. */
  unchanged: number;
  /** Optional cells left empty because they could not be read; their companies were kept. */
  warnings: number;
  /** Those cells by directory column, then by code: `{ employee_count: { invalid_employee_count: 2 } }`. */
  warnings_by_column: Record<string, Record<string, number>>;
  /** The first few, numbered as `first_invalid` is. */
  first_warnings: { row: number; column: string; code: string }[];
}

/**
 * Loads a breach list into the index, or a company list into the directory. The file streams
 * through in the CSV reader's batches, each one atomic store write, so memory stays flat and an
 * interrupted import can simply be run again: what is already stored is skipped or updated.
 */
export async function importCommand(engine: Engine, args: string[], io: CliIo): Promise<number> {
  const [what, ...rest] = args;
  if (what === 'companies') return importCompaniesCommand(engine, rest, io);
  if (what === 'passwords') return importPasswordsCommand(engine, rest, io);
  if (isIpImport(what)) return ipImportCommand(engine, what, rest, io);
  if (what !== 'breaches') throw new AppError(ERROR_CODES.badArgument, `usage:\n  ${IMPORT_USAGE}`);
  const { values, positionals } = parseCommand(rest, { 'default-country': { type: 'string' } }, 1);
  const rawCountry = values['default-country'] as string | undefined;
  const defaultCountry = rawCountry === undefined ? undefined : parseCountry(rawCountry);
  if (rawCountry !== undefined && defaultCountry === undefined) {
    throw new AppError(ERROR_CODES.badArgument, `--default-country: unknown country "${rawCountry}"; give an ISO 3166-1 alpha-2 code such as DE or US`);
  }
  const file = existingFile(positionals[0]!);
  const progress = values.json ? undefined : progressLine(io.stderr, 'breaches');
  const summary = await importBreaches(engine.deps.store, fs.createReadStream(file), {
    maxLineBytes: engine.config.jobs.maxLineBytes,
    defaultCountry,
    onBatch: progress?.update,
  });
  progress?.done(summary);
  if (values.json) {
    printJson(io, { file, ...summary });
    return 0;
  }
  printText(io, summary, [`skipped    ${summary.skipped} (already in the index, or repeated in the file)`]);
  return 0;
}

async function importCompaniesCommand(engine: Engine, args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommand(args, { map: { type: 'string', multiple: true } }, 1);
  const map = parseCompanyMap((values.map as string[] | undefined) ?? []);
  const file = existingFile(positionals[0]!);
  const progress = values.json ? undefined : progressLine(io.stderr, 'companies');
  const summary = await importCompanies(engine.deps.store.companies, fs.createReadStream(file), {
    maxLineBytes: engine.config.jobs.maxLineBytes,
    map,
    onBatch: progress?.update,
  });
  progress?.done(summary);
  if (values.json) {
    printJson(io, { file, ...summary });
    return 0;
  }
  for (const { row, column, code } of summary.first_warnings) io.stderr.write(`row ${row}: ${column} left empty (${code})\n`);
  const byColumn = Object.entries(summary.warnings_by_column).map(([column, codes]) => `${column} ${Object.values(codes).reduce((a, b) => a + b, 0)}`);
  printText(io, summary, [
    `updated    ${summary.updated}`,
    `unchanged  ${summary.unchanged} (already in the directory with these values)`,
    `warnings   ${summary.warnings}${byColumn.length > 0 ? ` (cells left empty, companies kept: ${byColumn.join(', ')})` : ''}`,
  ]);
  return 0;
}

function existingFile(file: string): string {
  if (!fs.statSync(file, { throwIfNoEntry: false })?.isFile()) throw new AppError(ERROR_CODES.badArgument, `no such file: ${file}`);
  return file;
}

function printText(io: CliIo, summary: Tally, lines: string[]): void {
  for (const { row, code } of summary.first_invalid) io.stderr.write(`row ${row}: ${code}\n`);
  const codes = Object.entries(summary.invalid_by_code).map(([code, n]) => `${code} ${n}`);
  const invalid = `invalid    ${summary.invalid}${codes.length > 0 ? ` (${codes.join(', ')})` : ''}`;
  io.stdout.write([`rows       ${summary.rows}`, `imported   ${summary.imported}`, ...lines, invalid, ''].join('\n'));
}

function countInvalid(summary: Tally, code: string): void {
  summary.invalid++;
  summary.invalid_by_code[code] = (summary.invalid_by_code[code] ?? 0) + 1;
  if (summary.first_invalid.length < LISTED_INVALID) summary.first_invalid.push({ row: summary.rows + 1, code });
}

function countWarning(summary: CompanyImportSummary, column: string, code: string): void {
  summary.warnings++;
  const codes = (summary.warnings_by_column[column] ??= {});
  codes[code] = (codes[code] ?? 0) + 1;
  if (summary.first_warnings.length < LISTED_INVALID) summary.first_warnings.push({ row: summary.rows + 1, column, code });
}

/**
 * Loads a breach list into the phone or the email index, by the file's header (`breachForm`). A
 * (key, breach) pair is stored once: a line that repeats one already held (from this file or an
 * earlier import) is skipped and the first date (and data classes) stay.
 */
export async function importBreaches(
  targets: BreachTargets,
  source: AsyncIterable<Buffer | Uint8Array>,
  options: { maxLineBytes: number; defaultCountry?: string | undefined; onBatch?: ((summary: ImportSummary) => void) | undefined },
): Promise<ImportSummary> {
  const summary: ImportSummary = { rows: 0, imported: 0, skipped: 0, invalid: 0, invalid_by_code: {}, first_invalid: [] };
  let form: BreachForm | undefined;
  for await (const batch of readCsvRows(source, { maxLineBytes: options.maxLineBytes })) {
    for (const cells of batch) {
      if (form === undefined) {
        form = breachForm(cells, targets, options.defaultCountry);
        continue;
      }
      summary.rows++;
      const code = form.read(cells);
      if (code !== undefined) countInvalid(summary, code);
    }
    if (form === undefined) continue;
    const { rows, added } = await form.flush();
    summary.imported += added;
    summary.skipped += rows - added;
    options.onBatch?.(summary);
  }
  if (form === undefined) throw new AppError(ERROR_CODES.noRows, 'the file has no rows');
  return summary;
}

/**
 * Loads a company list (`name` required; `domain`, `description`, `industry`, `employee_count`,
 * `country`, `website` known, found by `map` or their aliases; any other column kept as extra)
 * into the directory. A company already there, by domain or else by name, is updated in place;
 * one with the same values is left alone, so a re-import changes nothing. An optional cell that
 * cannot be read is left empty and counted as a warning by column; the company is still stored.
 */
export async function importCompanies(
  companies: CompaniesPort,
  source: AsyncIterable<Buffer | Uint8Array>,
  options: { maxLineBytes: number; map?: readonly CompanyMapping[]; onBatch?: ((summary: CompanyImportSummary) => void) | undefined },
): Promise<CompanyImportSummary> {
  const summary: CompanyImportSummary = {
    rows: 0,
    imported: 0,
    updated: 0,
    unchanged: 0,
    invalid: 0,
    invalid_by_code: {},
    first_invalid: [],
    warnings: 0,
    warnings_by_column: {},
    first_warnings: [],
  };
  let header: CompanyHeader | undefined;
  for await (const batch of readCsvRows(source, { maxLineBytes: options.maxLineBytes })) {
    const records: CompanyRecord[] = [];
    for (const cells of batch) {
      if (header === undefined) {
        header = companyHeader(cells, options.map);
        continue;
      }
      summary.rows++;
      const line = companyLine(cells, header);
      if (!line.ok) {
        countInvalid(summary, line.code);
        continue;
      }
      records.push(line.record);
      for (const { column, code } of line.warnings) countWarning(summary, column, code);
    }
    if (records.length > 0) {
      const write = await companies.upsert(records);
      summary.imported += write.inserted;
      summary.updated += write.updated;
      summary.unchanged += write.unchanged;
    }
    options.onBatch?.(summary);
  }
  if (header === undefined) throw new AppError(ERROR_CODES.noRows, 'the file has no rows');
  return summary;
}

/** A redrawn line on a terminal, a plain line every 2 seconds elsewhere (as `sluice run` does). */
function progressLine(out: NodeJS.WriteStream, what: string, now: () => number = Date.now) {
  const started = now();
  let last = started;
  const write = (s: Tally) => {
    const rate = Math.round(s.rows / Math.max((now() - started) / 1000, 0.001));
    const line = `importing ${what}: ${s.rows.toLocaleString('en-US')} rows, ${s.imported.toLocaleString('en-US')} new, ${s.invalid.toLocaleString('en-US')} invalid, ${rate.toLocaleString('en-US')} rows/s`;
    out.write(out.isTTY ? `\r${line}` : `${line}\n`);
    last = now();
  };
  return {
    update(s: Tally) {
      if (now() - last >= (out.isTTY ? 200 : 2000)) write(s);
    },
    done(s: Tally) {
      write(s);
      if (out.isTTY) out.write('\n');
    },
  };
}
