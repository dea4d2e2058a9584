import { TextDecoder } from 'node:util';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import type { InputEncoding } from '../storage/job-records.js';

/**
 * Bytes read before an undeclared encoding is chosen. A decision on the first chunk alone would
 * take a UTF-8 file whose first accented name comes late for plain ASCII and still be right, but
 * a Windows-1252 file whose first é comes late would then be refused as invalid UTF-8.
 */
export const ENCODING_SNIFF_BYTES = 64 * 1024;
/** Enough bytes to recognise gzip, ZIP and every byte-order mark. */
const MAGIC_BYTES = 4;

const BOMS: readonly { bytes: readonly number[]; encoding: InputEncoding }[] = [
  { bytes: [0xef, 0xbb, 0xbf], encoding: 'utf-8' },
  { bytes: [0xff, 0xfe], encoding: 'utf-16le' },
  { bytes: [0xfe, 0xff], encoding: 'utf-16be' },
];

/** Any character that only a valid multi-byte UTF-8 sequence gives (U+FFFD is what a bad byte gives). */
const DECODED_MULTIBYTE = /[\u0080-\uFFFC\uFFFE\uFFFF]/;

/**
 * Streaming decoding of an input file to text, with the byte-level checks (empty, compressed,
 * binary) and the encoding rule of docs/reference/file-formats.md:
 *
 * 1. A byte-order mark decides (UTF-8, UTF-16LE, UTF-16BE), over a declared encoding too, and is dropped.
 * 2. Else a declared encoding is used.
 * 3. Else the first 64 KiB are looked at. NUL bytes in a UTF-16 pattern refuse the file
 *    (`utf16_without_bom`): its byte order cannot be trusted to a guess. Valid UTF-8 (a sequence cut
 *    by the 64 KiB mark counts as valid) makes it UTF-8. Bytes invalid in UTF-8 beside valid
 *    multi-byte UTF-8 are a damaged UTF-8 file (`invalid_utf8`), else it is Windows-1252.
 *
 * UTF-8 stays strict to the end: an invalid byte after the first 64 KiB is `invalid_utf8`. ISO-8859-1
 * is read as Windows-1252, as every browser does (WHATWG Encoding Standard): its 0x80-0x9F are
 * control characters that no real text holds, where Windows-1252 has € ‘ ’ “ ” – and the like.
 */
export class InputDecoder {
  /** The first bytes, held back until there are enough to choose how to decode; undefined after. */
  private head: Buffer[] | undefined = [];
  private headLength = 0;
  /** How many bytes to hold before choosing: known once the first 4 show whether a BOM decides. */
  private headNeeded: number | undefined;
  private decoder: TextDecoder | undefined;
  private chosen: InputEncoding | undefined;
  /** UTF-16 text holds a NUL byte in every ASCII character, so there the NUL check is on characters. */
  private checkNulBytes = true;
  private byteOffset = 0;
  charCount = 0;

  constructor(private readonly declared?: InputEncoding) {}

  /** The encoding chosen, once the first bytes have been seen. */
  get encoding(): InputEncoding | undefined {
    return this.chosen;
  }

  decode(chunk: Buffer | Uint8Array): string {
    const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (this.head === undefined) return this.decodeBytes(buf, true);
    this.head.push(buf);
    this.headLength += buf.length;
    if (this.headLength < MAGIC_BYTES) return '';
    if (this.headNeeded === undefined) {
      const first = Buffer.concat(this.head, this.headLength);
      this.head = [first];
      this.headNeeded = this.declared === undefined && bomOf(first) === undefined ? ENCODING_SNIFF_BYTES : MAGIC_BYTES;
    }
    if (this.headLength < this.headNeeded) return '';
    const head = this.head.length === 1 ? this.head[0]! : Buffer.concat(this.head, this.headLength);
    this.head = undefined;
    return this.start(head);
  }

  end(): string {
    let text = '';
    if (this.head !== undefined) {
      const head = Buffer.concat(this.head, this.headLength);
      this.head = undefined;
      if (head.length === 0) throw new AppError(ERROR_CODES.emptyFile, 'the file is empty (0 bytes)');
      text = this.start(head);
    }
    return text + this.decodeBytes(undefined, false);
  }

  private start(head: Buffer): string {
    sniffFileType(head);
    // The head is whatever chunks first reached 64 KiB, often more: looking past the mark would let
    // the transport's chunk sizes decide whether a late é makes the file Windows-1252 or invalid UTF-8.
    const encoding = bomOf(head) ?? this.declared ?? detectEncoding(head.subarray(0, ENCODING_SNIFF_BYTES));
    this.chosen = encoding;
    // The WHATWG decoder drops a leading UTF-8 or UTF-16 byte-order mark by itself.
    this.decoder = new TextDecoder(encoding, { fatal: true });
    this.checkNulBytes = encoding !== 'utf-16le' && encoding !== 'utf-16be';
    return this.decodeBytes(head, true);
  }

  private decodeBytes(buf: Buffer | undefined, stream: boolean): string {
    // NUL is valid UTF-8 and Windows-1252, so the decoder would let a binary file through.
    if (buf !== undefined && this.checkNulBytes) {
      const nul = buf.indexOf(0);
      if (nul !== -1) throw binaryFile({ byteOffset: this.byteOffset + nul });
    }
    let text: string;
    try {
      text = this.decoder!.decode(buf, { stream });
    } catch (e: unknown) {
      throw invalidText(this.chosen!, this.byteOffset, e);
    }
    if (!this.checkNulBytes) {
      const nul = text.indexOf('\0');
      if (nul !== -1) throw binaryFile({ charOffset: this.charCount + nul });
    }
    this.byteOffset += buf?.length ?? 0;
    this.charCount += text.length;
    return text;
  }
}

function detectEncoding(head: Buffer): InputEncoding {
  if (head.indexOf(0) !== -1) {
    const order = utf16Order(head);
    if (order !== undefined) {
      throw new AppError(
        ERROR_CODES.utf16WithoutBom,
        `the file looks like UTF-16 (${order === 'utf-16le' ? 'little' : 'big'}-endian) without a byte-order mark; save it with one (Excel's "Unicode Text" does) or as CSV UTF-8, or give the encoding (--encoding ${order}, API field encoding=${order})`,
        { details: { likely: order } },
      );
    }
    // Decoded as UTF-8, the NUL check then names the file binary.
    return 'utf-8';
  }
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: true });
    return 'utf-8';
  } catch {
    // Not UTF-8: Windows-1252, unless valid UTF-8 sits beside the bad bytes.
  }
  if (DECODED_MULTIBYTE.test(new TextDecoder('utf-8').decode(head, { stream: true }))) {
    throw new AppError(
      ERROR_CODES.invalidUtf8,
      'the file mixes UTF-8 text with bytes that are invalid in UTF-8; save it again as CSV UTF-8, or give its real encoding (--encoding, API field encoding)',
      { details: { reason: 'mixed' } },
    );
  }
  return 'windows-1252';
}

/**
 * UTF-16 of Latin text has a NUL in nearly every byte pair, always on the same side. The rule: at
 * least half the pairs hold a NUL on one side, ten times as many as on the other. A binary file
 * with scattered NULs stays `binary_file`.
 */
function utf16Order(head: Buffer): 'utf-16le' | 'utf-16be' | undefined {
  let first = 0;
  let second = 0;
  const pairs = head.length >> 1;
  for (let i = 0; i + 1 < head.length; i += 2) {
    if (head[i] === 0) first++;
    if (head[i + 1] === 0) second++;
  }
  if (second * 2 >= pairs && second > first * 10) return 'utf-16le';
  if (first * 2 >= pairs && first > second * 10) return 'utf-16be';
  return undefined;
}

function bomOf(head: Buffer): InputEncoding | undefined {
  return BOMS.find(({ bytes }) => bytes.every((b, i) => head[i] === b))?.encoding;
}

function sniffFileType(head: Buffer): void {
  if (head[0] === 0x1f && head[1] === 0x8b) {
    throw new AppError(ERROR_CODES.compressedFile, 'the file is gzip-compressed; upload the uncompressed CSV');
  }
  if (head[0] === 0x50 && head[1] === 0x4b && head[2] === 0x03 && head[3] === 0x04) {
    throw new AppError(ERROR_CODES.compressedFile, 'the file is a ZIP archive (an Excel .xlsx workbook?); export it as CSV');
  }
}

function binaryFile(details: Record<string, number>): AppError {
  return new AppError(ERROR_CODES.binaryFile, 'the file holds NUL bytes: it is binary, not a CSV text file', { details });
}

function invalidText(encoding: InputEncoding, nearByteOffset: number, cause: unknown): AppError {
  if (encoding === 'utf-8') {
    return new AppError(
      ERROR_CODES.invalidUtf8,
      'the file is not valid UTF-8; save it as CSV UTF-8, or give its real encoding (--encoding, API field encoding)',
      { cause, details: { nearByteOffset } },
    );
  }
  return new AppError(ERROR_CODES.invalidUtf16, `the file is not valid ${encoding.toUpperCase()} (a broken surrogate pair or an odd byte count)`, {
    cause,
    details: { encoding, nearByteOffset },
  });
}
