import Papa from 'papaparse';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import type { InputDelimiter, InputEncoding } from '../storage/job-records.js';
import { DELIMITER_SAMPLE_CHARS, detectDelimiter } from './delimiter-detection.js';
import { InputDecoder } from './input-decoding.js';

export interface CsvReadOptions {
  /**
   * Longest record accepted, in UTF-8 bytes of its raw text: quotes, commas and its line break
   * (one byte, as record ends are unified to LF) included. This guard is what bounds memory: an
   * unbalanced quote turns the rest of the file into one record, and without the guard that
   * record would be buffered whole.
   */
  readonly maxLineBytes: number;
  /**
   * Decoded characters gathered before each parse call, so roughly the text behind one batch
   * (64 Ki characters is about a thousand typical rows). Tests set it to 1 to parse at every byte.
   */
  readonly batchChars?: number;
  /** The cell separator; unset: detected from the first records (see `detectDelimiter`). */
  readonly delimiter?: InputDelimiter | undefined;
  /** The text encoding; unset: detected from the first bytes (see `InputDecoder`). */
  readonly encoding?: InputEncoding | undefined;
}

const DEFAULT_BATCH_CHARS = 64 * 1024;
const QUOTE = 34;
const LF = 10;
const CR = 13;

/** What papaparse's core parser hands a step callback: one record and the offset just past it. */
interface PapaStepResult {
  data: string[][];
  errors: Papa.ParseError[];
  meta: { cursor: number };
}

/**
 * Streams a CSV (no header handling: the header is just the first row) as batches of rows.
 * Rejects a file up front, with an `AppError`, when it is empty, compressed, binary, not valid in
 * its encoding, has a record longer than `maxLineBytes`, has broken quoting, or no clear delimiter.
 *
 * - Decoding and its rule are `InputDecoder`'s: a leading BOM is dropped, UTF-8 is strict.
 * - The delimiter is the given one, or `detectDelimiter`'s choice on the first 64 Ki characters.
 * - CRLF, LF and lone CR all end a record, even mixed in one file. Record ends are unified to LF
 *   before parsing; line breaks inside quoted cells are data and come back exactly as written.
 * - Blank lines (a record of one empty or whitespace-only cell) are skipped; the caller sees
 *   `no_rows` for a file that holds nothing else. A record of one quoted cell (`""`, `"  "`) is
 *   not blank: it is a row with an empty value.
 * - Malformed quoting is rejected, not kept. A quoted field that is never closed (papaparse's
 *   `MissingQuotes`) swallows every later line into one cell, and a stray quote inside a quoted
 *   field (`InvalidQuotes`) makes papaparse run the field on to the next quote it finds, merging
 *   rows. Either way rows would vanish without a trace, so the file is refused with the record
 *   number and code `malformed_csv` (`details.reason` tells the cases apart). The same unclosed
 *   quote far from the end of a large file trips the size guard first, as `line_too_long`.
 * - Papaparse's leniencies stay: blanks between a closing quote and the next comma or line end are
 *   dropped, and a quote inside an unquoted field (`ab"c`) is plain data.
 */
export async function* readCsvRows(
  source: AsyncIterable<Buffer | Uint8Array>,
  options: CsvReadOptions,
  signal?: AbortSignal,
): AsyncGenerator<string[][], void, undefined> {
  const { maxLineBytes, batchChars = DEFAULT_BATCH_CHARS } = options;
  if (!(Number.isInteger(maxLineBytes) && maxLineBytes > 0 && Number.isInteger(batchChars) && batchChars > 0)) {
    throw new AppError(ERROR_CODES.badArgument, 'maxLineBytes and batchChars must be positive integers', {
      details: { maxLineBytes, batchChars },
    });
  }
  const bytes = new InputDecoder(options.encoding);
  const records = new RecordBatcher(maxLineBytes, batchChars, options.delimiter);
  for await (const chunk of source) {
    signal?.throwIfAborted();
    yield* records.push(bytes.decode(chunk));
  }
  signal?.throwIfAborted();
  const tail = bytes.end();
  if (bytes.charCount === 0) throw new AppError(ERROR_CODES.emptyFile, 'the file is empty');
  yield* records.end(tail);
}

/**
 * Cuts decoded text into records with papaparse's core parser. Papaparse cannot resume inside a
 * record, so the unfinished last record of each parse call is carried over and parsed again with
 * the next text; the carry is what `maxLineBytes` bounds. Step mode hands over each record with
 * its end offset, which measures every record on its raw text: whether a file passes then never
 * depends on where the chunk boundaries fell.
 */
class RecordBatcher {
  /** Made once the delimiter is known; until then the text is held in `sample`. */
  private parser: Papa.Parser | undefined;
  private delimiterCode = -1;
  private sample = '';
  private carry = '';
  private pending: string[] = [];
  private pendingChars = 0;
  /** A CR ending one chunk may be the first half of a CRLF split across chunks. */
  private heldCr = false;
  private inQuotes = false;
  /** The last character of the previous text (-1 before any), and whether it closed a quoted cell. */
  private lastChar = -1;
  private lastClosed = false;
  private input = '';
  private rows: string[][] = [];
  private recordEnd = 0;
  /** Records parsed so far, blank ones included, for error messages. */
  private recordCount = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly batchChars: number,
    delimiter: InputDelimiter | undefined,
  ) {
    if (delimiter !== undefined) this.begin(delimiter);
  }

  private begin(delimiter: InputDelimiter): void {
    this.delimiterCode = delimiter.charCodeAt(0);
    this.parser = new Papa.Parser({
      delimiter,
      newline: '\n',
      quoteChar: '"',
      step: (result: PapaStepResult) => this.take(result),
    });
  }

  *push(text: string): Generator<string[][], void, undefined> {
    if (this.parser === undefined) {
      this.sample += text;
      if (this.sample.length < DELIMITER_SAMPLE_CHARS) return;
      text = this.takeSample(false);
    }
    yield* this.split(text);
  }

  private takeSample(complete: boolean): string {
    const text = this.sample;
    this.sample = '';
    this.begin(detectDelimiter(text, complete));
    return text;
  }

  private *split(text: string): Generator<string[][], void, undefined> {
    if (this.heldCr) {
      text = '\r' + text;
      this.heldCr = false;
    }
    if (text.charCodeAt(text.length - 1) === 13) {
      text = text.slice(0, -1);
      this.heldCr = true;
    }
    text = this.unifyLineEnds(text);
    for (let at = 0; at < text.length; at += this.batchChars) {
      const piece = text.length <= this.batchChars ? text : text.slice(at, at + this.batchChars);
      this.pending.push(piece);
      this.pendingChars += piece.length;
      // Waiting for a quarter of the carry's length keeps re-parsing a long carry linear overall.
      if (this.pendingChars >= Math.max(this.batchChars, this.carry.length >> 2)) {
        const rows = this.parse(false);
        if (rows.length > 0) yield rows;
      }
    }
  }

  /**
   * Turns CRLF and lone CR into LF where they end a record, and only there: a line break inside a
   * quoted cell is data and must come back byte for byte. The in-quotes state follows papaparse's
   * rules: a quote opens a cell only at the cell's start, and a quote in the middle of an unquoted
   * cell (`5" screen`) is data. Counting every quote instead took such a cell for an open quote,
   * so the CR line ends after it stayed in the cells: rows merged and vanished, or kept a CR.
   */
  private unifyLineEnds(text: string): string {
    if (text.length === 0) return text;
    // Where the last quote that closed a quoted cell was; -1 is the end of the previous text.
    let closedAt = this.lastClosed ? -1 : -2;
    const onQuote = (at: number): void => {
      if (this.inQuotes) {
        this.inQuotes = false;
        closedAt = at;
        return;
      }
      const prev = at === 0 ? this.lastChar : text.charCodeAt(at - 1);
      // Right after a closing quote, a quote is the second half of `""` and reopens the cell.
      if (closedAt === at - 1 || prev === -1 || prev === this.delimiterCode || prev === LF || prev === CR) this.inQuotes = true;
    };
    let out = text;
    if (text.indexOf('\r') === -1) {
      for (let at = text.indexOf('"'); at !== -1; at = text.indexOf('"', at + 1)) onQuote(at);
    } else {
      out = '';
      let from = 0;
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (c === QUOTE) onQuote(i);
        else if (c === CR && !this.inQuotes) {
          out += text.slice(from, i) + '\n';
          if (text.charCodeAt(i + 1) === LF) i++;
          from = i + 1;
        }
      }
      out += text.slice(from);
    }
    this.lastChar = text.charCodeAt(text.length - 1);
    this.lastClosed = closedAt === text.length - 1;
    return out;
  }

  *end(tail: string): Generator<string[][], void, undefined> {
    if (this.parser === undefined) {
      this.sample += tail;
      tail = this.takeSample(true);
    }
    yield* this.split(tail);
    if (this.heldCr) {
      this.pending.push('\n');
      this.heldCr = false;
    }
    const rows = this.parse(true);
    if (rows.length > 0) yield rows;
  }

  private parse(final: boolean): string[][] {
    this.input = this.carry + (this.pending.length === 1 ? this.pending[0] : this.pending.join(''));
    this.pending = [];
    this.pendingChars = 0;
    this.recordEnd = 0;
    this.parser!.parse(this.input, 0, !final);
    this.carry = final ? '' : this.input.slice(this.recordEnd);
    this.input = '';
    if (exceedsBytes(this.carry, this.maxBytes)) this.rejectLong(this.recordCount + 1);
    const rows = this.rows;
    this.rows = [];
    return rows;
  }

  /** Called by papaparse for each finished record; the unfinished last one never comes here. */
  private take({ data, errors, meta }: PapaStepResult): void {
    this.recordCount++;
    const error = errors[0];
    if (error !== undefined) this.rejectQuoting(error);
    const start = this.recordEnd;
    this.recordEnd = meta.cursor;
    if (exceedsBytes(this.input, this.maxBytes, start, meta.cursor)) this.rejectLong(this.recordCount);
    const row = data[0]!;
    // A quoted empty cell (`""`) was written on purpose: it is an entry, as a JSON list's blank is.
    if (row.length === 1 && row[0]!.trim() === '' && this.input.charCodeAt(start) !== QUOTE) return;
    this.rows.push(row);
  }

  private rejectLong(record: number): never {
    throw new AppError(ERROR_CODES.lineTooLong, `record ${record} is longer than ${this.maxBytes} bytes`, {
      details: { reason: 'too_long', record, maxLineBytes: this.maxBytes },
    });
  }

  private rejectQuoting(error: Papa.ParseError): never {
    const record = this.recordCount;
    if (error.code === 'MissingQuotes') {
      throw new AppError(
        ERROR_CODES.malformedCsv,
        `record ${record} opens a quoted field that is never closed, so it runs on to the end of the file`,
        { details: { reason: 'unterminated_quote', record } },
      );
    }
    throw new AppError(
      ERROR_CODES.malformedCsv,
      `record ${record} has a quote inside a quoted field that is not doubled (""), so the field runs on past its line`,
      { details: { reason: 'invalid_quote', record } },
    );
  }
}

/**
 * Whether `text[start, end)` is over `maxBytes` in UTF-8. Each UTF-16 unit is 1 to 3 bytes, so the
 * exact count is only needed near the limit.
 */
function exceedsBytes(text: string, maxBytes: number, start = 0, end = text.length): boolean {
  const chars = end - start;
  if (chars * 3 <= maxBytes) return false;
  if (chars > maxBytes) return true;
  return Buffer.byteLength(start === 0 && end === text.length ? text : text.slice(start, end), 'utf8') > maxBytes;
}
