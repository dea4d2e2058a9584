import { createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import S3rver from 's3rver';
import s3rverAccounts from 's3rver/lib/models/account.js';
import { AppError, ERROR_CODES, isAppError, systemCodeOf } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { ObjectStore } from './object-store.js';
import { answerListing, listRequestOf, type MetadataReader } from './bucket-listing.js';
import { checkHeaderSigned } from './header-auth-check.js';
import { checkPresigned, hasQueryAuth } from './presign-check.js';
import { s3ErrorXml } from './sigv4.js';

export interface EmbeddedS3Options {
  dataDir: string;
  /** Used only the first time a data dir gets a server (0: any free port); then the recorded port wins. */
  port: number;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  log?: Logger;
}

export interface EmbeddedS3 {
  readonly endpoint: string;
  /** True while this process runs the server that every process on the data dir talks to. */
  readonly hosting: boolean;
  /** After a refused connection: use whoever answers on the recorded port, or host there ourselves. */
  reconnect(): Promise<void>;
  /** Stops the server if this process hosts it; the others take over on their next failed call. */
  close(): Promise<void>;
}

/** Bucket names cannot hold `_`, so this path never shadows an S3 request. */
const HEALTH_PATH = '/_sluice/embedded-s3';
const NONCE = /^[0-9a-f]{64}$/;
const PROBE_TIMEOUT_MS = 2_000;
/** Requests in flight for other processes get this long to finish when the host stops. */
const CLOSE_GRACE_MS = 2_000;
const CLAIM_ATTEMPTS = 10;
const S3RVER_DEFAULT_KEY_ID = 'S3RVER';

/** s3rver's account model has this too; its declaration here lists only createKeyPair. */
type RevocableAccount = { revokeAccessKey(accessKeyId: string): void };

/**
 * Finds or starts the one embedded S3 server of a data dir. The port is chosen once and recorded in
 * `<dataDir>/s3/port`, so that endpoints and presigned URLs stay valid whichever process hosts.
 */
export async function ensureEmbeddedS3(options: EmbeddedS3Options): Promise<EmbeddedS3> {
  const s3Dir = path.join(options.dataDir, 's3');
  // Objects are uploads and results: the dirs are the owner's alone even where the process umask
  // (which s3rver's own files follow) is not.
  await fs.mkdir(path.join(s3Dir, 'buckets'), { recursive: true, mode: 0o700 });
  const identity = identityKey(options.secretAccessKey, await fs.realpath(s3Dir));
  s3rverAccounts.DUMMY_ACCOUNT.createKeyPair(options.accessKeyId, options.secretAccessKey);
  // s3rver ships the key pair S3RVER/S3RVER and checks V2 signatures made with it. The front refuses
  // V2 anyway; without the key, s3rver would too.
  if (options.accessKeyId !== S3RVER_DEFAULT_KEY_ID) (s3rverAccounts.DUMMY_ACCOUNT as typeof s3rverAccounts.DUMMY_ACCOUNT & RevocableAccount).revokeAccessKey(S3RVER_DEFAULT_KEY_ID);
  const embedded = new EmbeddedS3Server(options, s3Dir, identity);
  await embedded.start();
  return embedded;
}

class EmbeddedS3Server implements EmbeddedS3 {
  private port = 0;
  private server: http.Server | undefined;
  private s3rver: S3rver | undefined;
  private reconnecting: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly options: EmbeddedS3Options,
    private readonly s3Dir: string,
    private readonly identity: Buffer,
  ) {}

  get endpoint(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get hosting(): boolean {
    return this.server !== undefined;
  }

  async start(): Promise<void> {
    const claim = await this.claim();
    this.port = claim.port;
    this.server = claim.server;
    this.options.log?.info({ port: this.port, hosting: this.hosting }, 'embedded S3 ready');
  }

  reconnect(): Promise<void> {
    if (this.closed) return Promise.reject(new AppError(ERROR_CODES.storageUnavailable, 'embedded S3 handle is closed'));
    if (this.server) return Promise.resolve();
    // Every call that failed at once waits on the same claim instead of racing its own.
    this.reconnecting ??= this.claim()
      .then(async ({ port, server }) => {
        if (port !== this.port) {
          if (server) await stopServer(server);
          throw new AppError(ERROR_CODES.storageUnavailable, `${this.portFile} changed from ${this.port} to ${port}; restart this process`);
        }
        this.server = server;
        if (server) this.options.log?.info({ port }, 'embedded S3 server taken over');
      })
      .finally(() => {
        this.reconnecting = undefined;
      });
    return this.reconnecting;
  }

  async close(): Promise<void> {
    this.closed = true;
    const server = this.server;
    this.server = undefined;
    if (server) await stopServer(server);
  }

  private get portFile(): string {
    return path.join(this.s3Dir, 'port');
  }

  private async claim(): Promise<{ port: number; server?: http.Server }> {
    for (let attempt = 1; attempt <= CLAIM_ATTEMPTS; attempt++) {
      const recorded = await readRecordedPort(this.portFile);
      if (recorded === undefined) {
        const server = await this.createServer();
        const port = await listenOrBusy(server, this.options.port);
        if (port === undefined) {
          await delay(20 * attempt);
          continue;
        }
        try {
          await fs.writeFile(this.portFile, `${port}\n`, { flag: 'wx', mode: 0o600 });
          return { port, server };
        } catch (e: unknown) {
          await stopServer(server);
          if (systemCodeOf(e) !== 'EEXIST') throw e;
          continue;
        }
      }
      if (this.options.port !== 0 && this.options.port !== recorded) {
        this.options.log?.warn({ configured: this.options.port, recorded }, 'embedded S3 keeps the port recorded in the data dir');
      }
      const answer = await probe(recorded, this.identity);
      if (answer === 'ours') return { port: recorded };
      if (answer === 'slow') continue;
      if (answer === 'foreign') {
        throw new AppError(ERROR_CODES.storageUnavailable, `port ${recorded} recorded in ${this.portFile} is held by a program that cannot prove it holds this data dir's S3 key`, {
          retryable: true,
        });
      }
      const server = await this.createServer();
      if ((await listenOrBusy(server, recorded)) !== undefined) return { port: recorded, server };
      // Busy: another process took the port between our probe and our listen; probe it next round.
      await delay(20 * attempt);
    }
    throw new AppError(ERROR_CODES.storageUnavailable, `could not find or start the embedded S3 server of ${this.s3Dir}`, { retryable: true });
  }

  private async createServer(): Promise<http.Server> {
    if (!this.s3rver) {
      this.s3rver = new S3rver({
        directory: path.join(this.s3Dir, 'buckets'),
        silent: true,
        configureBuckets: [{ name: this.options.bucket }],
      });
      await this.s3rver.configureBuckets();
    }
    const bucketDir = path.join(this.s3Dir, 'buckets', this.options.bucket);
    const server = http.createServer(
      { headersTimeout: S3_HEADERS_TIMEOUT_MS, connectionsCheckingInterval: 1000 },
      frontHandler(this.s3rver.callback(), this.options, this.identity, { bucketDir, metadataOf: metadataReader(this.s3rver, this.options.bucket) }),
    );
    // A socket silent this long is closed, mid-body or between requests; nothing Sluice sends pauses
    // that long (an upload relayed from a slow client pauses at most SLUICE_BODY_IDLE_SECONDS, 30 s
    // by default, and longer ones are cut by the API first).
    server.setTimeout(S3_IDLE_TIMEOUT_MS, (socket) => socket.destroy());
    // Node's headers time-out starts with the first byte: a connection that sends none is cut here.
    server.on('connection', (socket: Socket) => {
      const silent = setTimeout(() => socket.destroy(), S3_HEADERS_TIMEOUT_MS);
      silent.unref();
      socket.once('data', () => clearTimeout(silent));
      socket.once('close', () => clearTimeout(silent));
    });
    return server;
  }
}

/**
 * Time-outs of the embedded S3 port (issue 27, finding 6): without them an idle or trickling
 * connection stayed open past 75 s. The SDK sends its headers at once, so 10 s is plenty.
 */
export const S3_HEADERS_TIMEOUT_MS = 10_000;
export const S3_IDLE_TIMEOUT_MS = 60_000;

/**
 * s3rver verifies no SigV4 signature at all (it only looks the access key id up) and lets
 * anonymous requests through; this refuses what real S3 with a private bucket would refuse before
 * handing the request on. Only the two ways the AWS SDK signs get through: a presigned URL or an
 * `Authorization: AWS4-HMAC-SHA256` header, each checked against our own key pair.
 */
function frontHandler(s3: http.RequestListener, credentials: EmbeddedS3Options, identity: Buffer, listing: { bucketDir: string; metadataOf: MetadataReader }): http.RequestListener {
  return (req, res) => {
    const url = req.url ?? '/';
    const [pathname, query = ''] = url.split('?', 2);
    if (pathname === HEALTH_PATH) {
      const nonce = new URLSearchParams(query).get('nonce') ?? '';
      if (NONCE.test(nonce)) res.writeHead(200, { 'content-type': 'text/plain' }).end(identityProof(identity, nonce));
      else res.writeHead(400, { 'content-type': 'text/plain' }).end('nonce must be 64 lowercase hex digits');
      return;
    }
    if (isMultipartForm(req.headers['content-type'])) {
      // s3rver parses browser-form uploads (POST Object) with busboy 0.3 and dicer, whose header
      // parser crashes the process on a crafted part (GHSA-wm7h-9275-46v2, no fixed version). The
      // SDK never sends a form, so none reaches s3rver, signed or not.
      const body = s3ErrorXml('NotImplemented', 'POST Object (multipart/form-data uploads) is not supported by the embedded server');
      res.writeHead(501, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body), connection: 'close' }).end(body);
      return;
    }
    let denial: { code: string; message: string } | undefined;
    try {
      denial = authorize(req.method ?? 'GET', url, req.headers, credentials);
    } catch (e: unknown) {
      // A check that throws must refuse, not take the process down with it.
      credentials.log?.warn({ err: e }, 'embedded S3 request check failed');
      denial = { code: 'AccessDenied', message: 'Access Denied' };
    }
    if (denial === undefined) {
      // s3rver's own listing hides prefixes and pages out of order (see bucket-listing.ts).
      const list = listRequestOf(req.method ?? 'GET', pathname ?? '/', query, credentials.bucket);
      if (list === undefined) {
        s3(req, res);
        return;
      }
      answerListing(res, listing.bucketDir, credentials.bucket, list, listing.metadataOf).catch((e: unknown) => {
        credentials.log?.warn({ err: e }, 'embedded S3 listing failed');
        if (res.headersSent) res.destroy();
        else {
          const body = s3ErrorXml('InternalError', 'We encountered an internal error. Please try again.');
          res.writeHead(500, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body) }).end(body);
        }
      });
      return;
    }
    // The request body, if any, is read and dropped by Node once this response ends.
    const body = s3ErrorXml(denial.code, denial.message);
    res.writeHead(403, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body) }).end(body);
  };
}

/** s3rver's file store reads an object's ETag (its MD5) and times; its typings do not declare it. */
type S3rverStore = { getMetadata(bucket: string, key: string): Promise<Record<string, string | number | undefined>> };

function metadataReader(s3rver: S3rver, bucket: string): MetadataReader {
  const store = (s3rver as unknown as { store: S3rverStore }).store;
  return async (key) => {
    try {
      const meta = await store.getMetadata(bucket, key);
      return { etag: String(meta['etag']), lastModified: new Date(String(meta['last-modified'])).toISOString(), size: Number(meta['content-length']) };
    } catch (e: unknown) {
      // Deleted between the directory read and this one: not listed, as on S3.
      if (systemCodeOf(e) === 'ENOENT') return undefined;
      throw e;
    }
  };
}

/** Any mention of multipart, however cased or spaced, so that no parser reads it differently from ours. */
function isMultipartForm(contentType: string | string[] | undefined): boolean {
  return contentType !== undefined && /multipart/i.test(String(contentType));
}

/** Why the request may not reach s3rver, or undefined when it may. */
function authorize(method: string, url: string, headers: http.IncomingHttpHeaders, credentials: EmbeddedS3Options): { code: string; message: string } | undefined {
  const { accessKeyId, secretAccessKey } = credentials;
  const now = Date.now();
  if (hasQueryAuth(url)) {
    if (headers.authorization !== undefined) return { code: 'InvalidRequest', message: 'Only one auth mechanism allowed' };
    const verdict = checkPresigned({ method, url, headers, now, accessKeyId, secretAccessKey });
    return verdict.ok ? undefined : { code: 'AccessDenied', message: verdict.message };
  }
  if (headers.authorization !== undefined) {
    const verdict = checkHeaderSigned({ method, url, headers, now, accessKeyId, secretAccessKey });
    return verdict.ok ? undefined : { code: verdict.code, message: verdict.message };
  }
  // Anonymous, or V2 query signing (`?AWSAccessKeyId=…&Signature=…`), which the SDK never sends.
  return { code: 'AccessDenied', message: 'Access Denied' };
}

/** `slow`: something accepted the connection but did not answer in time (a host that is busy). */
type ProbeAnswer = 'ours' | 'foreign' | 'nobody' | 'slow';

/**
 * The key a server proves it holds. The port file can be read, and the port taken while Sluice is
 * down, by another local process: a fixed answer (the old hash of the dir's path) let such a
 * process pass for our server and receive whole uploads. This one derives from the S3 secret key,
 * which only the data dir's owner can read (`s3-credentials.json`, 0600) or was given in the
 * config; the path keeps apart two data dirs configured with the same key pair.
 */
function identityKey(secretAccessKey: string, s3Dir: string): Buffer {
  return createHmac('sha256', secretAccessKey).update('sluice embedded-s3 identity v1\n').update(s3Dir).digest();
}

function identityProof(identity: Buffer, nonce: string): string {
  return createHmac('sha256', identity).update(nonce).digest('hex');
}

/**
 * Asks whoever listens on the port to prove it holds our identity key, with a fresh nonce, so that
 * an answer recorded from the real server cannot be played back. No object goes to a port whose
 * holder has not answered this.
 */
async function probe(port: number, identity: Buffer): Promise<ProbeAnswer> {
  // A ref'd timer, not AbortSignal.timeout: that one is unref'd, and when a peer drops the
  // connection without an answer, it was the only thing left keeping the process alive, so a
  // starting command could exit 0 having done nothing.
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error('probe timed out')), PROBE_TIMEOUT_MS);
  try {
    const nonce = randomBytes(32).toString('hex');
    const res = await fetch(`http://127.0.0.1:${port}${HEALTH_PATH}?nonce=${nonce}`, { signal: controller.signal });
    return res.ok && (await res.text()) === identityProof(identity, nonce) ? 'ours' : 'foreign';
  } catch (e: unknown) {
    const code = systemCodeOf(e);
    if (code === 'ECONNREFUSED' || code === 'ECONNRESET') return 'nobody';
    // A host blocks its event loop while better-sqlite3 waits on another process's lock (up to
    // the busy timeout): that is a host to wait for, not a dead one.
    if (controller.signal.aborted) return 'slow';
    throw new AppError(ERROR_CODES.storageUnavailable, `embedded S3 on port ${port} does not answer`, { cause: e, retryable: true });
  } finally {
    clearTimeout(timer);
  }
}

/** The bound port, or undefined when the port is taken. */
function listenOrBusy(server: http.Server, port: number): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const onError = (e: Error): void => (systemCodeOf(e) === 'EADDRINUSE' ? resolve(undefined) : reject(e));
    server.once('error', onError);
    server.listen({ host: '127.0.0.1', port }, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

async function readRecordedPort(file: string): Promise<number | undefined> {
  for (let attempt = 0; ; attempt++) {
    let text: string;
    try {
      text = (await fs.readFile(file, 'utf8')).trim();
    } catch (e: unknown) {
      if (systemCodeOf(e) === 'ENOENT') return undefined;
      throw e;
    }
    const port = Number(text);
    if (/^\d+$/.test(text) && port > 0 && port < 65_536) return port;
    // The winner of the `wx` race creates the file before it writes the digits.
    if (attempt >= 20) throw new AppError(ERROR_CODES.badConfig, `${file} holds no port number; delete it to pick a new port`);
    await delay(25);
  }
}

async function stopServer(server: http.Server): Promise<void> {
  if (!server.listening) return;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const force = setTimeout(() => server.closeAllConnections(), CLOSE_GRACE_MS);
  await closed;
  clearTimeout(force);
}

/**
 * Retries a call once after `reconnect()` when the embedded server's host went away. Only failures
 * to connect are retried; a stream that breaks half-way is the caller's to restart.
 */
export function withFailover(store: ObjectStore, reconnect: () => Promise<void>): ObjectStore {
  const once = async <T>(call: () => Promise<T>, canRetry: () => boolean = () => true): Promise<T> => {
    try {
      return await call();
    } catch (e: unknown) {
      if (!isConnectionLost(e) || !canRetry()) throw e;
      await reconnect();
      return call();
    }
  };
  return {
    async putStream(key, body, options) {
      // The uploader reads a whole part before its first request, so a dead host would only show
      // once the body is spent; the ping finds it while a retry is still possible.
      await once(() => store.ping());
      return once(() => store.putStream(key, body, options), () => !body.readableDidRead);
    },
    putBytes: (key, body, options) => once(() => store.putBytes(key, body, options)),
    getStream: (key, range, signal) => once(() => store.getStream(key, range, signal)),
    getBytes: (key, signal) => once(() => store.getBytes(key, signal)),
    head: (key) => once(() => store.head(key)),
    delete: (key) => once(() => store.delete(key)),
    deletePrefix: (prefix) => once(() => store.deletePrefix(prefix)),
    presignGet: (key, options) => store.presignGet(key, options),
    ping: () => once(() => store.ping()),
  };
}

function isConnectionLost(e: unknown): boolean {
  const code = systemCodeOf(isAppError(e) ? e.cause : e);
  return code === 'ECONNREFUSED' || code === 'ECONNRESET';
}
