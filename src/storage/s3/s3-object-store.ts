import { Readable, Transform, pipeline } from 'node:stream';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type BucketLocationConstraint,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { systemClock, type Clock } from '../../shared/clock.js';
import { AppError, ERROR_CODES, toAppError } from '../../shared/errors.js';
import type { ByteRange, ObjectStore, PresignOptions, PresignedUrl, PutOptions, PutResult } from './object-store.js';

export interface S3ObjectStoreSettings {
  /** Undefined means AWS itself, found from `region`. */
  endpoint?: string;
  region: string;
  bucket: string;
  /** Both absent: the SDK's default credential chain (env, profile, instance role). */
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle: boolean;
  /**
   * Uploads are signed without hashing their bodies (`UNSIGNED-PAYLOAD`). Only for an endpoint on
   * this machine, the embedded server: the bytes cross no network, and the hash cost about as much
   * CPU as the rest of the client's work on a 1M-row job.
   */
  unsignedPayload?: boolean;
}

export interface S3ObjectStoreDeps {
  /** Presigned URLs are dated by this clock, so tests can mint already-expired ones. */
  clock?: Clock;
  /** Called with the S3 command's name when a request fails for a fault (not a 404, not an abort). */
  onError?: (operation: string) => void;
}

/** Only a hung connect is cut short: a slow reader of a large body must not be timed out. */
const CONNECT_TIMEOUT_MS = 5_000;
/** S3's most keys per DeleteObjects request. */
const DELETE_BATCH = 1000;

export class S3ObjectStore implements ObjectStore {
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly clock: Clock;

  constructor(private readonly settings: S3ObjectStoreSettings, deps: S3ObjectStoreDeps = {}) {
    const { accessKeyId, secretAccessKey } = settings;
    this.bucket = settings.bucket;
    this.clock = deps.clock ?? systemClock;
    this.client = new S3Client({
      region: settings.region,
      forcePathStyle: settings.forcePathStyle,
      ...(settings.endpoint !== undefined && { endpoint: settings.endpoint }),
      ...(accessKeyId !== undefined && secretAccessKey !== undefined && { credentials: { accessKeyId, secretAccessKey } }),
      // The default CRC checksums make s3rver hang on uploads; real S3 does not need them either.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: { connectionTimeout: CONNECT_TIMEOUT_MS },
    });
    const { onError } = deps;
    if (onError) {
      // Every command passes here, so no call site can forget to count its failures.
      this.client.middlewareStack.add(
        (next, context) => async (args) => {
          try {
            return await next(args);
          } catch (e: unknown) {
            const error = e as { name?: string; $metadata?: { httpStatusCode?: number } };
            if (error.name !== 'AbortError' && error.$metadata?.httpStatusCode !== 404) onError(context.commandName ?? 'unknown');
            throw e;
          }
        },
        { step: 'initialize', name: 'sluiceErrorCount' },
      );
    }
    if (settings.unsignedPayload) {
      // Before signing (the finalizeRequest step), which takes a payload hash it finds in the headers
      // as it is. Only bodies that are sent: presigned GET URLs are signed as they always are.
      this.client.middlewareStack.add(
        (next) => async (args) => {
          const request = args.request as { method?: string; headers?: Record<string, string> };
          if (request.headers && (request.method === 'PUT' || request.method === 'POST')) request.headers['x-amz-content-sha256'] = 'UNSIGNED-PAYLOAD';
          return next(args);
        },
        { step: 'build', name: 'sluiceUnsignedPayload' },
      );
    }
  }

  async putStream(key: string, body: Readable, options: PutOptions = {}): Promise<PutResult> {
    const { signal, onProgress } = options;
    signal?.throwIfAborted();
    let size = 0;
    const counted = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        size += chunk.length;
        done(null, chunk);
      },
    });
    // Errors of the source (a size limit tripped on the way in) reach the uploader through here.
    pipeline(body, counted, () => {});
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: key, Body: counted, ContentType: options.contentType },
      leavePartsOnError: false,
      // Two 5 MiB parts in flight keep an upload's memory small; loopback and S3 are both fast
      // enough that more parallel parts buy little.
      queueSize: 2,
    });
    if (onProgress) upload.on('httpUploadProgress', (p) => p.loaded !== undefined && onProgress(p.loaded));
    const abort = (): void => void upload.abort();
    signal?.addEventListener('abort', abort, { once: true });
    try {
      await upload.done();
      return { key, size };
    } catch (e: unknown) {
      counted.destroy();
      throw storageError(e, key, signal);
    } finally {
      signal?.removeEventListener('abort', abort);
    }
  }

  async putBytes(key: string, body: Uint8Array | string, options: PutOptions = {}): Promise<PutResult> {
    const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
    try {
      await this.client.send(
        new PutObjectCommand({ Bucket: this.bucket, Key: key, Body: bytes, ContentType: options.contentType }),
        { abortSignal: options.signal },
      );
    } catch (e: unknown) {
      throw storageError(e, key, options.signal);
    }
    options.onProgress?.(bytes.byteLength);
    return { key, size: bytes.byteLength };
  }

  async getStream(key: string, range?: ByteRange, signal?: AbortSignal): Promise<Readable> {
    const Range = range ? `bytes=${range.start}-${range.end ?? ''}` : undefined;
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key, Range }), { abortSignal: signal });
      if (!(out.Body instanceof Readable)) throw new AppError(ERROR_CODES.internal, `GetObject ${key} gave no Node stream`);
      return out.Body;
    } catch (e: unknown) {
      throw storageError(e, key, signal);
    }
  }

  async getBytes(key: string, signal?: AbortSignal): Promise<Buffer> {
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }), { abortSignal: signal });
      if (!out.Body) throw new AppError(ERROR_CODES.internal, `GetObject ${key} gave no body`);
      return Buffer.from(await out.Body.transformToByteArray());
    } catch (e: unknown) {
      throw storageError(e, key, signal);
    }
  }

  async head(key: string): Promise<{ size: number } | undefined> {
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { size: out.ContentLength ?? 0 };
    } catch (e: unknown) {
      const mapped = storageError(e, key);
      if (mapped instanceof AppError && mapped.code === ERROR_CODES.objectNotFound) return undefined;
      throw mapped;
    }
  }

  async delete(key: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (e: unknown) {
      throw storageError(e, key);
    }
  }

  async deletePrefix(prefix: string): Promise<number> {
    let deleted = 0;
    try {
      // A listing page holds at most 1,000 keys, which is also DeleteObjects' limit per request.
      // Each page is listed afresh from the start: the keys just deleted are no longer in it.
      for (;;) {
        const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, MaxKeys: DELETE_BATCH }));
        const keys = (page.Contents ?? []).flatMap((o) => (o.Key === undefined ? [] : [{ Key: o.Key }]));
        if (keys.length === 0) return deleted;
        const out = await this.client.send(new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: keys, Quiet: true } }));
        const failed = out.Errors ?? [];
        if (failed.length > 0) {
          throw new AppError(ERROR_CODES.storageUnavailable, `object store kept ${failed.length} objects under ${prefix} (${failed[0]!.Code ?? 'unknown'})`, {
            retryable: true,
          });
        }
        deleted += keys.length;
        if (!page.IsTruncated) return deleted;
      }
    } catch (e: unknown) {
      throw storageError(e);
    }
  }

  async presignGet(key: string, options: PresignOptions): Promise<PresignedUrl> {
    // X-Amz-Date has whole seconds; dating expiresAt the same way keeps it exact.
    const signingDate = new Date(Math.floor(this.clock.now() / 1000) * 1000);
    const command = new GetObjectCommand({
      Bucket: this.bucket,
      Key: key,
      ResponseContentDisposition: options.downloadName === undefined ? undefined : attachmentDisposition(options.downloadName),
    });
    try {
      const url = await getSignedUrl(this.client, command, { expiresIn: options.expiresInSeconds, signingDate });
      return { url, expiresAt: new Date(signingDate.getTime() + options.expiresInSeconds * 1000) };
    } catch (e: unknown) {
      throw storageError(e, key);
    }
  }

  async ping(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (e: unknown) {
      throw storageError(e);
    }
  }

  /** Creates the bucket unless it is there already; safe when several processes race to do it. */
  async ensureBucket(): Promise<void> {
    try {
      await this.ping();
      return;
    } catch (e: unknown) {
      if (httpStatusOf(unwrap(e)) !== 404) throw e;
    }
    const { region } = this.settings;
    try {
      await this.client.send(
        new CreateBucketCommand({
          Bucket: this.bucket,
          // us-east-1 is the one region that refuses an explicit LocationConstraint.
          ...(region !== 'us-east-1' && { CreateBucketConfiguration: { LocationConstraint: region as BucketLocationConstraint } }),
        }),
      );
    } catch (e: unknown) {
      const name = errorName(e);
      // Lost a race with another process; the ping proves the winner's bucket is usable by us.
      if (name === 'BucketAlreadyOwnedByYou' || name === 'BucketAlreadyExists') return this.ping();
      throw storageError(e);
    }
  }

  destroy(): void {
    this.client.destroy();
  }
}

/** `attachment` with an ASCII fallback name, plus the exact name (RFC 6266) when it is not ASCII. */
export function attachmentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  if (ascii === name) return `attachment; filename="${name}"`;
  const exact = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${exact}`;
}

function storageError(e: unknown, key?: string, signal?: AbortSignal): unknown {
  // The caller's own stop is not a storage failure; hand back its reason as pipeline() does.
  if (signal?.aborted) return signal.reason;
  if (e instanceof AppError) return e;
  const name = errorName(e);
  const status = httpStatusOf(e);
  if (key !== undefined && (name === 'NoSuchKey' || (status === 404 && name !== 'NoSuchBucket'))) {
    return new AppError(ERROR_CODES.objectNotFound, `no object at ${key}`, { statusCode: 404, cause: e, details: { key } });
  }
  if (name === 'InvalidRange' || status === 416) {
    return new AppError(ERROR_CODES.badArgument, `range not satisfiable for ${key}`, { statusCode: 416, cause: e, details: { key } });
  }
  if (status !== undefined && (status >= 500 || status === 429)) {
    return new AppError(ERROR_CODES.storageUnavailable, `object store answered ${status} (${name})`, { cause: e, retryable: true });
  }
  return toAppError(e, ERROR_CODES.storageUnavailable);
}

function errorName(e: unknown): string {
  return e instanceof Error ? e.name : '';
}

function httpStatusOf(e: unknown): number | undefined {
  return (e as { $metadata?: { httpStatusCode?: number } } | undefined)?.$metadata?.httpStatusCode;
}

function unwrap(e: unknown): unknown {
  return e instanceof AppError ? e.cause : e;
}
