import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ensureEmbeddedS3, type EmbeddedS3 } from '../../src/storage/s3/embedded-s3-server.js';
import { MemoryObjectStore } from '../../src/storage/s3/memory-object-store.js';
import type { ObjectStore } from '../../src/storage/s3/object-store.js';
import { S3ObjectStore } from '../../src/storage/s3/s3-object-store.js';

const credentials = { accessKeyId: 'test-key', secretAccessKey: 'test-secret' };

let dataDir: string;
let embedded: EmbeddedS3;
let s3: S3ObjectStore;

beforeEach(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-prefix-'));
  embedded = await ensureEmbeddedS3({ dataDir, port: 0, bucket: 'sluice', region: 'us-east-1', ...credentials });
  s3 = new S3ObjectStore({ endpoint: embedded.endpoint, region: 'us-east-1', bucket: 'sluice', forcePathStyle: true, ...credentials });
});

afterEach(async () => {
  s3.destroy();
  await embedded.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

const STORES: { name: string; make: () => ObjectStore }[] = [
  { name: 'S3ObjectStore', make: () => s3 },
  { name: 'MemoryObjectStore', make: () => new MemoryObjectStore() },
];

describe.each(STORES)('deletePrefix on $name', ({ make }) => {
  it('deletes every object under the prefix and nothing beside it, and a second call finds nothing', async () => {
    const store = make();
    const ours = ['jobs/job_1/chunks/00000.jsonl', 'jobs/job_1/parts/00000.all.csv', 'jobs/job_1/parts/00001.found.csv'];
    const theirs = ['jobs/job_10/chunks/00000.jsonl', 'jobs/job_1.csv', 'results/job_1/all.csv'];
    for (const key of [...ours, ...theirs]) await store.putBytes(key, key);

    expect(await store.deletePrefix('jobs/job_1/')).toBe(3);
    for (const key of ours) expect(await store.head(key), key).toBeUndefined();
    for (const key of theirs) expect(await store.head(key), key).toEqual({ size: key.length });
    expect(await store.deletePrefix('jobs/job_1/')).toBe(0);
  });

  it('deletes more objects than one listing page or one DeleteObjects request holds (1,000)', async () => {
    const store = make();
    const keys = Array.from({ length: 1_003 }, (_, i) => `results/job_big/${String(i).padStart(5, '0')}.csv`);
    for (let i = 0; i < keys.length; i += 50) await Promise.all(keys.slice(i, i + 50).map((key) => store.putBytes(key, 'x')));

    expect(await store.deletePrefix('results/job_big/')).toBe(1_003);
    expect(await store.head(keys[0]!)).toBeUndefined();
    expect(await store.head(keys[1_002]!)).toBeUndefined();
    expect(await store.deletePrefix('results/job_big/')).toBe(0);
  }, 60_000);
});
