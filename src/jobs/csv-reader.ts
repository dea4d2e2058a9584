import Papa from 'papaparse';
import { AppError, ERROR_CODES } from '../shared/errors.js';

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
}

const DEFAULT_BATCH_CHARS = 64 * 1024;
const SNIFF_BYTES = 4;
const QUOTE = 34;
const COMMA = 44;
const LF = 10;
const CR = 13;

/** What papaparse's core parser hands a step callback: one record and the offset just past it. */
interface PapaStepResult {
  data: string[][];
  errors: Papa.ParseError[];
  meta: { cursor: number };
}

/**
 * Streams a CSV (comma-delimited, no header handling: the header is just the first row) as
 * batches of rows. Rejects a file up front, with an `AppError`, when it is empty, compressed,
 * binary, not UTF-8, has a record longer than `maxLineBytes`, or has broken quoting.
 *
 * - A leading UTF-8 BOM is dropped; every other byte must be strict UTF-8.
 * - CRLF, LF and lone CR all end a record, even mixed in one file. Record ends are unified to LF
 *   before parsing; line breaks inside quoted cells are data and come back exactly as written.
 * - Blank lines (a record of one empty or whitespace-only cell) are skipped; the caller sees
 *   `no_rows` for a file that holds nothing else.
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
  const bytes = new StrictUtf8Input();
  const records = new RecordBatcher(maxLineBytes, batchChars);
  for await (const chunk of source) {
    signal?.throwIfAborted();
    yield* records.push(bytes.decode(chunk));
  }
  signal?.throwIfAborted();
  const tail = bytes.end();
  if (bytes.charCount === 0) throw new AppError(ERROR_CODES.emptyFile, 'the file is empty');
  yield* records.end(tail);
}

/** Byte-level checks and strict streaming UTF-8 decoding. */
class StrictUtf8Input {
  private readonly decoder = new TextDecoder('utf-8', { fatal: true });
  /** The first bytes, held back until there are enough to recognise a file type. */
  private head: Buffer | undefined = Buffer.alloc(0);
  private byteOffset = 0;
  charCount = 0;

  decode(chunk: Buffer | Uint8Array): string {
    let buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.head !== undefined) {
      buf = this.head.length === 0 ? buf : Buffer.concat([this.head, buf]);
      if (buf.length < SNIFF_BYTES) {
        this.head = Buffer.from(buf);
        return '';
      }
      this.head = undefined;
      sniffFileType(buf);
    }
    return this.decodeBytes(buf, true);
  }

  end(): string {
    let text = '';
    if (this.head !== undefined) {
      const head = this.head;
      this.head = undefined;
      if (head.length === 0) throw new AppError(ERROR_CODES.emptyFile, 'the file is empty (0 bytes)');
      sniffFileType(head);
      text = this.decodeBytes(head, true);
    }
    return text + this.decodeBytes(undefined, false);
  }

  private decodeBytes(buf: Buffer | undefined, stream: boolean): string {
    if (buf !== undefined) {
      // NUL is valid UTF-8, so the decoder would let UTF-16 text or a binary file through.
      const nul = buf.indexOf(0);
      if (nul !== -1) {
        throw new AppError(ERROR_CODES.binaryFile, 'the file holds NUL bytes: it is binary, not a CSV text file', {
          details: { byteOffset: this.byteOffset + nul },
        });
      }
    }
    let text: string;
    try {
      text = this.decoder.decode(buf, { stream });
    } catch (e: unknown) {
      throw new AppError(ERROR_CODES.invalidUtf8, 'the file is not valid UTF-8; save it as CSV UTF-8', {
        cause: e,
        details: { nearByteOffset: this.byteOffset },
      });
    }
    this.byteOffset += buf?.length ?? 0;
    this.charCount += text.length;
    return text;
  }
}

function sniffFileType(head: Buffer): void {
  if (head[0] === 0x1f && head[1] === 0x8b) {
    throw new AppError(ERROR_CODES.compressedFile, 'the file is gzip-compressed; upload the uncompressed CSV');
  }
  if (head[0] === 0x50 && head[1] === 0x4b && head[2] === 0x03 && head[3] === 0x04) {
    throw new AppError(ERROR_CODES.compressedFile, 'the file is a ZIP archive (an Excel .xlsx workbook?); export it as CSV');
  }
  if ((head[0] === 0xff && head[1] === 0xfe) || (head[0] === 0xfe && head[1] === 0xff)) {
    throw new AppError(ERROR_CODES.invalidUtf8, 'the file is UTF-16 text; save it as CSV UTF-8');
  }
}

/**
 * Cuts decoded text into records with papaparse's core parser. Papaparse cannot resume inside a
 * record, so the unfinished last record of each parse call is carried over and parsed again with
 * the next text; the carry is what `maxLineBytes` bounds. Step mode hands over each record with
 * its end offset, which measures every record on its raw text: whether a file passes then never
 * depends on where the chunk boundaries fell.
 */
class RecordBatcher {
  private readonly parser = new Papa.Parser({
    delimiter: ',',
    newline: '\n',
    quoteChar: '"',
    step: (result: PapaStepResult) => this.take(result),
  });
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
  ) {}

  *push(text: string): Generator<string[][], void, undefined> {
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
      if (closedAt === at - 1 || prev === -1 || prev === COMMA || prev === LF || prev === CR) this.inQuotes = true;
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
    yield* this.push(tail);
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
    this.parser.parse(this.input, 0, !final);
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
    if (row.length === 1 && row[0]!.trim() === '') return;
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
