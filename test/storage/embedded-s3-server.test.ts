import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/shared/errors.js';
import { ensureEmbeddedS3, withFailover, type EmbeddedS3, type EmbeddedS3Options } from '../../src/storage/s3/embedded-s3-server.js';
import { S3ObjectStore } from '../../src/storage/s3/s3-object-store.js';

/*
 * Each ensureEmbeddedS3 call below stands for one Sluice process on the same data dir. They share
 * this test's process (the tests run TypeScript, which a spawned plain `node` cannot import), but
 * they meet only through the port file and the loopback port, exactly as separate processes do.
 */

let dataDir: string;
let options: EmbeddedS3Options;
const handles: EmbeddedS3[] = [];
const stores: S3ObjectStore[] = [];
const strangers: http.Server[] = [];

beforeEach(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-'));
  options = { dataDir, port: 0, bucket: 'sluice', region: 'us-east-1', accessKeyId: 'test-key', secretAccessKey: 'test-secret' };
});

afterEach(async () => {
  for (const store of stores.splice(0)) store.destroy();
  await Promise.all(handles.splice(0).map((h) => h.close()));
  await Promise.all(strangers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
  fs.rmSync(dataDir, { recursive: true, force: true });
});

async function startProcess(): Promise<EmbeddedS3> {
  const handle = await ensureEmbeddedS3(options);
  handles.push(handle);
  return handle;
}

function storeFor(handle: EmbeddedS3): S3ObjectStore {
  const store = new S3ObjectStore({ endpoint: handle.endpoint, region: 'us-east-1', bucket: 'sluice', forcePathStyle: true, accessKeyId: 'test-key', secretAccessKey: 'test-secret' });
  stores.push(store);
  return store;
}

function recordedPort(): number {
  return Number(fs.readFileSync(path.join(dataDir, 's3', 'port'), 'utf8'));
}

describe('ensureEmbeddedS3', () => {
  it('two processes starting at once on one data dir share one server', async () => {
    const [a, b] = await Promise.all([startProcess(), startProcess()]);

    expect(a.endpoint).toBe(b.endpoint);
    expect([a.hosting, b.hosting].sort()).toEqual([false, true]);
    expect(a.endpoint).toBe(`http://127.0.0.1:${recordedPort()}`);

    await storeFor(a).putBytes('from-a.csv', 'a');
    expect((await storeFor(b).getBytes('from-a.csv')).toString()).toBe('a');
  });

  it('when the host stops, the next failed call of another process takes over the same port and keeps the objects', async () => {
    const host = await startProcess();
    const other = await startProcess();
    expect(host.hosting).toBe(true);
    expect(other.hosting).toBe(false);
    const port = recordedPort();
    let reconnects = 0;
    const store = withFailover(storeFor(other), async () => {
      reconnects++;
      await other.reconnect();
    });
    await store.putBytes('before.csv', 'written before the host left');

    await host.close();

    expect((await store.getBytes('before.csv')).toString()).toBe('written before the host left');
    expect(reconnects).toBe(1);
    expect(other.hosting).toBe(true);
    expect(other.endpoint).toBe(`http://127.0.0.1:${port}`);
    expect(recordedPort()).toBe(port);
  });

  it('an upload after the host left fails over before the body is consumed', async () => {
    const host = await startProcess();
    const other = await startProcess();
    const store = withFailover(storeFor(other), () => other.reconnect());
    await host.close();

    const body = Readable.from([Buffer.alloc(6 * 1024 * 1024, 7)]);
    expect(await store.putStream('after.bin', body)).toEqual({ key: 'after.bin', size: 6 * 1024 * 1024 });
    expect(other.hosting).toBe(true);
  });

  it('a restart on the data dir keeps the port, so a URL presigned before still works', async () => {
    const first = await startProcess();
    await storeFor(first).putBytes('results/all.csv', 'kept');
    const { url } = await storeFor(first).presignGet('results/all.csv', { expiresInSeconds: 600 });
    await first.close();

    const second = await startProcess();

    expect(second.hosting).toBe(true);
    expect(second.endpoint).toBe(first.endpoint);
    const res = await fetch(url);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('kept');
  });

  it('a configured port is used the first time only; later the recorded one wins', async () => {
    const wanted = await freePort();
    const first = await ensureEmbeddedS3({ ...options, port: wanted });
    handles.push(first);
    expect(first.endpoint).toBe(`http://127.0.0.1:${wanted}`);
    await first.close();

    const second = await ensureEmbeddedS3({ ...options, port: await freePort() });
    handles.push(second);
    expect(second.endpoint).toBe(`http://127.0.0.1:${wanted}`);
  });

  it('another program on the recorded port is reported, not mistaken for our server', async () => {
    const stranger = http.createServer((_req, res) => res.end('hello'));
    strangers.push(stranger);
    await new Promise<void>((resolve) => stranger.listen(0, '127.0.0.1', resolve));
    fs.mkdirSync(path.join(dataDir, 's3'), { recursive: true });
    fs.writeFileSync(path.join(dataDir, 's3', 'port'), String((stranger.address() as AddressInfo).port));

    await expect(() => ensureEmbeddedS3(options)).rejects.toMatchObject({ code: ERROR_CODES.storageUnavailable, retryable: true });
  });

  it('the server of another data dir is not taken for this one', async () => {
    const elsewhere = await ensureEmbeddedS3({ ...options, dataDir: path.join(dataDir, 'other') });
    handles.push(elsewhere);
    fs.mkdirSync(path.join(dataDir, 's3'), { recursive: true });
    fs.writeFileSync(path.join(dataDir, 's3', 'port'), elsewhere.endpoint.split(':').pop() ?? '');

    await expect(() => ensureEmbeddedS3(options)).rejects.toMatchObject({ code: ERROR_CODES.storageUnavailable });
  });
});

async function freePort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
