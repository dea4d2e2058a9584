import { AppError, ERROR_CODES } from '../../shared/errors.js';
import { IP_SOURCE_KINDS, pfx2asSource, type IpNetworkPort, type IpRowsByTable, type IpSourceKind, type IpTable } from '../../storage/ip-network-records.js';
import { isIsoDate, parseAsNamesLine, parseAsRelLine, parsePfx2asLine, parseRirLine, type ParsedLine } from './ip-import-formats.js';

/** A longer line is no line of these formats (a binary or compressed file): counted invalid, not buffered. */
const MAX_LINE_BYTES = 64 * 1024;
const BATCH_ROWS = 5_000;
const LISTED_INVALID = 10;

const PARSERS: Readonly<Record<IpSourceKind, (line: string) => ParsedLine>> = {
  rir: parseRirLine,
  pfx2as: parsePfx2asLine,
  asnames: parseAsNamesLine,
  asrel: parseAsRelLine,
};

const TABLE_OF: Readonly<Record<string, IpTable>> = {
  range: 'ranges',
  rirAsn: 'rirAsns',
  prefix: 'prefixes',
  asName: 'asNames',
  asOrg: 'asOrgs',
  asRel: 'asRelationships',
};

export interface IpImportSummary {
  source: string;
  /** The day the data describes: `--date`, else the file's own header (RIR files), else the import's day. */
  data_as_of: string;
  /** Lines read, comments and blank lines included. */
  lines: number;
  imported: number;
  /** Comments, summaries, and records without a holder (available or reserved space). */
  skipped: number;
  invalid: number;
  invalid_by_code: Record<string, number>;
  first_invalid: { line: number; code: string }[];
}

export interface IpImportOptions {
  /** YYYY-MM-DD; required for pfx2as, whose files carry no date. */
  date?: string | undefined;
  now: number;
  onBatch?: ((summary: IpImportSummary) => void) | undefined;
}

/**
 * Streams one file of a source into a new generation and makes it current in one step. Until that
 * step, lookups (in any process) read the previous generation; a killed import leaves rows of a
 * generation nobody reads, which the next import of the source deletes first. So an import is run
 * again from the start, and never leaves duplicates or half a file behind.
 */
export async function importIpSource(port: IpNetworkPort, kind: IpSourceKind, input: AsyncIterable<Buffer | Uint8Array | string>, options: IpImportOptions): Promise<IpImportSummary> {
  if (options.date !== undefined && !isIsoDate(options.date)) throw new AppError(ERROR_CODES.badArgument, `--date must be a day as YYYY-MM-DD, not "${options.date.slice(0, 20)}"`);
  if (kind === IP_SOURCE_KINDS.pfx2as && options.date === undefined) {
    throw new AppError(ERROR_CODES.badArgument, 'a pfx2as snapshot needs --date YYYY-MM-DD: the day it was taken, which orders the routing history');
  }
  const source = kind === IP_SOURCE_KINDS.pfx2as ? pfx2asSource(options.date!) : kind;
  const today = new Date(options.now).toISOString().slice(0, 10);
  const summary: IpImportSummary = { source, data_as_of: options.date ?? today, lines: 0, imported: 0, skipped: 0, invalid: 0, invalid_by_code: {}, first_invalid: [] };
  const parse = PARSERS[kind];
  const generation = await port.beginImport(source, options.now);
  let pending: { [T in IpTable]?: IpRowsByTable[T][] } = {};
  let pendingRows = 0;
  const flush = async () => {
    for (const [table, rows] of Object.entries(pending) as [IpTable, IpRowsByTable[IpTable][]][]) await port.write(generation, table, rows);
    pending = {};
    pendingRows = 0;
    options.onBatch?.(summary);
  };
  for await (const line of lines(input)) {
    summary.lines++;
    const parsed: ParsedLine = line === undefined ? { kind: 'invalid', code: ERROR_CODES.lineTooLong } : parse(line);
    switch (parsed.kind) {
      case 'skip':
        summary.skipped++;
        break;
      case 'date':
        summary.skipped++;
        if (options.date === undefined) summary.data_as_of = parsed.date;
        break;
      case 'invalid':
        summary.invalid++;
        summary.invalid_by_code[parsed.code] = (summary.invalid_by_code[parsed.code] ?? 0) + 1;
        if (summary.first_invalid.length < LISTED_INVALID) summary.first_invalid.push({ line: summary.lines, code: parsed.code });
        break;
      default: {
        const table = TABLE_OF[parsed.kind]!;
        ((pending[table] ??= []) as unknown[]).push(parsed.row);
        summary.imported++;
        if (++pendingRows >= BATCH_ROWS) await flush();
      }
    }
  }
  await flush();
  if (summary.imported === 0) throw new AppError(ERROR_CODES.noRows, `the file has no ${kind} records (${summary.invalid} invalid lines); the data in use is unchanged`);
  await port.commitImport({ source, generation, dataAsOf: summary.data_as_of, rows: summary.imported, now: options.now });
  return summary;
}

/**
 * The input's lines without their line ends (`\n` or `\r\n`), decoded as UTF-8 (a broken byte is
 * replaced: a name with one is still a name). A line over MAX_LINE_BYTES is yielded as undefined
 * and its bytes dropped as they come, so memory stays flat whatever the file holds.
 */
export async function* lines(input: AsyncIterable<Buffer | Uint8Array | string>): AsyncGenerator<string | undefined> {
  const decoder = new TextDecoder('utf-8');
  let carry = '';
  let overlong = false;
  for await (const chunk of input) {
    const text = carry + (typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }));
    let start = 0;
    for (let nl = text.indexOf('\n', start); nl >= 0; nl = text.indexOf('\n', start)) {
      if (overlong) yield undefined;
      else yield text.slice(start, nl > start && text.charCodeAt(nl - 1) === 13 ? nl - 1 : nl);
      overlong = false;
      start = nl + 1;
    }
    carry = text.slice(start);
    if (carry.length > MAX_LINE_BYTES) {
      overlong = true;
      carry = '';
    }
  }
  carry += decoder.decode();
  if (overlong) yield undefined;
  else if (carry !== '') yield carry.endsWith('\r') ? carry.slice(0, -1) : carry;
}
