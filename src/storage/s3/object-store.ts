import type { Readable } from 'node:stream';

/**
 * The engine's view of S3-compatible storage. The real implementation speaks the AWS SDK to
 * AWS S3, MinIO, R2, Ceph or the embedded s3rver; the in-memory twin serves unit tests.
 */
export interface ObjectStore {
  /** Streams a body of unknown length into `key` (multipart where it is large). */
  putStream(key: string, body: Readable, options?: PutOptions): Promise<PutResult>;
  /** Small bodies written in one request. */
  putBytes(key: string, body: Uint8Array | string, options?: PutOptions): Promise<PutResult>;
  /** Streams an object, or the byte range [start, end] (inclusive, as HTTP `Range` counts). */
  getStream(key: string, range?: ByteRange, signal?: AbortSignal): Promise<Readable>;
  getBytes(key: string, signal?: AbortSignal): Promise<Buffer>;
  /** Size in bytes, or undefined when there is no such object. */
  head(key: string): Promise<{ size: number } | undefined>;
  delete(key: string): Promise<void>;
  /**
   * Deletes every object whose key starts with `prefix` and returns how many it deleted. Not atomic:
   * a failure part-way leaves some objects, so callers run it again until it returns 0.
   */
  deletePrefix(prefix: string): Promise<number>;
  /** A GET URL that works without credentials until it expires. */
  presignGet(key: string, options: PresignOptions): Promise<PresignedUrl>;
  /** Cheap round trip used by readiness checks. */
  ping(): Promise<void>;
}

export interface ByteRange {
  start: number;
  end?: number;
}

export interface PutOptions {
  contentType?: string;
  signal?: AbortSignal;
  /** Called with the bytes sent so far, for upload progress. */
  onProgress?: (bytes: number) => void;
}

export interface PutResult {
  key: string;
  size: number;
}

export interface PresignOptions {
  expiresInSeconds: number;
  /** Suggested file name for browsers (`Content-Disposition: attachment`). */
  downloadName?: string;
}

export interface PresignedUrl {
  url: string;
  expiresAt: Date;
}
