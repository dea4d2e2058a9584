import fs from 'node:fs';
import path from 'node:path';
import { ERROR_CODES, toAppError } from '../../shared/errors.js';
import type { SharedRecords } from '../../shared/shared-records.js';
import { decodeRecords, HEADER_BYTES, INDEX_DIR, INDEX_POINTER, PREFIXES, prefixNumber, readHeader, RECORD_BYTES, RECORDS_AT, TABLE_BYTES, type IndexPointer } from './password-range-format.js';
import { RANGE_SOURCES, type PasswordRangeSource, type RangeOutcome } from './password-range-source.js';

interface OpenIndex {
  file: string;
  handle: fs.promises.FileHandle;
  table: Buffer;
}

/**
 * Answers ranges from the index file the store points to. The pointer is read again at most every
 * `viewMs`, so a new import reaches a running server within that time without a read of the store
 * per lookup; the file it names is opened once and its offset table kept (8 MB), so each range is
 * one read of its records.
 */
export class LocalPasswordRange implements PasswordRangeSource {
  readonly name = RANGE_SOURCES.localIndex;
  private index: OpenIndex | undefined;
  private pointerReadAt = Number.NEGATIVE_INFINITY;
  private opening: Promise<OpenIndex | undefined> | undefined;
  private failure: unknown;
  /** Handles of files a newer import replaced, closed a while later or with the reader. */
  private readonly retired = new Set<fs.promises.FileHandle>();

  constructor(
    private readonly options: { dataDir: string; records: SharedRecords; now: () => number; viewMs?: number },
  ) {}

  async range(prefix: string, signal?: AbortSignal): Promise<RangeOutcome> {
    signal?.throwIfAborted();
    const p = prefixNumber(prefix);
    if (p === undefined) return { ok: false, retryable: false, code: ERROR_CODES.invalidPrefix, message: 'a range prefix is 5 hex digits' };
    let index: OpenIndex | undefined;
    try {
      index = await this.current();
    } catch (e: unknown) {
      // A missing or foreign file will not appear by trying again within this request.
      return { ok: false, retryable: false, code: ERROR_CODES.providerUnavailable, message: `password range index: ${toAppError(e).message}` };
    }
    if (index === undefined) {
      return { ok: false, retryable: false, code: ERROR_CODES.providerUnavailable, message: 'no password range index: run `sluice import passwords FILE`, or set SLUICE_PASSWORD_RANGE_URL' };
    }
    const first = index.table.readUIntLE(8 * p, 6);
    const end = index.table.readUIntLE(8 * (p + 1), 6);
    if (end === first) return { ok: true, rows: [] };
    const bytes = Buffer.alloc((end - first) * RECORD_BYTES);
    const { bytesRead } = await index.handle.read(bytes, 0, bytes.length, RECORDS_AT + first * RECORD_BYTES);
    if (bytesRead !== bytes.length) return { ok: false, retryable: false, code: ERROR_CODES.lookupFailed, message: 'password range index is truncated: import it again' };
    return { ok: true, rows: decodeRecords(bytes) };
  }

  async close(): Promise<void> {
    const index = this.index;
    this.index = undefined;
    await Promise.all([index?.handle.close(), ...[...this.retired].map((handle) => this.retire(handle))]);
  }

  private async retire(handle: fs.promises.FileHandle): Promise<void> {
    if (!this.retired.delete(handle)) return;
    await handle.close().catch(() => undefined);
  }

  /**
   * The index the store points to now, opened; undefined when none was imported. Callers that
   * arrive while it is being opened wait for that opening, rather than answer from no index.
   */
  private async current(): Promise<OpenIndex | undefined> {
    if (this.opening !== undefined) return this.opening;
    if (this.options.now() - this.pointerReadAt < (this.options.viewMs ?? 10_000)) {
      if (this.failure !== undefined) throw this.failure;
      return this.index;
    }
    this.opening = this.reopen().finally(() => (this.opening = undefined));
    return this.opening;
  }

  private async reopen(): Promise<OpenIndex | undefined> {
    try {
      const raw = await this.options.records.readShared(INDEX_POINTER);
      const pointer = raw === undefined ? undefined : (JSON.parse(raw) as IndexPointer);
      if (pointer?.file !== this.index?.file) {
        const previous = this.index;
        this.index = pointer === undefined ? undefined : await openIndex(path.join(this.options.dataDir, INDEX_DIR, pointer.file), pointer);
        // Reads of the old file may still be in flight: its handle closes once they are surely done.
        if (previous !== undefined) {
          this.retired.add(previous.handle);
          setTimeout(() => this.retire(previous.handle), 30_000).unref();
        }
      }
      this.failure = undefined;
      return this.index;
    } catch (error) {
      // Remembered for the view's time, so a missing file is not looked for again on every check.
      this.failure = error;
      throw error;
    } finally {
      this.pointerReadAt = this.options.now();
    }
  }
}

async function openIndex(file: string, pointer: IndexPointer): Promise<OpenIndex> {
  const handle = await fs.promises.open(file, 'r');
  try {
    const head = Buffer.alloc(HEADER_BYTES + TABLE_BYTES);
    const { bytesRead } = await handle.read(head, 0, head.length, 0);
    const header = readHeader(head);
    if (bytesRead !== head.length || header === undefined || header.records !== pointer.records) {
      throw new Error(`${pointer.file} is not the index the store points to: import it again on this machine`);
    }
    const table = Buffer.from(head.subarray(HEADER_BYTES));
    if (table.readUIntLE(8 * PREFIXES, 6) !== header.records) throw new Error(`${pointer.file} has a broken offset table: import it again`);
    return { file: pointer.file, handle, table };
  } catch (error) {
    await handle.close();
    throw error;
  }
}
