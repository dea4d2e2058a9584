/**
 * A chunk object holds one JSON line per input row: [kind, key or error code, original cells], and
 * for a job with several lookups one more [kind, key or error code] pair per further lookup after
 * the cells. Split decides the kinds once, in input order, so every later step (and every resume)
 * sees the same duplicates and the same invalid rows.
 */
export const ROW_KINDS = { lookup: 0, duplicate: 1, invalid: 2 } as const;
export type RowKind = (typeof ROW_KINDS)[keyof typeof ROW_KINDS];

/** What one lookup makes of one row. */
export interface RowKey {
  kind: RowKind;
  /** The normalised key, or for an invalid row its error code. */
  value: string;
}

/** A row as its first lookup sees it, with the further lookups' keys in `more`. */
export interface ChunkRow extends RowKey {
  cells: string[];
  more: RowKey[] | undefined;
}

export function encodeChunkRow(keys: readonly RowKey[], cells: readonly string[]): string {
  const line: unknown[] = [keys[0]!.kind, keys[0]!.value, cells];
  for (let l = 1; l < keys.length; l++) line.push(keys[l]!.kind, keys[l]!.value);
  return JSON.stringify(line);
}

export function decodeChunkRow(line: string): ChunkRow {
  const parsed = JSON.parse(line) as unknown[];
  const row: ChunkRow = { kind: parsed[0] as RowKind, value: parsed[1] as string, cells: parsed[2] as string[], more: undefined };
  if (parsed.length > 3) {
    row.more = [];
    for (let i = 3; i < parsed.length; i += 2) row.more.push({ kind: parsed[i] as RowKind, value: parsed[i + 1] as string });
  }
  return row;
}

/**
 * A chunk object's body while the split fills it: its lines, as UTF-8, in one growing Buffer.
 * Holding a chunk's 25,000 line strings until it is full made V8 promote each of them to its old
 * space, to die there; bytes outside the JavaScript heap are never copied by a collection.
 */
export class ChunkBodyBuilder {
  private buffer: Buffer;
  private length = 0;
  /** Lines appended since the last take(). */
  rows = 0;

  constructor(private readonly initialBytes = 1 << 20) {
    this.buffer = Buffer.allocUnsafe(initialBytes);
  }

  append(line: string): void {
    // A UTF-16 code unit never takes more than 3 bytes of UTF-8.
    const worst = this.length + line.length * 3 + 1;
    if (worst > this.buffer.length) {
      const grown = Buffer.allocUnsafe(Math.max(worst, this.buffer.length * 2));
      this.buffer.copy(grown, 0, 0, this.length);
      this.buffer = grown;
    }
    this.length += this.buffer.write(line, this.length, 'utf8');
    this.buffer[this.length++] = 0x0a;
    this.rows++;
  }

  /** UTF-8 bytes appended since the last take(), line ends included. */
  get bytes(): number {
    return this.length;
  }

  /** The body so far, every line ended by `\n`; the builder starts again empty. */
  take(): Buffer {
    const body = this.buffer.subarray(0, this.length);
    // The next chunk is most likely about as large: start it at that size, not at the first guess.
    this.buffer = Buffer.allocUnsafe(Math.max(this.initialBytes, this.length + (this.length >> 4)));
    this.length = 0;
    this.rows = 0;
    return body;
  }
}

/**
 * A chunk object's lines, decoded one at a time as they are needed. Splitting the whole body into
 * strings up front kept a chunk's worth of them alive for as long as the chunk ran, long enough
 * for V8 to promote them to its old space; these are the body's bytes and the lines' ends only.
 */
export class ChunkLines {
  /** Where each line ends, at its `\n` (or at the end of a body without a last line end). */
  private readonly ends: Uint32Array;

  constructor(private readonly body: Buffer) {
    let count = 0;
    for (let at = body.indexOf(0x0a); at !== -1; at = body.indexOf(0x0a, at + 1)) count++;
    const unterminated = body.length > 0 && body[body.length - 1] !== 0x0a;
    this.ends = new Uint32Array(count + (unterminated ? 1 : 0));
    let i = 0;
    for (let at = body.indexOf(0x0a); at !== -1; at = body.indexOf(0x0a, at + 1)) this.ends[i++] = at;
    if (unterminated) this.ends[i] = body.length;
  }

  get count(): number {
    return this.ends.length;
  }

  /** UTF-8 bytes of line `i` without its line end, known without decoding it. */
  byteLength(i: number): number {
    if (!(i >= 0 && i < this.ends.length)) throw new RangeError(`chunk line ${i} of ${this.ends.length}`);
    return this.ends[i]! - (i === 0 ? 0 : this.ends[i - 1]! + 1);
  }

  /** Line `i` without its line end; a line past the last one is an error, not `undefined`. */
  line(i: number): string {
    if (!(i >= 0 && i < this.ends.length)) throw new RangeError(`chunk line ${i} of ${this.ends.length}`);
    return this.body.toString('utf8', i === 0 ? 0 : this.ends[i - 1]! + 1, this.ends[i]);
  }
}

/** Lookup `l`'s key of the row. */
export function rowKey(row: ChunkRow, l: number): RowKey {
  return l === 0 ? row : row.more![l - 1]!;
}

export function chunkObjectKey(jobId: string, chunkIndex: number): string {
  return `jobs/${jobId}/chunks/${String(chunkIndex).padStart(5, '0')}.jsonl`;
}

export function partObjectKey(jobId: string, chunkIndex: number, filter: string): string {
  return `jobs/${jobId}/parts/${String(chunkIndex).padStart(5, '0')}.${filter}.csv`;
}

export function resultObjectKey(jobId: string, filter: string): string {
  return `results/${jobId}/${filter}.csv`;
}
