import zlib from 'node:zlib';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ERROR_CODES, type ErrorCode } from '../../src/shared/errors.js';
import {
  bearer,
  closeHarnesses,
  expectNoLeak,
  jobCount,
  json,
  multipart,
  newAccount,
  openApiHarness,
  runUntilDone,
  storedObjects,
  streamToBuffer,
  type ApiHarness,
  type Part,
} from '../support/api-harness.js';
import { removeScratchDirs, scratchDir } from '../support/cli-process.js';
import { parseCsv } from '../support/csv-fixture.js';

/**
 * The hostile input corpus (DESIGN guarantees 4 and 6), one table per way in. Every case ends in
 * the right rows or in a stable error code, and whatever is rejected costs nothing: credits and
 * ledger are compared before and after. Each case gets its own engine and temp data dir.
 */

afterEach(async () => {
  await closeHarnesses();
  removeScratchDirs();
});

/** A harness in a scratch data dir, removed after the test: the 1,000,001-row case leaves ~40 MB. */
function open(env: Record<string, string> = {}): Promise<ApiHarness> {
  return openApiHarness({ ...env, SLUICE_DATA_DIR: scratchDir('sluice-hostile-') });
}

const CREDITS = 1_000;
const RESULT_COLUMNS = ['gender', 'country', 'probability', 'status', 'credits', 'cached', 'error'];
const PHONE_RESULT_COLUMNS = ['phone_e164', 'breached', 'total_breaches', 'first_breached', 'last_breached', 'summary', 'status', 'credits', 'cached', 'error'];

/**
 * A file either becomes these rows (original cells, header first, as the output CSV holds them;
 * for a phone job each ok row's `phone_e164` too) or fails with `code`.
 */
type FileOutcome = { rows: string[][]; statuses?: string[]; e164?: string[] } | { code: ErrorCode };

interface FileCase {
  name: string;
  input: string | Buffer;
  env?: Record<string, string>;
  /** Upload fields besides the file; `type` defaults to gender. */
  fields?: Record<string, string>;
  outcome: FileOutcome;
}

const ok = (rows: string[][], statuses?: string[]): FileOutcome => (statuses ? { rows, statuses } : { rows });
const fails = (code: ErrorCode): FileOutcome => ({ code });

// csv-spectrum (github.com/max-mapper/csv-spectrum), each with an `email` column appended so
// that the gender pipeline has its key, the original cells left exactly as the suite has them.
const spectrum: FileCase[] = [
  {
    name: 'comma_in_quotes',
    input: 'first,last,address,city,zip,email\nJohn,Doe,120 any st.,"Anytown, WW",08123,john.doe@example.com\n',
    outcome: ok([['first', 'last', 'address', 'city', 'zip', 'email'], ['John', 'Doe', '120 any st.', 'Anytown, WW', '08123', 'john.doe@example.com']]),
  },
  {
    name: 'empty',
    input: 'a,b,c,email\n1,"","",ann@example.com\n2,3,4,bob@example.com\n',
    outcome: ok([['a', 'b', 'c', 'email'], ['1', '', '', 'ann@example.com'], ['2', '3', '4', 'bob@example.com']]),
  },
  {
    name: 'empty_crlf',
    input: 'a,b,c,email\r\n1,"","",ann@example.com\r\n2,3,4,bob@example.com\r\n',
    outcome: ok([['a', 'b', 'c', 'email'], ['1', '', '', 'ann@example.com'], ['2', '3', '4', 'bob@example.com']]),
  },
  {
    name: 'escaped_quotes',
    input: 'a,b,email\n1,"ha ""ha"" ha",ann@example.com\n3,4,bob@example.com\n',
    outcome: ok([['a', 'b', 'email'], ['1', 'ha "ha" ha', 'ann@example.com'], ['3', '4', 'bob@example.com']]),
  },
  {
    name: 'json',
    input: 'key,val,email\n1,"{""type"": ""Point"", ""coordinates"": [102.0, 0.5]}",ann@example.com\n',
    outcome: ok([['key', 'val', 'email'], ['1', '{"type": "Point", "coordinates": [102.0, 0.5]}', 'ann@example.com']]),
  },
  {
    name: 'newlines',
    input: 'a,b,c,email\n1,2,3,ann@example.com\n"Once upon \na time",5,6,bob@example.com\n7,8,9,cat@example.com\n',
    outcome: ok([['a', 'b', 'c', 'email'], ['1', '2', '3', 'ann@example.com'], ['Once upon \na time', '5', '6', 'bob@example.com'], ['7', '8', '9', 'cat@example.com']]),
  },
  {
    name: 'newlines_crlf',
    input: 'a,b,c,email\r\n1,2,3,ann@example.com\r\n"Once upon \r\na time",5,6,bob@example.com\r\n7,8,9,cat@example.com\r\n',
    outcome: ok([['a', 'b', 'c', 'email'], ['1', '2', '3', 'ann@example.com'], ['Once upon \r\na time', '5', '6', 'bob@example.com'], ['7', '8', '9', 'cat@example.com']]),
  },
  {
    name: 'quotes_and_newlines',
    input: 'a,b,email\n1,"ha \n""ha"" \nha",ann@example.com\n3,4,bob@example.com\n',
    outcome: ok([['a', 'b', 'email'], ['1', 'ha \n"ha" \nha', 'ann@example.com'], ['3', '4', 'bob@example.com']]),
  },
  { name: 'simple', input: 'a,b,c,email\n1,2,3,ann@example.com\n', outcome: ok([['a', 'b', 'c', 'email'], ['1', '2', '3', 'ann@example.com']]) },
  { name: 'simple_crlf', input: 'a,b,c,email\r\n1,2,3,ann@example.com\r\n', outcome: ok([['a', 'b', 'c', 'email'], ['1', '2', '3', 'ann@example.com']]) },
  {
    name: 'utf8',
    input: 'a,b,c,email\n1,2,3,ann@example.com\n4,5,ʤ,bob@example.com\n',
    outcome: ok([['a', 'b', 'c', 'email'], ['1', '2', '3', 'ann@example.com'], ['4', '5', 'ʤ', 'bob@example.com']]),
  },
];

const LINE_LIMIT = { SLUICE_MAX_LINE_BYTES: '1024' };
const ROW_LIMIT = { SLUICE_MAX_ROWS: '5' };
const CELL_LIMIT = { SLUICE_MAX_CELLS_PER_ROW: '4' };
const emails = (n: number): string => Array.from({ length: n }, (_, i) => `person${i}@example.com\n`).join('');
const LONG_CELL = `"${'a,"" '.repeat(12_000)}"`;
const FORMULAS = ['=1+1', '+cmd|calc', '-2+3', '@SUM(A1)', '\tx', '\rx', '=HYPERLINK("http://x.test","click")', '-12.5', '+442079460958'];

/** Issue 19, item 8: the real-world forms that are hostile rather than ordinary. */
const TEXT_64K = `email,name\n${'ann@example.com,Ann\n'.repeat(Math.ceil(65_536 / 19))}`;
const GARBAGE = Buffer.from(Array.from({ length: 240 }, (_, i) => (i * 167 + 89) % 256).filter((b) => b !== 0));
const TEN_COUNTRIES = [
  'id,phone,Country',
  '1,(415) 816-6557,United States',
  '2,030 1234567,DE',
  '3,020 7946 0958,UK',
  '4,06 12 34 56 78,France',
  '5,612 34 56 78,España',
  '6,06 123 4567,+39',
  '7,06 12345678,Nederland',
  '8,(11) 91234-5678,Brasil',
  '9,090-1234-5678,81',
  '10,098765 43210,India',
  '11,(604) 555-0134,Canada',
  '12,+49 30 7654321,US',
  '13,(415) 816-6557 x12,usa',
  '14,030 7654321,Narnia',
  '15,(415) 816-6557,',
];
const utf16be = (text: string): Buffer => Buffer.from(text, 'utf16le').swap16();

const issue19: FileCase[] = [
  { name: 'UTF-16LE without a BOM', input: Buffer.from('email,name\nann@example.com,Zoë\n', 'utf16le'), outcome: fails(ERROR_CODES.utf16WithoutBom) },
  { name: 'UTF-16BE without a BOM', input: utf16be('email,name\nann@example.com,Zoë\n'), outcome: fails(ERROR_CODES.utf16WithoutBom) },
  {
    name: 'UTF-16LE without a BOM, declared, gives its rows',
    input: Buffer.from('email,name\nann@example.com,Zoë\n', 'utf16le'),
    fields: { encoding: 'utf-16le' },
    outcome: ok([['email', 'name'], ['ann@example.com', 'Zoë']]),
  },
  {
    name: 'Windows-1252 bytes invalid in UTF-8 mixed with UTF-8, declared windows-1252: read byte for byte, never refused',
    input: Buffer.concat([Buffer.from('email;name\nann@example.com;José\nbob@example.com;Ren'), Buffer.from([0xe9, 0x93, 0x80]), Buffer.from('\n')]),
    fields: { encoding: 'windows-1252' },
    outcome: ok([['email', 'name'], ['ann@example.com', 'JosÃ©'], ['bob@example.com', 'René“€']]),
  },
  {
    name: 'a Windows-1252 byte after 64 KiB of plain ASCII: UTF-8 is strict to the end',
    input: Buffer.concat([Buffer.from(TEXT_64K), Buffer.from('bob@example.com,Ren'), Buffer.from([0xe9]), Buffer.from('\n')]),
    outcome: fails(ERROR_CODES.invalidUtf8),
  },
  {
    name: 'Windows-1252 with its 0x80-0x9F block (curly quotes, euro, dashes) and no UTF-8',
    input: Buffer.concat([Buffer.from('email;note\nann@example.com;'), Buffer.from([0x93, 0x41, 0x94, 0x20, 0x80, 0x35, 0x20, 0x96, 0x20, 0x99]), Buffer.from('\n')]),
    outcome: ok([['email', 'note'], ['ann@example.com', '“A” €5 – ™']]),
  },
  { name: 'two headers that match the key name alike (Email, E-Mail)', input: 'Email,E-Mail\nann@example.com,bob@example.com\n', outcome: fails(ERROR_CODES.ambiguousColumn) },
  { name: 'two headers of one alias rank (Work Email, Personal Email)', input: 'Work Email,Personal Email\nann@example.com,bob@example.com\n', outcome: fails(ERROR_CODES.ambiguousColumn) },
  {
    name: 'mixed line ends in a semicolon file, quoted ones kept',
    input: 'email;n\r\nann@example.com;"a\r\nb"\nbob@example.com;2\rcat@example.com;"c\rd"',
    outcome: ok([['email', 'n'], ['ann@example.com', 'a\r\nb'], ['bob@example.com', '2'], ['cat@example.com', 'c\rd']]),
  },
  { name: 'a UTF-8 BOM followed by garbage', input: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), GARBAGE]), outcome: fails(ERROR_CODES.invalidUtf8) },
  { name: 'a UTF-16LE BOM followed by garbage', input: Buffer.concat([Buffer.from([0xff, 0xfe]), GARBAGE]), outcome: fails(ERROR_CODES.invalidUtf16) },
  { name: 'a UTF-16BE BOM followed by garbage', input: Buffer.concat([Buffer.from([0xfe, 0xff]), GARBAGE]), outcome: fails(ERROR_CODES.invalidUtf16) },
  { name: 'a UTF-16LE BOM followed by a NUL character', input: Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('email\nann\u0000@example.com\n', 'utf16le')]), outcome: fails(ERROR_CODES.binaryFile) },
  // Not compressed_file: the BOM hides the magic number, and the NUL bytes of the stream name it binary.
  { name: 'a UTF-8 BOM before a gzip stream', input: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), zlib.gzipSync('email\nann@example.com\n')]), outcome: fails(ERROR_CODES.binaryFile) },
  {
    name: 'the delimiter sample (64 Ki characters) ends inside a quoted cell holding commas',
    input: `email;notes, more\nann@example.com;"${'a,'.repeat(30_000)}x"\nbob@example.com;"${'b,'.repeat(5_000)}y"\n`,
    outcome: ok([['email', 'notes, more'], ['ann@example.com', `${'a,'.repeat(30_000)}x`], ['bob@example.com', `${'b,'.repeat(5_000)}y`]]),
  },
  {
    name: 'numbers from 10 countries in one file, with a country column and a default country',
    input: TEN_COUNTRIES.join('\n'),
    fields: { type: 'phone_breaches', default_country: 'DE' },
    outcome: {
      rows: TEN_COUNTRIES.map((line) => line.split(',')),
      statuses: [...Array(12).fill('ok'), 'duplicate', 'invalid', 'invalid'],
      e164: ['+14158166557', '+49301234567', '+442079460958', '+33612345678', '+34612345678', '+39061234567', '+31612345678', '+5511912345678', '+819012345678', '+919876543210', '+16045550134', '+49307654321', '+14158166557', '', ''],
    },
  },
];

const hostile: FileCase[] = [
  { name: 'a UTF-8 BOM before the header is dropped', input: '\uFEFFemail,name\nann@example.com,Ann\n', outcome: ok([['email', 'name'], ['ann@example.com', 'Ann']]) },
  { name: 'CRLF line ends', input: 'email,n\r\nann@example.com,1\r\nbob@example.com,2\r\n', outcome: ok([['email', 'n'], ['ann@example.com', '1'], ['bob@example.com', '2']]) },
  { name: 'lone CR line ends', input: 'email,n\rann@example.com,1\rbob@example.com,2\r', outcome: ok([['email', 'n'], ['ann@example.com', '1'], ['bob@example.com', '2']]) },
  { name: 'mixed line ends, no final one', input: 'email,n\r\nann@example.com,1\nbob@example.com,2\rcat@example.com,3', outcome: ok([['email', 'n'], ['ann@example.com', '1'], ['bob@example.com', '2'], ['cat@example.com', '3']]) },
  {
    name: 'quoted LF, CRLF and CR are cell data, not row ends',
    input: 'email,note\nann@example.com,"a\nb"\r\nbob@example.com,"c\r\nd"\rcat@example.com,"e\rf"\n',
    outcome: ok([['email', 'note'], ['ann@example.com', 'a\nb'], ['bob@example.com', 'c\r\nd'], ['cat@example.com', 'e\rf']]),
  },
  ...(['\r\n', '\r'] as const).map((end): FileCase => ({
    name: `a quote inside an unquoted cell is data, with ${end === '\r' ? 'lone CR' : 'CRLF'} line ends`,
    input: ['email,note', 'ann@example.com,5" screen', 'bob@example.com,x', 'cat@example.com,"y"'].join(end) + end,
    outcome: ok([['email', 'note'], ['ann@example.com', '5" screen'], ['bob@example.com', 'x'], ['cat@example.com', 'y']]),
  })),
  { name: 'an unbalanced quote', input: 'email,note\nann@example.com,"never closed\nbob@example.com,x\n', outcome: fails(ERROR_CODES.malformedCsv) },
  { name: 'a stray quote inside a quoted cell', input: 'email,note\nann@example.com,"a "b" c"\nbob@example.com,x\n', outcome: fails(ERROR_CODES.malformedCsv) },
  {
    name: 'duplicate header names other than the key are kept',
    input: 'email,name,name\nann@example.com,A,B\n',
    outcome: ok([['email', 'name', 'name'], ['ann@example.com', 'A', 'B']]),
  },
  { name: 'two email columns: which one to charge for is a guess, so ambiguous_column', input: 'email,name,name,email\nann@example.com,A,B,bob@example.com\n', outcome: fails(ERROR_CODES.ambiguousColumn) },
  { name: 'empty header names', input: 'email,,\nann@example.com,x,y\n', outcome: ok([['email', '', ''], ['ann@example.com', 'x', 'y']]) },
  {
    name: 'ragged rows: short ones padded, long ones get column_N headers',
    input: 'email,n\nann@example.com\nbob@example.com,2,extra\n',
    outcome: ok([['email', 'n', 'column_3'], ['ann@example.com', '', ''], ['bob@example.com', '2', 'extra']]),
  },
  {
    name: 'bad rows are data: counted, coded, never charged',
    input: 'email,n\nann@example.com,1\n,2\nnot an email,3\nANN@example.com ,4\n',
    outcome: ok([['email', 'n'], ['ann@example.com', '1'], ['', '2'], ['not an email', '3'], ['ANN@example.com ', '4']], ['ok', 'invalid', 'invalid', 'duplicate']),
  },
  { name: 'a header wider than the cell limit', env: CELL_LIMIT, input: 'email,a,b,c,d\nann@example.com,1,2,3,4\n', outcome: fails(ERROR_CODES.tooManyColumns) },
  {
    name: 'a data row wider than the cell limit is invalid (row_too_wide), cut to the header, and the job goes on',
    env: CELL_LIMIT,
    input: 'email,n\nann@example.com,1\nbob@example.com,1,2,3,4\ncat@example.com,3\n',
    outcome: ok([['email', 'n'], ['ann@example.com', '1'], ['bob@example.com', '1'], ['cat@example.com', '3']], ['ok', 'invalid', 'ok']),
  },
  {
    name: 'a row of exactly the cell limit is kept whole',
    env: CELL_LIMIT,
    input: 'email,n\nann@example.com,1,2,3\n',
    outcome: ok([['email', 'n', 'column_3', 'column_4'], ['ann@example.com', '1', '2', '3']]),
  },
  { name: 'no email column and no email in column 1', input: 'id,name\n1,Ann\n', outcome: fails(ERROR_CODES.noKeyColumn) },
  { name: 'a line over the line-length limit', env: LINE_LIMIT, input: `email,notes\nann@example.com,${'x'.repeat(2_000)}\n`, outcome: fails(ERROR_CODES.lineTooLong) },
  {
    name: 'a line of exactly the line-length limit (1024 bytes with its LF)',
    env: LINE_LIMIT,
    input: `email,notes\nann@example.com,${'x'.repeat(1024 - 17)}\n`,
    outcome: ok([['email', 'notes'], ['ann@example.com', 'x'.repeat(1024 - 17)]]),
  },
  {
    name: 'very long cells (60 KB, quoted, commas and quotes) at the default limit round-trip exactly',
    input: `email,long\nann@example.com,${LONG_CELL}\n`,
    outcome: ok([['email', 'long'], ['ann@example.com', 'a," '.repeat(12_000)]]),
  },
  { name: 'a Latin-1 é with no UTF-8 around it is read as Windows-1252', input: Buffer.concat([Buffer.from('email,name\nann@example.com,Ren'), Buffer.from([0xe9]), Buffer.from('\n')]), outcome: ok([['email', 'name'], ['ann@example.com', 'René']]) },
  { name: 'UTF-8 beside a byte invalid in it is refused', input: Buffer.concat([Buffer.from('email,name\nann@example.com,José\nbob@example.com,Ren'), Buffer.from([0xe9]), Buffer.from('\n')]), outcome: fails(ERROR_CODES.invalidUtf8) },
  { name: 'UTF-16 text with its BOM', input: Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('email\nann@example.com\n', 'utf16le')]), outcome: ok([['email'], ['ann@example.com']]) },
  { name: 'a binary file (PNG)', input: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52]), outcome: fails(ERROR_CODES.binaryFile) },
  { name: 'a NUL byte in the middle of a text file', input: Buffer.from('email\nann@example.com\nbob\u0000@example.com\n'), outcome: fails(ERROR_CODES.binaryFile) },
  { name: 'a gzip file sent as CSV', input: zlib.gzipSync('email\nann@example.com\n'), outcome: fails(ERROR_CODES.compressedFile) },
  { name: 'a ZIP (xlsx) file sent as CSV', input: Buffer.from([0x50, 0x4b, 0x03, 0x04, 0x14, 0, 0, 0, 8, 0]), outcome: fails(ERROR_CODES.compressedFile) },
  { name: 'a header-only file', input: 'email,name\n', outcome: fails(ERROR_CODES.noRows) },
  { name: 'a header-only file without a line end', input: 'email', outcome: fails(ERROR_CODES.noRows) },
  { name: 'an empty file (0 bytes)', input: '', outcome: fails(ERROR_CODES.emptyFile) },
  { name: 'a file of only a BOM', input: '\uFEFF', outcome: fails(ERROR_CODES.emptyFile) },
  { name: 'a file of only blank lines', input: '\n\r\n  \n', outcome: fails(ERROR_CODES.noRows) },
  { name: 'exactly the row limit (blank lines not counted)', env: ROW_LIMIT, input: `email\n${emails(5)}\n\n`, outcome: ok([['email'], ...emails(5).trim().split('\n').map((e) => [e])]) },
  { name: 'one row over the row limit', env: ROW_LIMIT, input: `email\n${emails(6)}`, outcome: fails(ERROR_CODES.tooManyRows) },
  {
    name: 'cells a spreadsheet would run are escaped, in the header, pass-through and key columns',
    input: `email,=HEADER,${FORMULAS.map((_, i) => `c${i}`).join(',')}\n=ann@example.com,x,${FORMULAS.map((c) => `"${c.replace(/"/g, '""')}"`).join(',')}\n`,
    outcome: ok([
      ['email', "'=HEADER", ...FORMULAS.map((_, i) => `c${i}`)],
      ["'=ann@example.com", 'x', "'=1+1", "'+cmd|calc", "'-2+3", "'@SUM(A1)", "'\tx", "'\rx", '\'=HYPERLINK("http://x.test","click")', '-12.5', '+442079460958'],
    ]),
  },
  ...issue19,
];

describe('hostile CSV files, uploaded and run through the engine', () => {
  it.each([...spectrum.map((c) => ({ ...c, name: `csv-spectrum ${c.name}` })), ...hostile].map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    await expectFileOutcome(await open(c.env), c.input, c.outcome, c.fields);
  });
});

/**
 * The real limit at its real default. Building, uploading and splitting 1,000,001 rows took about
 * 6 s when measured (well under the 20 s budget), so it runs with the rest; the small configured
 * limit above covers the same rule at its edges. Full-size chunks: the test default of 500 rows
 * would make 2,000 chunk objects before the limit trips.
 */
describe('the default row limit of 1,000,000', () => {
  it('a file of 1,000,001 rows fails with too_many_rows and charges nothing', async () => {
    const h = await open({ SLUICE_CHUNK_ROWS: '25000', SLUICE_BATCH_ROWS: '1000' });
    expect(h.engine.config.jobs.maxRows).toBe(1_000_000);
    await expectFileOutcome(h, Buffer.from(`email\n${emails(1_000_001)}`), fails(ERROR_CODES.tooManyRows));
  }, 120_000);
});

/**
 * Issue 16, item 3: 1,200 rows of 21,800 cells went through in batches of 1,000 rows, and took the
 * process to 3.47 GB. The same shape scaled down: rows of 900 cells (under the default limit of
 * 1,000) and every fifth of 1,500 (over it), with byte budgets small enough for the cut to show at
 * this size. Memory itself is the benchmark's to measure (bench/scenario-memory.ts, row `memory, wide rows`); this
 * checks what bounds it: no checkpoint batch renders more than the batch budget (a row's output
 * is smaller than its chunk line here, which quotes every cell), and no chunk object passes the
 * chunk budget by more than its last row.
 */
describe('wide rows', () => {
  const BATCH_BYTES = 64 * 1024;
  const CHUNK_BYTES = 256 * 1024;
  const ROWS = 60;
  const wideRow = (i: number, cells: number): string[] => [`person${i}@example.com`, ...Array.from({ length: cells - 1 }, (_, c) => `v${(i + c) % 10}xxxxxx`)];

  it('are cut into batches and chunks by bytes; rows over the cell limit are invalid with row_too_wide; the counts are right', async () => {
    const h = await open({ SLUICE_BATCH_BYTES: String(BATCH_BYTES), SLUICE_CHUNK_BYTES: String(CHUNK_BYTES) });
    expect(h.engine.config.jobs.maxCellsPerRow).toBe(1_000);
    const commits = vi.spyOn(h.engine.deps.jobs, 'commitBatch');
    const puts = vi.spyOn(h.engine.deps.objects, 'putBytes');
    const header = ['email', ...Array.from({ length: 899 }, (_, c) => `c${c + 2}`)];
    const rows = Array.from({ length: ROWS }, (_, i) => wideRow(i, i % 5 === 4 ? 1_500 : 900));
    const input = [header, ...rows].map((r) => r.join(',')).join('\n') + '\n';
    const tooWide = rows.map((_, i) => i % 5 === 4);

    const id = await expectFileOutcome(
      h,
      input,
      ok([header, ...rows.map((r) => r.slice(0, header.length))], tooWide.map((wide) => (wide ? 'invalid' : 'ok'))),
    );

    const [, ...result] = await parseCsv(await streamToBuffer(await h.engine.jobService.openResult(id!, 'all')));
    expect(result.map((r) => r[header.length + RESULT_COLUMNS.indexOf('error')])).toEqual(tooWide.map((wide) => (wide ? ERROR_CODES.rowTooWide : '')));
    const batchBytes = commits.mock.calls.map(([commit]) => Buffer.byteLength(commit.output.allText));
    expect(batchBytes.reduce((a, b) => a + b, 0)).toBeGreaterThan(5 * BATCH_BYTES);
    for (const bytes of batchBytes) expect(bytes).toBeLessThanOrEqual(BATCH_BYTES);
    const chunkBytes = puts.mock.calls.filter(([key]) => key.includes('/chunks/')).map(([, body]) => Buffer.byteLength(body as Buffer));
    expect(chunkBytes.length).toBeGreaterThan(1);
    for (const bytes of chunkBytes) expect(bytes).toBeLessThan(CHUNK_BYTES + 20_000);
  });
});

async function expectFileOutcome(h: ApiHarness, input: string | Buffer, outcome: FileOutcome, fields: Record<string, string> = {}): Promise<string | undefined> {
  const account = await newAccount(h, { credits: CREDITS });
  const billing = h.engine.deps.billing;
  const ledgerBefore = await billing.ledger(account.id);
  const { type = 'gender', ...others } = fields;
  const form = multipart([
    { name: 'type', value: type },
    ...Object.entries(others).map(([name, value]) => ({ name, value })),
    { name: 'file', value: input, filename: 'input.csv' },
  ]);
  const upload = await h.app.inject({ method: 'POST', url: '/api/jobs/bulk', headers: { ...bearer(account.key), ...form.headers }, payload: form.payload });
  expect(upload.statusCode, upload.body).toBe(202);
  const id = json(upload).id as string;
  await runUntilDone(h, [id]);
  const job = json(await h.app.inject({ method: 'GET', url: `/api/jobs/${id}`, headers: bearer(account.key) }));
  const spent = CREDITS - (await billing.requireAccount(account.id)).credits;
  const newLedger = (await billing.ledger(account.id)).slice(ledgerBefore.length);

  if ('code' in outcome) {
    expect(job).toMatchObject({ status: 'failed', reason: outcome.code, credits_used: 0, downloads: null });
    expect(job.error_message).toEqual(expect.any(String));
    expectNoLeak(job.error_message);
    expect(spent).toBe(0);
    expect(await billing.ledger(account.id)).toEqual(ledgerBefore);
    return undefined;
  }
  expect(job).toMatchObject({ status: 'completed', reason: null });
  const [header, ...rows] = await parseCsv(await streamToBuffer(await h.engine.jobService.openResult(id, 'all')));
  const width = outcome.rows[0]!.length;
  const resultColumns = type === 'phone_breaches' ? PHONE_RESULT_COLUMNS : RESULT_COLUMNS;
  expect(header).toEqual([...outcome.rows[0]!, ...resultColumns]);
  expect(rows.map((r) => r.slice(0, width))).toEqual(outcome.rows.slice(1));
  const column = (name: string) => rows.map((r) => r[width + resultColumns.indexOf(name)]);
  expect(column('status')).toEqual(outcome.statuses ?? rows.map(() => 'ok'));
  if (outcome.e164) expect(column('phone_e164')).toEqual(outcome.e164);
  // Only rows looked up for the first time are charged, one credit each, all in the ledger.
  const charged = column('credits').map(Number);
  column('status').forEach((status, i) => expect(charged[i]).toBe(status === 'ok' ? 1 : 0));
  const total = charged.reduce((sum, n) => sum + n, 0);
  expect({ spent, credits_used: job.credits_used, ledger: -newLedger.reduce((sum, e) => sum + e.delta, 0) }).toEqual({ spent: total, credits_used: total, ledger: total });
  for (const entry of newLedger) expect(entry).toMatchObject({ reason: 'charge', jobId: id });
  expect(job.rows.invalid).toBe(column('status').filter((s) => s === 'invalid').length);
  return id;
}

type Body = { json: unknown } | { raw: string | Buffer; type?: string } | { parts: Part[] };

interface ApiCase {
  name: string;
  method: 'POST' | 'PATCH';
  /** `KEY_ID` stands for the account's own key, so that only the body is wrong. */
  url: string;
  body?: Body;
  env?: Record<string, string>;
  status: number;
  code: ErrorCode;
}

const JSON_TYPE = 'application/json';
const OVERSIZED = { raw: JSON.stringify({ email: 'ann@example.com', password: 'p', name: 'k', pad: 'x'.repeat(70 * 1024) }) };
const CSV = 'email\nann@example.com\n';
const TYPE = { name: 'type', value: 'gender' };
const FILE = { name: 'file', value: CSV, filename: 'a.csv' };
const PATCH_URL = '/api/account/keys?id=KEY_ID&action=disable';
const { invalidRequest, payloadTooLarge, unknownJobType, invalidEmail } = ERROR_CODES;

const bulk = (name: string, parts: Part[], status: number, code: ErrorCode, env?: Record<string, string>): ApiCase => ({
  name: `bulk upload: ${name}`,
  method: 'POST',
  url: '/api/jobs/bulk',
  body: { parts },
  status,
  code,
  ...(env ? { env } : {}),
});

const apiCases: ApiCase[] = [
  ...(
    [
      ['login', '/api/auth/login', 400, 422],
      ['create key', '/api/account/keys', 400, 422],
      ['gender', '/api/email/gender', 400, 400],
    ] as const
  ).flatMap(([what, url, malformed, wrongType]): ApiCase[] => [
    { name: `${what}: malformed JSON`, method: 'POST', url, body: { raw: '{"email": "ann@' }, status: malformed, code: invalidRequest },
    { name: `${what}: empty JSON body`, method: 'POST', url, body: { raw: '' }, status: malformed, code: invalidRequest },
    { name: `${what}: JSON over 64 KiB`, method: 'POST', url, body: OVERSIZED, status: 413, code: payloadTooLarge },
    { name: `${what}: a JSON array`, method: 'POST', url, body: { raw: '[{"email":"ann@example.com","name":"k"}]' }, status: wrongType, code: invalidRequest },
    { name: `${what}: a JSON string`, method: 'POST', url, body: { raw: '"ann@example.com"' }, status: wrongType, code: invalidRequest },
    { name: `${what}: fields of the wrong type`, method: 'POST', url, body: { json: { email: 42, password: ['p'], name: 7 } }, status: wrongType, code: invalidRequest },
    { name: `${what}: form-encoded, not JSON`, method: 'POST', url, body: { raw: 'email=ann%40example.com&name=k', type: 'application/x-www-form-urlencoded' }, status: what === 'gender' ? 400 : 415, code: invalidRequest },
    { name: `${what}: binary body`, method: 'POST', url, body: { raw: zlib.gzipSync('{}'), type: 'application/octet-stream' }, status: what === 'gender' ? 400 : 415, code: invalidRequest },
  ]),
  { name: 'login: a password over 1024 characters', method: 'POST', url: '/api/auth/login', body: { json: { email: 'ann@example.com', password: 'p'.repeat(5_000) } }, status: 422, code: invalidRequest },
  { name: 'create key: a role of the wrong type', method: 'POST', url: '/api/account/keys', body: { json: { name: 'k', role: 1 } }, status: 422, code: invalidRequest },
  { name: 'gender: a 10,000-character email', method: 'POST', url: '/api/email/gender', body: { json: { email: `${'a'.repeat(10_000)}@example.com` } }, status: 400, code: invalidEmail },
  { name: 'gender: an email with a NUL byte', method: 'POST', url: '/api/email/gender', body: { json: { email: 'ann\u0000@example.com' } }, status: 400, code: invalidRequest }, // refused before any route: no store can hold a NUL (issue 27)
  { name: 'gender: a formula for an email', method: 'POST', url: '/api/email/gender', body: { json: { email: '=HYPERLINK("http://x.test")' } }, status: 400, code: invalidEmail },
  { name: 'patch key: malformed JSON body', method: 'PATCH', url: PATCH_URL, body: { raw: '{"id":' }, status: 400, code: invalidRequest },
  { name: 'patch key: JSON body over 64 KiB', method: 'PATCH', url: PATCH_URL, body: OVERSIZED, status: 413, code: payloadTooLarge },
  { name: 'patch key: id and action in the body, not the query', method: 'PATCH', url: '/api/account/keys', body: { json: { id: 'KEY_ID', action: 'disable' } }, status: 400, code: invalidRequest },
  { name: 'patch key: id given twice (an array)', method: 'PATCH', url: '/api/account/keys?id=KEY_ID&id=KEY_ID&action=disable', status: 422, code: invalidRequest },
  { name: 'patch key: unknown action', method: 'PATCH', url: '/api/account/keys?id=KEY_ID&action=delete', status: 400, code: invalidRequest },
  bulk('no file', [TYPE], 422, invalidRequest),
  bulk('two files', [TYPE, FILE, { ...FILE, filename: 'b.csv' }], 422, invalidRequest),
  bulk('an unknown type', [{ name: 'type', value: 'horoscope' }, FILE], 422, unknownJobType),
  bulk('no type', [FILE], 422, invalidRequest),
  bulk('the file sent as a plain field', [TYPE, { name: 'file', value: CSV }], 422, invalidRequest),
  bulk('the type sent as a file', [{ ...TYPE, filename: 'type.txt' }, FILE], 422, invalidRequest),
  bulk('download_link not a boolean', [TYPE, { name: 'download_link', value: 'yes please' }, FILE], 422, invalidRequest),
  bulk('a file one byte over SLUICE_MAX_UPLOAD_BYTES', [TYPE, { ...FILE, value: `email\n${'a'.repeat(1025 - 19)}@example.com\n` }], 413, payloadTooLarge, { SLUICE_MAX_UPLOAD_BYTES: '1024' }),
  bulk('more parts than allowed', [TYPE, ...Array.from({ length: 13 }, () => ({ name: 'column', value: 'email' })), FILE], 413, payloadTooLarge),
  { name: 'bulk upload: a JSON body, not multipart', method: 'POST', url: '/api/jobs/bulk', body: { json: { type: 'gender', file: CSV } }, status: 415, code: invalidRequest },
  { name: 'bulk upload: a bare CSV body, not multipart', method: 'POST', url: '/api/jobs/bulk', body: { raw: CSV, type: 'text/csv' }, status: 415, code: invalidRequest },
  { name: 'bulk upload: multipart without a boundary', method: 'POST', url: '/api/jobs/bulk', body: { raw: CSV, type: 'multipart/form-data' }, status: 400, code: invalidRequest },
  {
    name: 'bulk upload: multipart cut off inside the file',
    method: 'POST',
    url: '/api/jobs/bulk',
    body: { raw: multipart([TYPE, FILE], 'cut').payload.subarray(0, -20), type: 'multipart/form-data; boundary=cut' },
    status: 400,
    code: invalidRequest,
  },
];

describe('hostile API bodies', () => {
  it.each(apiCases.map((c) => [`${c.method} ${c.url.split('?')[0]}: ${c.name}`, c] as const))('%s', async (_name, c) => {
    const h = await open(c.env);
    const account = await newAccount(h, { credits: CREDITS, email: 'ann@example.com' });
    const state = async () => ({
      credits: (await h.engine.deps.billing.requireAccount(account.id)).credits,
      ledger: await h.engine.deps.billing.ledger(account.id),
      jobs: await jobCount(h, account.id),
      staged: storedObjects(h, 'inputs/'),
      keys: await h.deps.keys.list(account.id),
    });
    const before = await state();
    const headers: Record<string, string> = c.url === '/api/auth/login' ? {} : bearer(account.key);
    let payload: string | Buffer | undefined;
    if (c.body && 'json' in c.body) {
      payload = JSON.stringify(c.body.json).replaceAll('KEY_ID', account.keyId);
      headers['content-type'] = JSON_TYPE;
    } else if (c.body && 'raw' in c.body) {
      payload = c.body.raw;
      headers['content-type'] = c.body.type ?? JSON_TYPE;
    } else if (c.body) {
      const form = multipart(c.body.parts);
      payload = form.payload;
      headers['content-type'] = form.headers['content-type'];
    }
    const url = c.url.replaceAll('KEY_ID', account.keyId);
    const response = await h.app.inject({ method: c.method, url, headers, ...(payload === undefined ? {} : { payload }) });

    expectNoLeak(response.body);
    expect({ status: response.statusCode, body: json(response) }).toEqual({ status: c.status, body: { error: expect.any(String), code: c.code } });
    // Refused means refused: no charge, no ledger line, no job, no staged bytes, no key made or changed.
    expect(await state()).toEqual(before);
  });
});
