import { Readable } from 'node:stream';
import { systemClock, type Clock } from '../../shared/clock.js';
import { AppError, ERROR_CODES } from '../../shared/errors.js';
import type { ByteRange, ObjectStore, PresignOptions, PresignedUrl, PutOptions, PutResult } from './object-store.js';

/** The ObjectStore twin for unit tests: same errors and range rules as S3, nothing on disk. */
export class MemoryObjectStore implements ObjectStore {
  readonly objects = new Map<string, Buffer>();

  constructor(private readonly clock: Clock = systemClock) {}

  async putStream(key: string, body: Readable, options: PutOptions = {}): Promise<PutResult> {
    options.signal?.throwIfAborted();
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of body.iterator({ destroyOnReturn: true })) {
      options.signal?.throwIfAborted();
      const bytes = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
      chunks.push(bytes);
      size += bytes.length;
      options.onProgress?.(size);
    }
    // Like a multipart upload, the object appears only once the whole body has arrived.
    this.objects.set(key, Buffer.concat(chunks));
    return { key, size };
  }

  async putBytes(key: string, body: Uint8Array | string, options: PutOptions = {}): Promise<PutResult> {
    options.signal?.throwIfAborted();
    const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body);
    this.objects.set(key, bytes);
    options.onProgress?.(bytes.length);
    return { key, size: bytes.length };
  }

  async getStream(key: string, range?: ByteRange, signal?: AbortSignal): Promise<Readable> {
    signal?.throwIfAborted();
    const bytes = this.read(key);
    if (!range) return Readable.from([bytes], { objectMode: false });
    const end = Math.min(range.end ?? bytes.length - 1, bytes.length - 1);
    if (range.start < 0 || range.start > end) {
      throw new AppError(ERROR_CODES.badArgument, `range not satisfiable for ${key}`, { statusCode: 416, details: { key } });
    }
    return Readable.from([bytes.subarray(range.start, end + 1)], { objectMode: false });
  }

  async getBytes(key: string, signal?: AbortSignal): Promise<Buffer> {
    signal?.throwIfAborted();
    return Buffer.from(this.read(key));
  }

  async head(key: string): Promise<{ size: number } | undefined> {
    const bytes = this.objects.get(key);
    return bytes ? { size: bytes.length } : undefined;
  }

  async delete(key: string): Promise<void> {
    this.objects.delete(key);
  }

  async deletePrefix(prefix: string): Promise<number> {
    let deleted = 0;
    for (const key of [...this.objects.keys()]) {
      if (key.startsWith(prefix) && this.objects.delete(key)) deleted++;
    }
    return deleted;
  }

  async presignGet(key: string, options: PresignOptions): Promise<PresignedUrl> {
    const expiresAt = new Date(this.clock.now() + options.expiresInSeconds * 1000);
    const url = new URL(`memory://objects/${encodeURIComponent(key)}`);
    url.searchParams.set('expires', expiresAt.toISOString());
    if (options.downloadName !== undefined) url.searchParams.set('download', options.downloadName);
    return { url: url.toString(), expiresAt };
  }

  async ping(): Promise<void> {}

  private read(key: string): Buffer {
    const bytes = this.objects.get(key);
    if (!bytes) throw new AppError(ERROR_CODES.objectNotFound, `no object at ${key}`, { statusCode: 404, details: { key } });
    return bytes;
  }
}
