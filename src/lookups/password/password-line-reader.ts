/**
 * Reads `HASH:COUNT` lines straight from the bytes of HIBP's files, without a string per line: at
 * a billion lines a string and a regex each would cost more than the rest of the import together.
 */

/** A line longer than this is no `SHA1:COUNT` line (40 + 1 + a count): skipped as invalid. */
const MAX_LINE_BYTES = 256;

const HEX = new Int8Array(256).fill(-1);
for (let i = 0; i < 10; i++) HEX[0x30 + i] = i;
for (let i = 0; i < 6; i++) {
  HEX[0x41 + i] = 10 + i;
  HEX[0x61 + i] = 10 + i;
}

/** What one line is: a hash and its count, a blank line, or a bad line (with its reason). */
export type LineResult = 'hash' | 'blank' | 'bad';

/**
 * Calls `onLine(bytes, start, end)` for each line of a byte stream, `\r\n` or `\n`; a line longer
 * than MAX_LINE_BYTES is passed as `(undefined)` once, so that it is counted as bad.
 */
export async function forEachLine(source: AsyncIterable<Buffer>, onLine: (bytes: Buffer | undefined, start: number, end: number) => void): Promise<void> {
  let carry: Buffer | undefined;
  let overlong = false;
  for await (const chunk of source) {
    let bytes = chunk;
    if (carry !== undefined) {
      bytes = Buffer.concat([carry, chunk]);
      carry = undefined;
    }
    let start = 0;
    for (;;) {
      const newline = bytes.indexOf(0x0a, start);
      if (newline < 0) break;
      if (overlong) {
        overlong = false;
        onLine(undefined, 0, 0);
      } else if (newline - start > MAX_LINE_BYTES) onLine(undefined, 0, 0);
      else onLine(bytes, start, newline);
      start = newline + 1;
    }
    if (start < bytes.length) {
      // A tail that cannot become a good line is dropped, not carried: memory stays bounded by a line.
      if (overlong || bytes.length - start > MAX_LINE_BYTES) overlong = true;
      else carry = Buffer.from(bytes.subarray(start));
    }
  }
  if (overlong) onLine(undefined, 0, 0);
  else if (carry !== undefined && carry.length > 0) onLine(carry, 0, carry.length);
}

/**
 * Parses `bytes[start, end)` as `HEX:COUNT`, with `hexDigits` digits (40 for a combined file, 35
 * in a prefix's own file, whose name gives the other 5), writing the hash into `hash` from nibble
 * `firstNibble` on. Surrounding blanks and a `\r` are allowed. Sets `parsed.count`.
 */
export function parseLine(bytes: Buffer, start: number, end: number, hexDigits: number, hash: Buffer, firstNibble: number, parsed: { count: number }): LineResult {
  while (end > start && (bytes[end - 1] === 0x0d || bytes[end - 1] === 0x20 || bytes[end - 1] === 0x09)) end--;
  while (start < end && (bytes[start] === 0x20 || bytes[start] === 0x09)) start++;
  if (start === end) return 'blank';
  if (end - start < hexDigits + 2 || bytes[start + hexDigits] !== 0x3a) return 'bad';
  for (let i = 0; i < hexDigits; i++) {
    const nibble = HEX[bytes[start + i]!]!;
    if (nibble < 0) return 'bad';
    const at = firstNibble + i;
    const byte = at >> 1;
    hash[byte] = at & 1 ? (hash[byte]! & 0xf0) | nibble : (hash[byte]! & 0x0f) | (nibble << 4);
  }
  let count = 0;
  const digits = end - start - hexDigits - 1;
  if (digits > 15) return 'bad';
  for (let i = start + hexDigits + 1; i < end; i++) {
    const digit = bytes[i]! - 0x30;
    if (digit < 0 || digit > 9) return 'bad';
    count = count * 10 + digit;
  }
  parsed.count = count;
  return 'hash';
}
