import { createHash } from 'node:crypto';
import http, { type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateBucketCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { SignatureV4 } from '@smithy/signature-v4';
import { describe, expect, it } from 'vitest';
import { checkHeaderSigned, type HeaderAuthInput } from './header-auth-check.js';
import { parseLongDate } from './sigv4.js';
import { NodeSha256 } from '../../../test/support/node-sha256.js';

const KEY_ID = 'test-key';
const SECRET = 'test-secret';
const SIGNED_AT = Date.UTC(2026, 0, 1, 12, 0, 0);
const HOST = '127.0.0.1:9000';
const EMPTY_SHA256 = createHash('sha256').digest('hex');
const MiB = 1024 * 1024;

interface Captured {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

/** What the real S3Client puts on the wire, seen by a server that answers every request with 200. */
async function captureSdkRequests(calls: ((client: S3Client) => Promise<unknown>)[]): Promise<Captured[]> {
  const seen: Captured[] = [];
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    req.resume().on('end', () => res.writeHead(200, { 'content-type': 'application/xml' }).end('<Ok/>'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const client = new S3Client({
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: KEY_ID, secretAccessKey: SECRET },
    // As S3ObjectStore configures it.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 1,
  });
  try {
    // The answers do not parse as every operation's output; only the requests matter here.
    for (const call of calls) await call(client).catch(() => undefined);
  } finally {
    client.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
  return seen;
}

const ODD_KEYS = ["inputs/a b+c(1)*!'~ü€.csv", 'emoji/🦆 ü.csv', 'dir//./../k', 'q?a=b&c#d%25.csv', 'semi;colon,comma=eq@at$.csv'];

const sdk = await captureSdkRequests([
  (c) => c.send(new PutObjectCommand({ Bucket: 'sluice', Key: 'parts/0.csv', Body: Buffer.from('héllo\n'), ContentType: 'text/csv' })),
  (c) => c.send(new GetObjectCommand({ Bucket: 'sluice', Key: 'inputs/big.bin', Range: 'bytes=5242873-5242889' })),
  (c) => c.send(new CreateMultipartUploadCommand({ Bucket: 'sluice', Key: 'inputs/big.bin', ContentType: 'application/octet-stream' })),
  // A part as large as lib-storage's: the SDK adds `Expect: 100-continue`, which it does not sign.
  (c) => c.send(new UploadPartCommand({ Bucket: 'sluice', Key: 'inputs/big.bin', UploadId: 'up/+=id', PartNumber: 1, Body: Buffer.alloc(5 * MiB, 1) })),
  (c) =>
    c.send(
      new CompleteMultipartUploadCommand({
        Bucket: 'sluice',
        Key: 'inputs/big.bin',
        UploadId: 'up/+=id',
        MultipartUpload: { Parts: [{ PartNumber: 1, ETag: '"abc"' }] },
      }),
    ),
  (c) => c.send(new AbortMultipartUploadCommand({ Bucket: 'sluice', Key: 'inputs/big.bin', UploadId: 'up/+=id' })),
  (c) => c.send(new HeadObjectCommand({ Bucket: 'sluice', Key: 'parts/0.csv' })),
  (c) => c.send(new DeleteObjectCommand({ Bucket: 'sluice', Key: 'parts/0.csv' })),
  (c) => c.send(new HeadBucketCommand({ Bucket: 'sluice' })),
  (c) => c.send(new CreateBucketCommand({ Bucket: 'other-bucket', CreateBucketConfiguration: { LocationConstraint: 'eu-west-1' } })),
  ...ODD_KEYS.map((key) => (c: S3Client) => c.send(new GetObjectCommand({ Bucket: 'sluice', Key: key }))),
]);
const [put, rangedGet, createMultipart, uploadPart, completeMultipart, abortMultipart, head, del, headBucket, createBucket, ...oddGets] = sdk;

/** The check as the front calls it, a second after the request was signed. */
function input(request: Captured | undefined, overrides: Partial<HeaderAuthInput> = {}): HeaderAuthInput {
  if (!request) throw new Error('request not captured');
  const signedAt = parseLongDate(String(request.headers['x-amz-date'])) ?? NaN;
  return { ...request, now: signedAt + 1_000, accessKeyId: KEY_ID, secretAccessKey: SECRET, ...overrides };
}

function edit(request: Captured | undefined, change: (r: Captured) => Partial<Captured>): Captured {
  if (!request) throw new Error('request not captured');
  return { ...request, ...change(request) };
}

function withHeader(request: Captured | undefined, name: string, value: string | undefined): Captured {
  return edit(request, ({ headers }) => {
    const copy = { ...headers };
    if (value === undefined) delete copy[name];
    else copy[name] = value;
    return { headers: copy };
  });
}

/** Rewrites one `Name=value` field of the Authorization header. */
function withAuthField(request: Captured | undefined, field: string, value: string): Captured {
  return edit(request, ({ headers }) => ({
    headers: { ...headers, authorization: String(headers.authorization).replace(new RegExp(`${field}=[^,]*`), `${field}=${value}`) },
  }));
}

function flipLastSignatureDigit(request: Captured | undefined): Captured {
  return edit(request, ({ headers }) => ({
    headers: { ...headers, authorization: String(headers.authorization).replace(/([0-9a-f])$/, (d) => (d === '0' ? '1' : '0')) },
  }));
}


const signer = new SignatureV4({
  credentials: { accessKeyId: KEY_ID, secretAccessKey: SECRET },
  region: 'us-east-1',
  service: 's3',
  sha256: NodeSha256,
  uriEscapePath: false,
});

/** Signs with the SDK's own signer at SIGNED_AT; `query` goes on the wire the way the SDK writes it. */
async function signed(method: string, path: string, query: Record<string, string | string[]>, headers: Record<string, string>): Promise<Captured> {
  const request = await signer.sign(
    { method, protocol: 'http:', hostname: '127.0.0.1', port: 9000, path, query, headers: { host: HOST, ...headers } },
    { signingDate: new Date(SIGNED_AT) },
  );
  const escape = (s: string): string => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  const pairs = Object.entries(query).flatMap(([name, values]) => [values].flat().map((value) => `${escape(name)}=${escape(value)}`));
  const lowered = Object.fromEntries(Object.entries(request.headers).map(([name, value]) => [name.toLowerCase(), value]));
  return { method, url: pairs.length > 0 ? `${path}?${pairs.join('&')}` : path, headers: lowered };
}

const unsigned = await signed('PUT', '/sluice/a.csv', { 'x-id': 'PutObject' }, { 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' });
const streaming = await signed('PUT', '/sluice/a.csv', {}, {
  'x-amz-content-sha256': 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD',
  'x-amz-decoded-content-length': '5',
  'content-encoding': 'aws-chunked',
});
const repeated = await signed('GET', '/sluice', { 'list-type': '2', prefix: 'a b+c/ü', tag: ['b', 'a', 'a-b'] }, { 'x-amz-content-sha256': EMPTY_SHA256 });
const fixedGet = await signed('GET', '/sluice/r.csv', {}, { 'x-amz-content-sha256': EMPTY_SHA256, range: 'bytes=0-9' });
const atSigning = { now: SIGNED_AT };

describe('the requests the AWS SDK sends', () => {
  it('encode keys for the path once, RFC 3986 style, keeping `/` and leaving `.` and `..` alone', () => {
    expect(oddGets.map((r) => r.url.split('?')[0])).toEqual([
      '/sluice/inputs/a%20b%2Bc%281%29%2A%21%27~%C3%BC%E2%82%AC.csv',
      '/sluice/emoji/%F0%9F%A6%86%20%C3%BC.csv',
      '/sluice/dir//./../k',
      '/sluice/q%3Fa%3Db%26c%23d%2525.csv',
      '/sluice/semi%3Bcolon%2Ccomma%3Deq%40at%24.csv',
    ]);
    expect(createMultipart?.url).toBe('/sluice/inputs/big.bin?uploads=');
    expect(uploadPart?.url).toBe('/sluice/inputs/big.bin?partNumber=1&uploadId=up%2F%2B%3Did&x-id=UploadPart');
    expect(uploadPart?.headers.expect).toBe('100-continue');
    expect(String(uploadPart?.headers.authorization)).not.toContain('expect');
  });
});

describe('checkHeaderSigned', () => {
  const cases: { name: string; input: HeaderAuthInput; code: string | undefined }[] = [
    { name: 'PutObject', input: input(put), code: undefined },
    { name: 'GetObject with Range', input: input(rangedGet), code: undefined },
    { name: 'CreateMultipartUpload (`?uploads=`)', input: input(createMultipart), code: undefined },
    { name: 'UploadPart of 5 MiB with Expect: 100-continue', input: input(uploadPart), code: undefined },
    { name: 'CompleteMultipartUpload', input: input(completeMultipart), code: undefined },
    { name: 'AbortMultipartUpload', input: input(abortMultipart), code: undefined },
    { name: 'HeadObject', input: input(head), code: undefined },
    { name: 'DeleteObject', input: input(del), code: undefined },
    { name: 'HeadBucket', input: input(headBucket), code: undefined },
    { name: 'CreateBucket with a LocationConstraint', input: input(createBucket), code: undefined },
    ...oddGets.map((request, i) => ({ name: `GetObject of ${JSON.stringify(ODD_KEYS[i])}`, input: input(request), code: undefined })),
    { name: 'UNSIGNED-PAYLOAD (@smithy/signature-v4)', input: input(unsigned, atSigning), code: undefined },
    { name: 'STREAMING-AWS4-HMAC-SHA256-PAYLOAD (@smithy/signature-v4)', input: input(streaming, atSigning), code: undefined },
    { name: 'a repeated query parameter and a value with space, plus and ü', input: input(repeated, atSigning), code: undefined },
    { name: 'a clock 14 minutes behind', input: input(fixedGet, { now: SIGNED_AT - 14 * 60_000 }), code: undefined },
    { name: 'a clock 15 minutes ahead', input: input(fixedGet, { now: SIGNED_AT + 15 * 60_000 }), code: undefined },

    { name: 'another key in the path', input: input(edit(rangedGet, (r) => ({ url: r.url.replace('big.bin', 'big.bim') }))), code: 'SignatureDoesNotMatch' },
    { name: 'another bucket in the path', input: input(edit(head, (r) => ({ url: r.url.replace('/sluice/', '/other/') }))), code: 'SignatureDoesNotMatch' },
    { name: 'the key double-encoded', input: input(edit(oddGets[0], (r) => ({ url: r.url.replace('%20', '%2520') }))), code: 'SignatureDoesNotMatch' },
    { name: 'the key with `+` for its space', input: input(edit(oddGets[0], (r) => ({ url: r.url.replace('%20', '+') }))), code: 'SignatureDoesNotMatch' },
    { name: 'the `..` of a key resolved', input: input(edit(oddGets[2], (r) => ({ url: r.url.replace('dir//./../k', 'k') }))), code: 'SignatureDoesNotMatch' },
    { name: 'another upload id', input: input(edit(uploadPart, (r) => ({ url: r.url.replace('up%2F%2B%3Did', 'other') }))), code: 'SignatureDoesNotMatch' },
    { name: 'another part number', input: input(edit(uploadPart, (r) => ({ url: r.url.replace('partNumber=1', 'partNumber=2') }))), code: 'SignatureDoesNotMatch' },
    { name: 'an added query parameter', input: input(edit(del, (r) => ({ url: `${r.url}&versionId=1` }))), code: 'SignatureDoesNotMatch' },
    { name: 'a query parameter taken away', input: input(edit(del, (r) => ({ url: r.url.split('?')[0] ?? '' }))), code: 'SignatureDoesNotMatch' },
    { name: 'a repeated value taken away', input: input(edit(repeated, (r) => ({ url: r.url.replace('&tag=a-b', '') })), atSigning), code: 'SignatureDoesNotMatch' },
    { name: 'GET turned into DELETE', input: input(edit(head, () => ({ method: 'DELETE' }))), code: 'SignatureDoesNotMatch' },
    { name: 'another Range', input: input(withHeader(rangedGet, 'range', 'bytes=0-')), code: 'SignatureDoesNotMatch' },
    { name: 'another content-type', input: input(withHeader(put, 'content-type', 'text/html')), code: 'SignatureDoesNotMatch' },
    { name: 'another x-amz-content-sha256', input: input(withHeader(put, 'x-amz-content-sha256', 'UNSIGNED-PAYLOAD')), code: 'SignatureDoesNotMatch' },
    { name: 'another Host', input: input(withHeader(head, 'host', 'sluice.localhost')), code: 'SignatureDoesNotMatch' },
    { name: 'an x-amz-date a second later', input: input(withHeader(fixedGet, 'x-amz-date', '20260101T120001Z'), atSigning), code: 'SignatureDoesNotMatch' },
    { name: 'a signed header dropped from SignedHeaders', input: input(withAuthField(fixedGet, 'SignedHeaders', 'host;x-amz-content-sha256;x-amz-date'), atSigning), code: 'SignatureDoesNotMatch' },
    { name: 'one changed signature digit', input: input(flipLastSignatureDigit(put)), code: 'SignatureDoesNotMatch' },
    { name: 'a made-up signature', input: input(withAuthField(put, 'Signature', '0'.repeat(64))), code: 'SignatureDoesNotMatch' },
    { name: 'another secret on the server', input: input(put, { secretAccessKey: 'other-secret' }), code: 'SignatureDoesNotMatch' },
    { name: 'another region in the scope', input: input(withAuthField(fixedGet, 'Credential', `${KEY_ID}/20260101/eu-west-1/s3/aws4_request`), atSigning), code: 'SignatureDoesNotMatch' },

    { name: 'an access key the server does not know', input: input(put, { accessKeyId: 'other-key' }), code: 'InvalidAccessKeyId' },
    { name: 'a date 16 minutes old', input: input(fixedGet, { now: SIGNED_AT + 16 * 60_000 }), code: 'RequestTimeTooSkewed' },
    { name: 'a date 16 minutes ahead', input: input(fixedGet, { now: SIGNED_AT - 16 * 60_000 }), code: 'RequestTimeTooSkewed' },
    { name: 'a credential date of another day', input: input(withAuthField(fixedGet, 'Credential', `${KEY_ID}/20260102/us-east-1/s3/aws4_request`), atSigning), code: 'AuthorizationHeaderMalformed' },
    { name: 'a scope for another service', input: input(withAuthField(fixedGet, 'Credential', `${KEY_ID}/20260101/us-east-1/ec2/aws4_request`), atSigning), code: 'AuthorizationHeaderMalformed' },
    { name: 'no Signature field', input: input(edit(put, (r) => ({ headers: { ...r.headers, authorization: String(r.headers.authorization).replace(/, Signature=.*$/, '') } }))), code: 'AuthorizationHeaderMalformed' },
    { name: 'SignedHeaders given twice', input: input(edit(put, (r) => ({ headers: { ...r.headers, authorization: `${String(r.headers.authorization)}, SignedHeaders=host` } }))), code: 'AuthorizationHeaderMalformed' },
    { name: 'SignedHeaders out of order', input: input(withAuthField(fixedGet, 'SignedHeaders', 'range;host;x-amz-content-sha256;x-amz-date'), atSigning), code: 'AuthorizationHeaderMalformed' },
    { name: 'an uppercase signature', input: input(edit(put, (r) => ({ headers: { ...r.headers, authorization: String(r.headers.authorization).replace(/Signature=(\w+)$/, (_, s: string) => `Signature=${s.toUpperCase()}`) } }))), code: 'AuthorizationHeaderMalformed' },

    { name: 'no Authorization header', input: input(withHeader(put, 'authorization', undefined)), code: 'AccessDenied' },
    { name: 'no x-amz-date', input: input(withHeader(put, 'x-amz-date', undefined)), code: 'AccessDenied' },
    { name: 'an x-amz-date at hour 25', input: input(withHeader(fixedGet, 'x-amz-date', '20260101T250000Z'), atSigning), code: 'AccessDenied' },
    { name: 'a signed header missing from the request', input: input(withHeader(rangedGet, 'range', undefined)), code: 'AccessDenied' },
    { name: 'an unsigned x-amz-* header added', input: input(withHeader(put, 'x-amz-copy-source', '/sluice/secret.csv')), code: 'AccessDenied' },
    { name: 'host left out of SignedHeaders', input: input(withAuthField(fixedGet, 'SignedHeaders', 'range;x-amz-content-sha256;x-amz-date'), atSigning), code: 'AccessDenied' },
    { name: '`constructor` named as a signed header', input: input(withAuthField(fixedGet, 'SignedHeaders', 'constructor;host;range;x-amz-content-sha256;x-amz-date'), atSigning), code: 'AccessDenied' },
    { name: '`__proto__` named as a signed header', input: input(withAuthField(fixedGet, 'SignedHeaders', '__proto__;host;range;x-amz-content-sha256;x-amz-date'), atSigning), code: 'AccessDenied' },

    { name: 'no x-amz-content-sha256', input: input(withHeader(put, 'x-amz-content-sha256', undefined)), code: 'InvalidRequest' },
    { name: 'an x-amz-content-sha256 that is no digest', input: input(withHeader(put, 'x-amz-content-sha256', 'whatever')), code: 'InvalidRequest' },
    { name: 'a V2 signature with s3rver’s built-in key', input: input(withHeader(put, 'authorization', 'AWS S3RVER:c2lnbmF0dXJl')), code: 'InvalidRequest' },
    { name: 'a header signature plus presigned-URL parameters', input: input(edit(put, (r) => ({ url: `${r.url}&X-Amz-Signature=00` }))), code: 'InvalidRequest' },
    { name: 'a header signature plus V2 query parameters', input: input(edit(put, (r) => ({ url: `${r.url}&AWSAccessKeyId=S3RVER` }))), code: 'InvalidRequest' },
    { name: 'broken percent-encoding in the query', input: input(edit(put, (r) => ({ url: `${r.url}&x=%E0%A4%A` }))), code: 'InvalidRequest' },
    { name: 'an absolute-form request target', input: input(edit(head, (r) => ({ url: `http://${HOST}${r.url}` }))), code: 'InvalidRequest' },
  ];

  it.each(cases)('$name: $code', ({ input, code }) => {
    const verdict = checkHeaderSigned(input);
    expect(verdict.ok ? undefined : verdict.code).toBe(code);
  });

  it('captured every request it meant to', () => {
    expect(sdk).toHaveLength(10 + ODD_KEYS.length);
  });
});
