/**
 * The self-hosted range index: one file in the data dir, written by `sluice import passwords` and
 * named by the SHA-256 of its content, so that machines which import the same source agree on
 * the name the store points to.
 *
 *   header   64 bytes: magic, version, record size, record count, source lines
 *   table    (2^20 + 1) little-endian 48-bit record numbers in 8-byte slots: the records of
 *            prefix p are [table[p], table[p + 1])
 *   records  RECORD_BYTES each, by hash: bytes 2..19 of the SHA-1 (the first holds the prefix's
 *            last hex digit too, kept so that a record reads back without its prefix), then the
 *            count as a little-endian uint32
 *
 * With the table in memory (8 MB), a prefix costs one read of its records, wherever they lie.
 */
export const MAGIC = Buffer.from('SLPWRNG\0', 'latin1');
export const FORMAT_VERSION = 1;
export const HEADER_BYTES = 64;
export const PREFIXES = 1 << 20;
export const TABLE_BYTES = (PREFIXES + 1) * 8;
export const RECORDS_AT = HEADER_BYTES + TABLE_BYTES;
const TAIL_BYTES = 18;
export const RECORD_BYTES = TAIL_BYTES + 4;
/** Counts above this are stored as it: HIBP's largest is near 10^8, far below. */
export const MAX_COUNT = 0xffff_ffff;

/** The shared record (LimitsPort's shared records, on both stores) that names the index in use. */
export const INDEX_POINTER = 'password-range-index';

/** What the store holds of the index: enough to find the file and to know it is the right one. */
export interface IndexPointer {
  /** File name inside `<data dir>/password-ranges/`: `<sha-256 hex>.idx`. */
  file: string;
  records: number;
  imported_at: string;
}

export const INDEX_DIR = 'password-ranges';

export function writeHeader(records: number, sourceLines: number): Buffer {
  const header = Buffer.alloc(HEADER_BYTES);
  MAGIC.copy(header, 0);
  header.writeUInt32LE(FORMAT_VERSION, 8);
  header.writeUInt32LE(RECORD_BYTES, 12);
  header.writeUIntLE(records, 16, 6);
  header.writeUIntLE(sourceLines, 24, 6);
  return header;
}

/** The record count of a header, or undefined when it is no header of this format. */
export function readHeader(header: Buffer): { records: number } | undefined {
  if (header.length < HEADER_BYTES || !header.subarray(0, 8).equals(MAGIC)) return undefined;
  if (header.readUInt32LE(8) !== FORMAT_VERSION || header.readUInt32LE(12) !== RECORD_BYTES) return undefined;
  return { records: header.readUIntLE(16, 6) };
}

/** A 5-hex prefix as its number, or undefined for anything else. */
export function prefixNumber(prefix: string): number | undefined {
  return /^[0-9A-Fa-f]{5}$/.test(prefix) ? Number.parseInt(prefix, 16) : undefined;
}

export function prefixHex(prefix: number): string {
  return prefix.toString(16).toUpperCase().padStart(5, '0');
}

/** One row of a range: the 35 uppercase hex digits after the prefix, and how often it was seen. */
export interface RangeRow {
  suffix: string;
  count: number;
}

/** Rows of one prefix's records, in file order (ascending hash). */
export function decodeRecords(records: Buffer): RangeRow[] {
  const rows: RangeRow[] = [];
  for (let at = 0; at + RECORD_BYTES <= records.length; at += RECORD_BYTES) {
    // The first tail byte's high nibble is the prefix's last digit: the suffix starts after it.
    const suffix = records.toString('hex', at, at + TAIL_BYTES).slice(1).toUpperCase();
    rows.push({ suffix, count: records.readUInt32LE(at + TAIL_BYTES) });
  }
  return rows;
}

/** Writes a record for the 20 bytes of a SHA-1 at `into[at]`. */
export function encodeRecord(sha1: Buffer, count: number, into: Buffer, at: number): void {
  sha1.copy(into, at, 2, 20);
  into.writeUInt32LE(Math.min(count, MAX_COUNT), at + TAIL_BYTES);
}
