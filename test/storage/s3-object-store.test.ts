import { createHash, createHmac } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { SignatureV4 } from '@smithy/signature-v4';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/shared/clock.js';
import { AppError, ERROR_CODES } from '../../src/shared/errors.js';
import { ensureEmbeddedS3, type EmbeddedS3 } from '../../src/storage/s3/embedded-s3-server.js';
import { MemoryObjectStore } from '../../src/storage/s3/memory-object-store.js';
import type { ObjectStore } from '../../src/storage/s3/object-store.js';
import { S3ObjectStore, type S3ObjectStoreSettings } from '../../src/storage/s3/s3-object-store.js';
import { NodeSha256 } from '../support/node-sha256.js';

const MiB = 1024 * 1024;
const credentials = { accessKeyId: 'test-key', secretAccessKey: 'test-secret' };

let dataDir: string;
let embedded: EmbeddedS3;
let settings: S3ObjectStoreSettings;
let store: S3ObjectStore;
const extraStores: S3ObjectStore[] = [];

beforeEach(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-'));
  embedded = await ensureEmbeddedS3({ dataDir, port: 0, bucket: 'sluice', region: 'us-east-1', ...credentials });
  settings = { endpoint: embedded.endpoint, region: 'us-east-1', bucket: 'sluice', forcePathStyle: true, ...credentials };
  store = new S3ObjectStore(settings);
});

afterEach(async () => {
  for (const s of [store, ...extraStores.splice(0)]) s.destroy();
  await embedded.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** A deterministic byte at every offset, so that any slice can be checked without keeping the whole. */
function byteAt(offset: number): number {
  return (offset * 31 + (offset >>> 13)) & 0xff;
}

function expectedSlice(start: number, end: number): Buffer {
  const out = Buffer.alloc(end - start + 1);
  for (let i = 0; i < out.length; i++) out[i] = byteAt(start + i);
  return out;
}

/** A stream with no known length, as an upload arriving over HTTP would be. */
function generated(size: number, chunkSize = 64 * 1024): { body: Readable; sha256: () => string } {
  const hash = createHash('sha256');
  async function* chunks(): AsyncGenerator<Buffer> {
    for (let at = 0; at < size; at += chunkSize) {
      const chunk = expectedSlice(at, Math.min(at + chunkSize, size) - 1);
      hash.update(chunk);
      yield chunk;
    }
  }
  return { body: Readable.from(chunks(), { objectMode: false }), sha256: () => hash.digest('hex') };
}

async function sha256Of(stream: Readable): Promise<{ hex: string; size: number }> {
  const hash = createHash('sha256');
  let size = 0;
  for await (const chunk of stream) {
    hash.update(chunk as Buffer);
    size += (chunk as Buffer).length;
  }
  return { hex: hash.digest('hex'), size };
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe('S3ObjectStore against the embedded server', () => {
  it('uploads a 12 MiB stream of unknown length in parts and reads it back whole and by range', async () => {
    const size = 12 * MiB + 123;
    const source = generated(size);
    const progress: number[] = [];

    const put = await store.putStream('inputs/big.bin', source.body, { contentType: 'application/octet-stream', onProgress: (n) => progress.push(n) });

    expect(put).toEqual({ key: 'inputs/big.bin', size });
    expect(progress.length).toBeGreaterThanOrEqual(3); // one report per 5 MiB part: it really was multipart
    expect(Math.max(...progress)).toBe(size);
    expect(await store.head('inputs/big.bin')).toEqual({ size });
    expect(await sha256Of(await store.getStream('inputs/big.bin'))).toEqual({ hex: source.sha256(), size });

    const start = 5 * MiB - 7;
    const end = 5 * MiB + 9;
    expect(await readAll(await store.getStream('inputs/big.bin', { start, end }))).toEqual(expectedSlice(start, end));
    expect(await readAll(await store.getStream('inputs/big.bin', { start: size - 5 }))).toEqual(expectedSlice(size - 5, size - 1));
  });

  describe('unsignedPayload, for the embedded server on this machine', () => {
    /** Forwards every request to the embedded server, noting each one's method and payload hash. */
    async function recordingProxy(): Promise<{ endpoint: string; seen: string[]; close: () => Promise<void> }> {
      const target = new URL(embedded.endpoint);
      const seen: string[] = [];
      const server = http.createServer((req, res) => {
        seen.push(`${req.method} ${String(req.headers['x-amz-content-sha256'])}`);
        const forward = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        });
        req.pipe(forward);
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      return { endpoint, seen, close: () => new Promise((resolve) => server.close(() => resolve())) };
    }

    it('uploads, streamed in parts or whole, without hashing their bodies, and the server takes them', async () => {
      const proxy = await recordingProxy();
      try {
        // The proxy is another host to the signature: sign for it, as a client of it would.
        const unsigned = new S3ObjectStore({ ...settings, endpoint: proxy.endpoint, unsignedPayload: true });
        extraStores.push(unsigned);
        const source = generated(6 * MiB + 5);
        await unsigned.putStream('inputs/unsigned.bin', source.body);
        await unsigned.putBytes('results/unsigned.csv', 'a,b\n');
        expect(await sha256Of(await store.getStream('inputs/unsigned.bin'))).toEqual({ hex: source.sha256(), size: 6 * MiB + 5 });
        expect((await store.getBytes('results/unsigned.csv')).toString()).toBe('a,b\n');
        const uploads = proxy.seen.filter((r) => r.startsWith('PUT') || r.startsWith('POST'));
        expect(uploads.length).toBeGreaterThanOrEqual(4); // create, two parts, complete; and the single put
        expect(uploads.every((r) => r.endsWith(' UNSIGNED-PAYLOAD'))).toBe(true);

        const signed = new S3ObjectStore({ ...settings, endpoint: proxy.endpoint });
        extraStores.push(signed);
        proxy.seen.length = 0;
        await signed.putBytes('results/signed.csv', 'a,b\n');
        expect(proxy.seen).toEqual([`PUT ${createHash('sha256').update('a,b\n').digest('hex')}`]);
      } finally {
        await proxy.close();
      }
    });

    it('presigned URLs are signed as before and still download', async () => {
      const unsigned = new S3ObjectStore({ ...settings, unsignedPayload: true });
      extraStores.push(unsigned);
      await unsigned.putBytes('results/all.csv', 'email\n');
      const { url } = await unsigned.presignGet('results/all.csv', { expiresInSeconds: 60 });
      expect(new URL(url).searchParams.get('X-Amz-SignedHeaders')).toBe('host');
      const res = await fetch(url);
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('email\n');
    });
  });

  it('stores a small stream and an empty one', async () => {
    expect(await store.putStream('small.csv', Readable.from(['email\n', 'a@b.c\n']))).toEqual({ key: 'small.csv', size: 12 });
    expect((await store.getBytes('small.csv')).toString()).toBe('email\na@b.c\n');
    expect(await store.putStream('empty.csv', Readable.from([]))).toEqual({ key: 'empty.csv', size: 0 });
    expect(await store.head('empty.csv')).toEqual({ size: 0 });
  });

  it('when the source stream fails mid-way, the upload rejects with that error and leaves no object', async () => {
    async function* tooLong(): AsyncGenerator<Buffer> {
      yield Buffer.alloc(6 * MiB, 1);
      throw new AppError(ERROR_CODES.tooManyRows, 'more than 10 rows');
    }
    await expect(() => store.putStream('inputs/bad.csv', Readable.from(tooLong()))).rejects.toMatchObject({ code: ERROR_CODES.tooManyRows });
    expect(await store.head('inputs/bad.csv')).toBeUndefined();
  });

  it('an aborted upload rejects with the signal’s reason', async () => {
    const controller = new AbortController();
    const stop = new Error('stopped by test');
    async function* slow(): AsyncGenerator<Buffer> {
      yield Buffer.alloc(MiB);
      controller.abort(stop);
      await new Promise((resolve) => setTimeout(resolve, 50));
      yield Buffer.alloc(MiB);
    }
    await expect(() => store.putStream('inputs/aborted.bin', Readable.from(slow()), { signal: controller.signal })).rejects.toBe(stop);
  });

  it('a presigned URL downloads the bytes with plain fetch and names the file', async () => {
    await store.putBytes('results/all.csv', 'email,gender\na@b.c,female\n');
    const before = Date.now();
    const { url, expiresAt } = await store.presignGet('results/all.csv', { expiresInSeconds: 600, downloadName: 'résultats "all".csv' });

    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('email,gender\na@b.c,female\n');
    expect(res.headers.get('content-disposition')).toBe(
      `attachment; filename="r_sultats _all_.csv"; filename*=UTF-8''r%C3%A9sultats%20%22all%22.csv`,
    );
    expect(expiresAt.getTime()).toBeGreaterThan(before + 598_000);
    expect(expiresAt.getTime()).toBeLessThanOrEqual(Date.now() + 600_000);
  });

  it('an expired presigned URL is refused with 403', async () => {
    await store.putBytes('results/old.csv', 'x');
    const clock = new FakeClock(Date.now() - 10 * 60_000);
    const past = new S3ObjectStore(settings, { clock });
    extraStores.push(past);
    const { url, expiresAt } = await past.presignGet('results/old.csv', { expiresInSeconds: 60 });
    expect(expiresAt.getTime()).toBeLessThan(Date.now());

    const res = await fetch(url);
    expect(res.status).toBe(403);
    const body = await res.text();
    expect(body).toContain('<Code>AccessDenied</Code>');
    expect(body).toContain('Request has expired');
  });

  it('a presigned URL with another key or an edited signature is refused with 403', async () => {
    await store.putBytes('results/mine.csv', 'mine');
    await store.putBytes('results/theirs.csv', 'theirs');
    const { url } = await store.presignGet('results/mine.csv', { expiresInSeconds: 600 });
    const otherKey = url.replace('/results/mine.csv?', '/results/theirs.csv?');
    const otherSignature = url.replace(/X-Amz-Signature=([0-9a-f])/, (_, d: string) => `X-Amz-Signature=${d === 'a' ? 'b' : 'a'}`);
    expect(otherKey).not.toBe(url);
    expect(otherSignature).not.toBe(url);

    for (const tampered of [otherKey, otherSignature]) {
      const res = await fetch(tampered);
      expect(res.status).toBe(403);
      expect(await res.text()).toMatch(/<Code>AccessDenied<\/Code><Message>The request signature we calculated does not match/);
    }
  });

  it('a request with no signature at all is refused, as a private S3 bucket would', async () => {
    await store.putBytes('results/private.csv', 'secret');
    const res = await fetch(`${embedded.endpoint}/sluice/results/private.csv`);
    expect(res.status).toBe(403);
  });

  describe('requests signed in the Authorization header', () => {
    /** What anyone holding one download link knows: the access key id is in every presigned URL. */
    async function leakedKeyId(): Promise<string> {
      const { url } = await store.presignGet('results/any.csv', { expiresInSeconds: 600 });
      return (new URL(url).searchParams.get('X-Amz-Credential') ?? '').split('/')[0] ?? '';
    }

    /** Well-formed in every way but the signature, which is made up. */
    function forgedHeaders(keyId: string, { signedAt = Date.now(), signedHeaders = 'host;x-amz-content-sha256;x-amz-date' } = {}): Record<string, string> {
      const date = new Date(signedAt).toISOString().replace(/[-:]|\.\d{3}/g, '');
      return {
        'x-amz-date': date,
        'x-amz-content-sha256': 'UNSIGNED-PAYLOAD',
        authorization: `AWS4-HMAC-SHA256 Credential=${keyId}/${date.slice(0, 8)}/us-east-1/s3/aws4_request, SignedHeaders=${signedHeaders}, Signature=${'0'.repeat(64)}`,
      };
    }

    /** The request exactly as given: plain http.request sets no header of its own but Host. */
    function send(method: string, target: string, headers: Record<string, string>, body?: string): Promise<{ status: number; text: string }> {
      return new Promise((resolve, reject) => {
        const req = http.request(`${embedded.endpoint}${target}`, { method, headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c)).on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString() }));
        });
        req.on('error', reject).end(body);
      });
    }

    /** Signs as the SDK does, with the real secret, to show these requests fail only for their signature. */
    async function signedHeaders(method: string, target: string, payloadHash: string): Promise<Record<string, string>> {
      const signer = new SignatureV4({ credentials, region: 'us-east-1', service: 's3', sha256: NodeSha256, uriEscapePath: false });
      const { host, hostname, port } = new URL(embedded.endpoint);
      const request = await signer.sign({
        method,
        protocol: 'http:',
        hostname,
        port: Number(port),
        path: target,
        query: {},
        headers: { host, 'x-amz-content-sha256': payloadHash },
      });
      const { host: _host, ...rest } = request.headers;
      return rest;
    }

    it('a forged GET, PUT or DELETE with a made-up signature is refused and changes nothing', async () => {
      await store.putBytes('results/private.csv', 'secret');
      const keyId = await leakedKeyId();
      expect(keyId).toBe(credentials.accessKeyId);

      const get = await send('GET', '/sluice/results/private.csv', forgedHeaders(keyId));
      expect(get.status).toBe(403);
      expect(get.text).toContain('<Code>SignatureDoesNotMatch</Code>');
      expect(get.text).not.toContain('secret');

      const overwrite = await send('PUT', '/sluice/results/private.csv', forgedHeaders(keyId), 'pwned');
      const create = await send('PUT', '/sluice/results/planted.csv', forgedHeaders(keyId), 'pwned');
      const remove = await send('DELETE', '/sluice/results/private.csv', forgedHeaders(keyId));
      expect([overwrite.status, create.status, remove.status]).toEqual([403, 403, 403]);
      expect(create.text).toContain('<Code>SignatureDoesNotMatch</Code>');

      expect((await store.getBytes('results/private.csv')).toString()).toBe('secret');
      expect(await store.head('results/planted.csv')).toBeUndefined();
    });

    it('the same requests signed with the real secret go through, so the forged ones failed on their signature alone', async () => {
      const put = await send('PUT', '/sluice/results/signed.csv', await signedHeaders('PUT', '/sluice/results/signed.csv', 'UNSIGNED-PAYLOAD'), 'signed');
      expect(put.status).toBe(200);
      const get = await send('GET', '/sluice/results/signed.csv', await signedHeaders('GET', '/sluice/results/signed.csv', 'UNSIGNED-PAYLOAD'));
      expect(get).toEqual({ status: 200, text: 'signed' });

      // Replaying that signed GET for another key is refused.
      await store.putBytes('results/other.csv', 'other');
      const replayed = await send('GET', '/sluice/results/other.csv', await signedHeaders('GET', '/sluice/results/signed.csv', 'UNSIGNED-PAYLOAD'));
      expect(replayed.status).toBe(403);
      expect(replayed.text).toContain('<Code>SignatureDoesNotMatch</Code>');
    });

    it('a stale date, an unknown key and an unsigned x-amz-copy-source are refused', async () => {
      await store.putBytes('results/private.csv', 'secret');
      const staleRes = await send('GET', '/sluice/results/private.csv', forgedHeaders(credentials.accessKeyId, { signedAt: Date.now() - 20 * 60_000 }));
      expect(staleRes.status).toBe(403);
      expect(staleRes.text).toContain('<Code>RequestTimeTooSkewed</Code>');

      const unknown = await send('GET', '/sluice/results/private.csv', forgedHeaders('S3RVER'));
      expect(unknown.status).toBe(403);
      expect(unknown.text).toContain('<Code>InvalidAccessKeyId</Code>');

      const copy = await signedHeaders('PUT', '/sluice/results/copy.csv', 'UNSIGNED-PAYLOAD');
      const copied = await send('PUT', '/sluice/results/copy.csv', { ...copy, 'x-amz-copy-source': '/sluice/results/private.csv' });
      expect(copied.status).toBe(403);
      expect(await store.head('results/copy.csv')).toBeUndefined();
    });

    it('V2 signatures made with s3rver’s built-in S3RVER/S3RVER key pair are refused', async () => {
      await store.putBytes('results/private.csv', 'secret');
      const expires = Math.floor(Date.now() / 1000) + 600;
      const v2 = (stringToSign: string): string => createHmac('sha1', 'S3RVER').update(stringToSign).digest('base64');

      const query = await send('GET', `/sluice/results/private.csv?AWSAccessKeyId=S3RVER&Expires=${expires}&Signature=${encodeURIComponent(v2(`GET\n\n\n${expires}\n/sluice/results/private.csv`))}`, {});
      const header = await send('GET', '/sluice/results/private.csv', { authorization: `AWS S3RVER:${v2('GET\n\n\n\n/sluice/results/private.csv')}` });
      const planted = await send('PUT', '/sluice/results/planted.csv', { authorization: `AWS S3RVER:${v2('PUT\n\n\n\n/sluice/results/planted.csv')}` }, 'pwned');

      expect([query.status, header.status, planted.status]).toEqual([403, 403, 403]);
      expect(query.text + header.text).not.toContain('secret');
      expect(await store.head('results/planted.csv')).toBeUndefined();
    });

    it('a signed-header list naming `constructor` is refused without taking the server down', async () => {
      await store.putBytes('results/private.csv', 'secret');
      const { url } = await store.presignGet('results/private.csv', { expiresInSeconds: 600 });
      const presigned = new URL(url);
      presigned.searchParams.set('X-Amz-SignedHeaders', 'constructor;host');
      const viaQuery = await fetch(presigned);
      const viaHeader = await send(
        'GET',
        '/sluice/results/private.csv',
        forgedHeaders(credentials.accessKeyId, { signedHeaders: 'constructor;host;x-amz-content-sha256;x-amz-date' }),
      );
      expect([viaQuery.status, viaHeader.status]).toEqual([403, 403]);
      expect((await store.getBytes('results/private.csv')).toString()).toBe('secret');
    });
  });

  it('ensureBucket creates a missing bucket and is idempotent', async () => {
    const other = new S3ObjectStore({ ...settings, bucket: 'other-bucket' });
    extraStores.push(other);
    await expect(() => other.ping()).rejects.toBeInstanceOf(AppError);
    await other.ensureBucket();
    await other.ensureBucket();
    await other.putBytes('a.txt', 'a');
    expect(await other.head('a.txt')).toEqual({ size: 1 });
  });

  it('when nothing listens at the endpoint, calls reject with a retryable storage_unavailable', async () => {
    const closedPort = await freePort();
    const dead = new S3ObjectStore({ ...settings, endpoint: `http://127.0.0.1:${closedPort}` });
    extraStores.push(dead);
    const error = await dead.ping().catch((e: unknown) => e);
    expect(error).toMatchObject({ code: ERROR_CODES.storageUnavailable, retryable: true });
  });
});

// The same cases against the fake, so that unit tests built on it meet the real store's behaviour.
describe.each([
  { name: 'S3ObjectStore', make: (): ObjectStore => store },
  { name: 'MemoryObjectStore', make: (): ObjectStore => new MemoryObjectStore() },
])('$name contract', ({ make }) => {
  it('round-trips bytes and strings, and deletes', async () => {
    const s = make();
    await s.putBytes('parts/0.csv', 'héllo\n', { contentType: 'text/csv' });
    await s.putBytes('parts/1.bin', new Uint8Array([0, 255, 7]));
    expect((await s.getBytes('parts/0.csv')).toString('utf8')).toBe('héllo\n');
    expect([...(await s.getBytes('parts/1.bin'))]).toEqual([0, 255, 7]);
    expect(await s.head('parts/0.csv')).toEqual({ size: 7 });

    await s.delete('parts/0.csv');
    await s.delete('parts/never-there.csv');
    expect(await s.head('parts/0.csv')).toBeUndefined();
  });

  it('a missing key: head is undefined, reads reject with object_not_found', async () => {
    const s = make();
    expect(await s.head('nope.csv')).toBeUndefined();
    await expect(() => s.getBytes('nope.csv')).rejects.toMatchObject({ code: ERROR_CODES.objectNotFound, statusCode: 404 });
    await expect(() => s.getStream('nope.csv')).rejects.toMatchObject({ code: ERROR_CODES.objectNotFound });
  });

  it('reads byte ranges as HTTP counts them, and refuses one past the end', async () => {
    const s = make();
    await s.putBytes('r.txt', '0123456789');
    expect((await readAll(await s.getStream('r.txt', { start: 2, end: 4 }))).toString()).toBe('234');
    expect((await readAll(await s.getStream('r.txt', { start: 7 }))).toString()).toBe('789');
    expect((await readAll(await s.getStream('r.txt', { start: 8, end: 99 }))).toString()).toBe('89');
    await expect(() => s.getStream('r.txt', { start: 10 })).rejects.toMatchObject({ code: ERROR_CODES.badArgument, statusCode: 416 });
  });

  it('presigns a URL that expires when it says', async () => {
    const { url, expiresAt } = await make().presignGet('results/all.csv', { expiresInSeconds: 60, downloadName: 'all.csv' });
    expect(url).toContain('all.csv');
    expect(Math.abs(expiresAt.getTime() - (Date.now() + 60_000))).toBeLessThan(2_000);
  });
});

async function freePort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

