import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ListObjectsCommand, ListObjectsV2Command, PutObjectCommand, S3Client, S3ServiceException, type ListObjectsV2CommandInput } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureEmbeddedS3, type EmbeddedS3 } from '../../src/storage/s3/embedded-s3-server.js';

/*
 * What `aws s3api list-objects(-v2)` sees on the embedded store, through the AWS SDK v3 signed with
 * the data dir's key pair. s3rver alone listed only `inputs/` with `--delimiter /`: a prefix whose
 * keys all sit two levels down (`results/<job>/out.csv`) never showed, and pages followed readdir
 * order, not key order.
 */

const BUCKET = 'sluice';
const KEYS = [
  'inputs/job-1.csv',
  'inputs/job-2.csv',
  'parts/job-1/00001.csv',
  'parts/job-1/00002.csv',
  'results/job-1/out.csv',
  'results/job-2/out.csv',
  'chunks/job-1/c-0001.csv',
  'chunks/job-1/c-0002.csv',
  'readme.txt',
  'zeta',
];
/** The delimited listing AWS S3 gives for KEYS: common prefixes and keys in one ascending order. */
const TOP_LEVEL = ['chunks/', 'inputs/', 'parts/', 'readme.txt', 'results/', 'zeta'];

let dataDir: string;
let server: EmbeddedS3;
let client: S3Client;

beforeAll(async () => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-list-'));
  server = await ensureEmbeddedS3({ dataDir, port: 0, bucket: BUCKET, region: 'us-east-1', accessKeyId: 'test-key', secretAccessKey: 'test-secret' });
  client = new S3Client({ endpoint: server.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'test-key', secretAccessKey: 'test-secret' } });
  for (const key of KEYS) await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: `body of ${key}` }));
});

afterAll(async () => {
  client.destroy();
  await server.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** A page's entries in listing order: keys and common prefixes merged. */
function entriesOf(page: { Contents?: { Key?: string }[]; CommonPrefixes?: { Prefix?: string }[] }): string[] {
  const entries = [...(page.Contents ?? []).map((c) => c.Key!), ...(page.CommonPrefixes ?? []).map((p) => p.Prefix!)];
  return entries.sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

async function allPagesV2(input: Omit<ListObjectsV2CommandInput, 'Bucket'>): Promise<{ pages: string[][]; truncations: boolean[] }> {
  const pages: string[][] = [];
  const truncations: boolean[] = [];
  let token: string | undefined;
  do {
    const page = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, ...input, ContinuationToken: token }));
    const entries = entriesOf(page);
    expect(page.KeyCount).toBe(entries.length);
    pages.push(entries);
    truncations.push(page.IsTruncated ?? false);
    token = page.NextContinuationToken;
    expect(pages.length).toBeLessThan(50);
  } while (token);
  return { pages, truncations };
}

describe('ListObjectsV2 with a delimiter on the embedded store', () => {
  it('lists every top-level prefix, results/ included, with the top-level keys', async () => {
    const page = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Delimiter: '/' }));
    expect(page.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['chunks/', 'inputs/', 'parts/', 'results/']);
    expect(page.Contents?.map((c) => c.Key)).toEqual(['readme.txt', 'zeta']);
    expect(page).toMatchObject({ KeyCount: 6, IsTruncated: false, Delimiter: '/', Prefix: '' });
    expect(page.Contents![0]).toMatchObject({ Size: Buffer.byteLength('body of readme.txt'), StorageClass: 'STANDARD' });
    expect(page.Contents![0]!.ETag).toMatch(/^"[0-9a-f]{32}"$/);
  });

  it('groups one level below a prefix', async () => {
    const page = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Delimiter: '/', Prefix: 'results/' }));
    expect(page.CommonPrefixes?.map((p) => p.Prefix)).toEqual(['results/job-1/', 'results/job-2/']);
    expect(page.Contents ?? []).toEqual([]);
    const inner = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Delimiter: '/', Prefix: 'results/job-2/' }));
    expect(inner.Contents?.map((c) => c.Key)).toEqual(['results/job-2/out.csv']);
  });

  it.each([1, 2, 4])('pages by MaxKeys %i with keys and prefixes counted together, without loss or repeats', async (maxKeys) => {
    const { pages, truncations } = await allPagesV2({ Delimiter: '/', MaxKeys: maxKeys });
    expect(pages.flat()).toEqual(TOP_LEVEL);
    for (const page of pages) expect(page.length).toBeLessThanOrEqual(maxKeys);
    expect(truncations).toEqual(pages.map((_, i) => i < pages.length - 1));
  });

  it('starts after StartAfter, skipping the prefix it points into', async () => {
    const page = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Delimiter: '/', StartAfter: 'inputs/job-1.csv' }));
    expect(entriesOf(page)).toEqual(['parts/', 'readme.txt', 'results/', 'zeta']);
    expect(page.StartAfter).toBe('inputs/job-1.csv');
  });

  it('without a delimiter, pages through every key in key order', async () => {
    const { pages } = await allPagesV2({ MaxKeys: 3 });
    expect(pages.flat()).toEqual([...KEYS].sort());
  });

  it('refuses a continuation token it did not make', async () => {
    const error = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Delimiter: '/', ContinuationToken: 'bm90IG91cnM' })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(S3ServiceException);
    expect((error as S3ServiceException).$metadata.httpStatusCode).toBe(400);
    expect((error as S3ServiceException).name).toBe('InvalidArgument');
  });
});

describe('ListObjects (v1) with a delimiter on the embedded store', () => {
  it('pages by NextMarker over the same entries as AWS, results/ included', async () => {
    const pages: string[][] = [];
    let marker: string | undefined;
    for (;;) {
      const page = await client.send(new ListObjectsCommand({ Bucket: BUCKET, Delimiter: '/', MaxKeys: 2, Marker: marker }));
      pages.push(entriesOf(page));
      if (!page.IsTruncated) break;
      expect(page.NextMarker).toBe(pages.at(-1)!.at(-1));
      marker = page.NextMarker;
      expect(pages.length).toBeLessThan(50);
    }
    expect(pages).toEqual([
      ['chunks/', 'inputs/'],
      ['parts/', 'readme.txt'],
      ['results/', 'zeta'],
    ]);
  });
});
