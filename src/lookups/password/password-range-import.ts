import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { AppError, ERROR_CODES } from '../../shared/errors.js';
import type { SharedRecords } from '../../shared/shared-records.js';
import { forEachLine, parseLine } from './password-line-reader.js';
import {
  encodeRecord,
  HEADER_BYTES,
  INDEX_DIR,
  INDEX_POINTER,
  PREFIXES,
  prefixNumber,
  RECORD_BYTES,
  RECORDS_AT,
  TABLE_BYTES,
  writeHeader,
  type IndexPointer,
} from './password-range-format.js';

/** Bad lines listed by number; the rest are only counted. */
const LISTED_INVALID = 10;
/** A prefix's file up to this size is read whole; a larger one streams like a combined file. */
const SMALL_FILE_BYTES = 4 << 20;
/** Records gathered before one write: about 1 MB. */
const FLUSH_RECORDS = 48_000;

export interface PasswordImportSummary {
  /** Lines read, blank lines not counted. */
  lines: number;
  /** Hashes in the new index. */
  imported: number;
  /** Lines that repeated the hash of the line before. */
  duplicates: number;
  /** Rows with count 0: the padding of a range saved with `Add-Padding: true`. */
  padding: number;
  invalid: number;
  invalid_by_code: Record<string, number>;
  /** The first few bad lines; `line` counts from 1 within `file` (the input, or a prefix file of a directory). */
  first_invalid: { file: string; line: number; code: string }[];
  /** Entries of a directory that are not a prefix's file (`ABCDE` or `ABCDE.txt`), left alone. */
  ignored_files: number;
  /** The index file now in use, inside `<data dir>/password-ranges/`. */
  index_file: string;
}

export interface PasswordImportOptions {
  dataDir: string;
  /** The store's shared records: the pointer to the index in use lives there, on either store. */
  records: SharedRecords;
  now: () => number;
  onProgress?: (summary: PasswordImportSummary) => void;
}

/**
 * `sluice import passwords FILE`: HIBP's downloader output (one combined file of `SHA1:COUNT`
 * lines, or a directory of one `SUFFIX:COUNT` file per 5-hex prefix) into a new range index.
 *
 * Atomic: the index is written to a temporary file, synced, renamed to its content's name, and only
 * then does the store's pointer change, in one update. An import that fails or is killed leaves
 * the previous index in use and nothing half-written behind it (its temporary file is removed now,
 * or by the next import when the process died); running the import again builds the whole index
 * afresh, so nothing can be counted twice.
 *
 * Streamed: the input must come in hash order, as the downloader writes it (a combined file by
 * prefix, each range by suffix); memory holds the offset table (8 MB) and one write buffer,
 * whatever the input's size. Out-of-order input stops the import with `unsorted_input`.
 */
export async function importPasswords(input: string, options: PasswordImportOptions): Promise<PasswordImportSummary> {
  const dir = path.join(options.dataDir, INDEX_DIR);
  fs.mkdirSync(dir, { recursive: true });
  removeAbandoned(dir);
  const tmp = path.join(dir, `import-${process.pid}-${randomBytes(6).toString('hex')}.tmp`);
  const writer = new IndexWriter(tmp);
  const summary: PasswordImportSummary = { lines: 0, imported: 0, duplicates: 0, padding: 0, invalid: 0, invalid_by_code: {}, first_invalid: [], ignored_files: 0, index_file: '' };
  let renamed: string | undefined;
  try {
    const stat = fs.statSync(input, { throwIfNoEntry: false });
    if (stat?.isDirectory()) await readDirectory(input, writer, summary, options);
    else if (stat?.isFile()) await readFile(input, path.basename(input), undefined, writer, summary, options);
    else throw new AppError(ERROR_CODES.badArgument, `no such file or directory: ${input}`);
    // An empty index would answer "not breached" for every password: a wrong file (NTLM hashes, an
    // empty download) must not replace a good index.
    if (writer.count === 0) {
      throw new AppError(ERROR_CODES.noRows, `no SHA1:COUNT line in ${input} (${summary.invalid} invalid); the previous index stays in use`, { details: { invalid: summary.invalid } });
    }
    const { digest, records } = writer.finish(summary.lines);
    summary.imported = records;
    renamed = `${digest}.idx`;
    fs.renameSync(tmp, path.join(dir, renamed));
    syncDir(dir);
  } catch (error) {
    writer.abandon();
    fs.rmSync(tmp, { force: true });
    throw error;
  }
  const pointer: IndexPointer = { file: renamed, records: summary.imported, imported_at: new Date(options.now()).toISOString() };
  await options.records.updateShared(INDEX_POINTER, () => ({ value: JSON.stringify(pointer), result: undefined }));
  summary.index_file = renamed;
  // Readers that still have an older file open keep reading it (POSIX keeps an unlinked file for its holders).
  for (const name of fs.readdirSync(dir)) if (name.endsWith('.idx') && name !== renamed) fs.rmSync(path.join(dir, name), { force: true });
  options.onProgress?.(summary);
  return summary;
}

/** Prefix files of a directory in prefix order, each read as the range of its name. */
async function readDirectory(input: string, writer: IndexWriter, summary: PasswordImportSummary, options: PasswordImportOptions): Promise<void> {
  const files: { name: string; prefix: number }[] = [];
  for (const entry of fs.readdirSync(input, { withFileTypes: true })) {
    const match = /^([0-9A-Fa-f]{5})(\.txt)?$/.exec(entry.name);
    const prefix = match ? prefixNumber(match[1]!) : undefined;
    if (!entry.isFile() || prefix === undefined) summary.ignored_files++;
    else files.push({ name: entry.name, prefix });
  }
  files.sort((a, b) => a.prefix - b.prefix);
  for (const file of files) await readFile(path.join(input, file.name), file.name, file.prefix, writer, summary, options);
}

/** One file's lines: 40-hex hashes, or in a prefix's file (`prefix` given) 35-hex suffixes. */
async function readFile(file: string, name: string, prefix: number | undefined, writer: IndexWriter, summary: PasswordImportSummary, options: PasswordImportOptions): Promise<void> {
  const hash = Buffer.alloc(20);
  if (prefix !== undefined) {
    hash[0] = prefix >> 12;
    hash[1] = (prefix >> 4) & 0xff;
    hash[2] = (prefix & 0xf) << 4;
  }
  const hexDigits = prefix === undefined ? 40 : 35;
  const parsed = { count: 0 };
  let line = 0;
  const bad = (code: string) => {
    summary.invalid++;
    summary.invalid_by_code[code] = (summary.invalid_by_code[code] ?? 0) + 1;
    if (summary.first_invalid.length < LISTED_INVALID) summary.first_invalid.push({ file: name, line, code });
  };
  await forEachLine(chunksOf(file, prefix !== undefined), (bytes, start, end) => {
    line++;
    if (bytes === undefined) {
      summary.lines++;
      return bad(ERROR_CODES.invalidHashLine);
    }
    const result = parseLine(bytes, start, end, hexDigits, hash, 40 - hexDigits, parsed);
    if (result === 'blank') return;
    summary.lines++;
    if (result === 'bad') return bad(ERROR_CODES.invalidHashLine);
    if (parsed.count === 0) {
      summary.padding++;
      return;
    }
    const added = writer.add(hash, parsed.count);
    if (added === 'duplicate') summary.duplicates++;
    else if (added === 'unsorted') {
      throw new AppError(ERROR_CODES.unsortedInput, `${name} line ${line}: hashes must come in ascending order, as the HIBP downloader writes them (sort with LC_ALL=C sort); the previous index stays in use`, {
        details: { file: name, line },
      });
    }
    if (summary.lines % 1_000_000 === 0) options.onProgress?.(summary);
  });
}

/**
 * A prefix's file (tens of KB at HIBP's size) in one read: a stream and its 1 MB buffer per file
 * cost more than the parsing, a million times over for the downloader's directory form.
 */
async function* chunksOf(file: string, small: boolean): AsyncIterable<Buffer> {
  if (small && fs.statSync(file).size <= SMALL_FILE_BYTES) yield await fs.promises.readFile(file);
  else yield* fs.createReadStream(file, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>;
}

/**
 * Appends records in hash order and builds the offset table as it goes; the table and header are
 * written last, at the start of the file, so a torn file never carries a valid header.
 */
class IndexWriter {
  private readonly fd: number;
  private readonly table = Buffer.alloc(TABLE_BYTES);
  private readonly buffer = Buffer.alloc(FLUSH_RECORDS * RECORD_BYTES);
  private readonly digest = createHash('sha256');
  private readonly last = Buffer.alloc(20);
  private hasLast = false;
  private buffered = 0;
  private records = 0;
  /** The next table slot to fill: every prefix below it has its start written. */
  private nextSlot = 0;
  private position = RECORDS_AT;
  private closed = false;

  constructor(file: string) {
    this.fd = fs.openSync(file, 'wx', 0o600);
  }

  add(hash: Buffer, count: number): 'added' | 'duplicate' | 'unsorted' {
    if (this.hasLast) {
      const order = hash.compare(this.last);
      if (order === 0) return 'duplicate';
      if (order < 0) return 'unsorted';
    }
    hash.copy(this.last);
    this.hasLast = true;
    const prefix = (hash[0]! << 12) | (hash[1]! << 4) | (hash[2]! >> 4);
    while (this.nextSlot <= prefix) this.table.writeUIntLE(this.records, 8 * this.nextSlot++, 6);
    encodeRecord(hash, count, this.buffer, this.buffered * RECORD_BYTES);
    this.records++;
    if (++this.buffered === FLUSH_RECORDS) this.flush();
    return 'added';
  }

  /** Writes what is left, the table and the header; syncs and closes. The content's SHA-256 names the file. */
  finish(sourceLines: number): { digest: string; records: number } {
    this.flush();
    while (this.nextSlot <= PREFIXES) this.table.writeUIntLE(this.records, 8 * this.nextSlot++, 6);
    const header = writeHeader(this.records, sourceLines);
    fs.writeSync(this.fd, this.table, 0, TABLE_BYTES, HEADER_BYTES);
    fs.writeSync(this.fd, header, 0, HEADER_BYTES, 0);
    this.digest.update(this.table).update(header);
    fs.fsyncSync(this.fd);
    this.close();
    return { digest: this.digest.digest('hex'), records: this.records };
  }

  /** Records added so far. */
  get count(): number {
    return this.records;
  }

  abandon(): void {
    this.close();
  }

  private flush(): void {
    if (this.buffered === 0) return;
    const bytes = this.buffered * RECORD_BYTES;
    fs.writeSync(this.fd, this.buffer, 0, bytes, this.position);
    this.digest.update(this.buffer.subarray(0, bytes));
    this.position += bytes;
    this.buffered = 0;
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    fs.closeSync(this.fd);
  }
}

/** Temporary files of imports whose process is gone: a killed import's leftovers. */
function removeAbandoned(dir: string): void {
  for (const name of fs.readdirSync(dir)) {
    const pid = /^import-(\d+)-[0-9a-f]+\.tmp$/.exec(name)?.[1];
    if (pid !== undefined && !alive(Number(pid))) fs.rmSync(path.join(dir, name), { force: true });
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e: unknown) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The rename is durable only once the directory is synced too. */
function syncDir(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
