import { createHash } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/shared/errors.js';
import { ensureEmbeddedS3, type EmbeddedS3, type EmbeddedS3Options } from '../../src/storage/s3/embedded-s3-server.js';
import { S3ObjectStore } from '../../src/storage/s3/s3-object-store.js';

/*
 * Another local user may read the port file or simply take the port while Sluice is down. Such an
 * impostor must not be taken for the data dir's embedded S3 server, or it receives every upload.
 * Each ensureEmbeddedS3 call stands for one Sluice process, as in embedded-s3-server.test.ts.
 */

let dataDir: string;
let options: EmbeddedS3Options;
const handles: EmbeddedS3[] = [];
const closers: (() => void | Promise<unknown>)[] = [];

beforeEach(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-'));
  options = { dataDir, port: 0, bucket: 'sluice', region: 'us-east-1', accessKeyId: 'test-key', secretAccessKey: 'test-secret' };
});

afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
  await Promise.all(handles.splice(0).map((h) => h.close()));
  fs.rmSync(dataDir, { recursive: true, force: true });
});

function storeAt(endpoint: string): S3ObjectStore {
  const store = new S3ObjectStore({ endpoint, region: 'us-east-1', bucket: 'sluice', forcePathStyle: true, accessKeyId: 'test-key', secretAccessKey: 'test-secret' });
  closers.push(() => store.destroy());
  return store;
}

/** Listens on a free loopback port, records every request it gets, and answers the health path as the old server did. */
async function startImpostor(): Promise<{ port: number; requests: string[] }> {
  const oldIdentity = createHash('sha256').update(fs.realpathSync(path.join(dataDir, 's3'))).digest('hex').slice(0, 32);
  const requests: string[] = [];
  const impostor = http.createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    req.resume();
    // Whatever the query, the best an impostor without the secret can give is the old fixed answer.
    if (req.url?.startsWith('/_sluice/embedded-s3')) res.end(oldIdentity);
    else res.writeHead(200, { etag: '"0"' }).end();
  });
  await new Promise<void>((resolve) => impostor.listen(0, '127.0.0.1', resolve));
  closers.push(() => new Promise((resolve) => impostor.close(resolve)));
  return { port: (impostor.address() as AddressInfo).port, requests };
}

describe('the embedded S3 server proves its identity', () => {
  it('an impostor on the recorded port that answers the old health form is refused and receives no upload', async () => {
    // The data dir had a server before (its s3 dir and port file exist); Sluice is now down.
    fs.mkdirSync(path.join(dataDir, 's3'), { recursive: true });
    const impostor = await startImpostor();
    fs.writeFileSync(path.join(dataDir, 's3', 'port'), `${impostor.port}\n`);

    const outcome = await ensureEmbeddedS3(options).then(
      async (handle) => {
        handles.push(handle);
        await storeAt(handle.endpoint).putBytes('uploads/input.csv', 'email\nalice@example.com\n').catch(() => undefined);
        return 'accepted';
      },
      (e: unknown) => e,
    );

    expect(outcome).toMatchObject({ code: ERROR_CODES.storageUnavailable });
    expect(impostor.requests.filter((r) => !r.startsWith('GET /_sluice/embedded-s3'))).toEqual([]);
  });

  it('a second process on the data dir still finds and reuses the real server', async () => {
    const host = await ensureEmbeddedS3(options);
    handles.push(host);
    const second = await ensureEmbeddedS3(options);
    handles.push(second);

    expect(host.hosting).toBe(true);
    expect(second.hosting).toBe(false);
    expect(second.endpoint).toBe(host.endpoint);
    await storeAt(second.endpoint).putBytes('shared.csv', 'one server');
    expect((await storeAt(host.endpoint).getBytes('shared.csv')).toString()).toBe('one server');
  });

  it('a health request without a well-formed nonce gets no proof', async () => {
    const host = await ensureEmbeddedS3(options);
    handles.push(host);

    const bare = await fetch(`${host.endpoint}/_sluice/embedded-s3`);
    const short = await fetch(`${host.endpoint}/_sluice/embedded-s3?nonce=abc`);

    expect([bare.status, short.status]).toEqual([400, 400]);
  });
});

describe('the embedded S3 front refuses form uploads before s3rver parses them', () => {
  it('a correctly signed multipart/form-data POST (s3rver’s busboy/dicer path) is refused and stores nothing', async () => {
    const host = await ensureEmbeddedS3(options);
    handles.push(host);
    const boundary = 'sluice-form-boundary';
    const form = [
      `--${boundary}`,
      'Content-Disposition: form-data; name="key"',
      '',
      'via-form.csv',
      `--${boundary}`,
      'Content-Disposition: form-data; name="file"; filename="via-form.csv"',
      'Content-Type: text/csv',
      '',
      'email',
      `--${boundary}--`,
      '',
    ].join('\r\n');
    const client = new S3Client({
      endpoint: host.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'test-key', secretAccessKey: 'test-secret' },
      requestChecksumCalculation: 'WHEN_REQUIRED',
    });
    closers.push(() => client.destroy());
    // Turns the SDK's PutObject into the browser-form POST before it is signed, so that the form
    // carries a valid signature: only the front's content check can stop it.
    client.middlewareStack.add(
      (next) => async (args) => {
        const request = args.request as { method: string; path: string; headers: Record<string, string>; body: unknown };
        request.method = 'POST';
        request.path = '/sluice';
        request.headers['content-type'] = `multipart/form-data; boundary=${boundary}`;
        request.headers['content-length'] = String(Buffer.byteLength(form));
        request.body = form;
        return next(args);
      },
      { step: 'build', name: 'asFormPost' },
    );

    const sent = await client.send(new PutObjectCommand({ Bucket: 'sluice', Key: 'ignored', Body: 'x' })).then(
      () => ({ status: 'stored' }),
      (e: { $metadata?: { httpStatusCode?: number }; name?: string }) => ({ status: e.$metadata?.httpStatusCode, name: e.name }),
    );

    expect(sent).toEqual({ status: 501, name: 'NotImplemented' });
    expect(await storeAt(host.endpoint).head('via-form.csv')).toBeUndefined();
  });
});
