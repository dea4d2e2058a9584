import { GetObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { afterAll, describe, expect, it } from 'vitest';
import { accessDeniedXml, checkPresigned, hasQueryAuth, type PresignCheckInput } from './presign-check.js';

const ORIGIN = 'http://127.0.0.1:9000';
const HOST = '127.0.0.1:9000';
const KEY_ID = 'test-key';
const SECRET = 'test-secret';
const SIGNED_AT = Date.UTC(2026, 0, 1, 12, 0, 0);

// Presigning is local computation: no server listens on ORIGIN.
const client = new S3Client({
  endpoint: ORIGIN,
  region: 'eu-west-1',
  forcePathStyle: true,
  credentials: { accessKeyId: KEY_ID, secretAccessKey: SECRET },
});
afterAll(() => client.destroy());

async function presign(key: string, expiresIn = 60, disposition?: string): Promise<string> {
  const command = new GetObjectCommand({ Bucket: 'sluice', Key: key, ResponseContentDisposition: disposition });
  const url = await getSignedUrl(client, command, { expiresIn, signingDate: new Date(SIGNED_AT) });
  return url.slice(ORIGIN.length);
}

function input(url: string, overrides: Partial<PresignCheckInput> = {}): PresignCheckInput {
  return { method: 'GET', url, headers: { host: HOST }, now: SIGNED_AT + 1_000, accessKeyId: KEY_ID, secretAccessKey: SECRET, ...overrides };
}

const plain = await presign('jobs/42/result-all.csv');
const odd = await presign("inputs/a b+c(1)*!'~ü€.csv");
const withName = await presign('r.csv', 60, 'attachment; filename="résultats.csv"');

describe('checkPresigned', () => {
  const cases: { name: string; input: PresignCheckInput; reason: string | undefined }[] = [
    { name: 'an untouched URL from the AWS presigner', input: input(plain), reason: undefined },
    { name: 'a key with spaces, reserved and non-ASCII characters', input: input(odd), reason: undefined },
    { name: 'a URL carrying response-content-disposition', input: input(withName), reason: undefined },
    { name: 'the last second of its lifetime', input: input(plain, { now: SIGNED_AT + 60_000 }), reason: undefined },
    { name: 'one millisecond after it expired', input: input(plain, { now: SIGNED_AT + 60_001 }), reason: 'expired' },
    { name: 'a date more than 15 minutes ahead of the clock', input: input(plain, { now: SIGNED_AT - 16 * 60_000 }), reason: 'not_yet_valid' },
    { name: 'another key in the path', input: input(plain.replace('result-all', 'result-found')), reason: 'bad_signature' },
    { name: 'one changed signature digit', input: input(flipLastSignatureDigit(plain)), reason: 'bad_signature' },
    { name: 'a longer X-Amz-Expires', input: input(plain.replace('X-Amz-Expires=60', 'X-Amz-Expires=600')), reason: 'bad_signature' },
    { name: 'an added query parameter', input: input(`${plain}&versionId=1`), reason: 'bad_signature' },
    { name: 'another download name', input: input(withName.replace('r%C3%A9sultats', 'other')), reason: 'bad_signature' },
    { name: 'a different secret on the server', input: input(plain, { secretAccessKey: 'other-secret' }), reason: 'bad_signature' },
    { name: 'an access key the server does not know', input: input(plain, { accessKeyId: 'other-key' }), reason: 'bad_signature' },
    { name: 'another Host header', input: input(plain, { headers: { host: '127.0.0.1:9001' } }), reason: 'bad_signature' },
    { name: 'a PUT with a URL signed for GET', input: input(plain, { method: 'PUT' }), reason: 'bad_signature' },
    { name: 'no X-Amz-Signature', input: input(plain.replace(/&X-Amz-Signature=[0-9a-f]+/, '')), reason: 'malformed' },
    { name: 'X-Amz-Date given twice', input: input(`${plain}&X-Amz-Date=20260101T120000Z`), reason: 'malformed' },
    { name: 'broken percent-encoding', input: input(`${plain}&x=%E0%A4%A`), reason: 'malformed' },
    { name: 'an impossible calendar date', input: input(plain.replace(/X-Amz-Date=\d{8}/, 'X-Amz-Date=20260231')), reason: 'malformed' },
  ];

  it.each(cases)('$name: $reason', ({ input, reason }) => {
    const verdict = checkPresigned(input);
    expect(verdict.ok ? undefined : verdict.reason).toBe(reason);
  });

  it('says "Request has expired" the way S3 does', () => {
    expect(checkPresigned(input(plain, { now: SIGNED_AT + 61_000 }))).toMatchObject({ message: 'Request has expired' });
  });
});

describe('hasQueryAuth', () => {
  it.each([
    { url: '/sluice/a.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=ab', expected: true },
    { url: '/sluice/a.csv?x-amz-signature=ab', expected: true },
    { url: '/sluice/a.csv?X-Amz-Credential=k', expected: true },
    { url: '/sluice/a.csv?x-id=GetObject', expected: false },
    { url: '/sluice/X-Amz-Signature=ab', expected: false },
    { url: '/sluice?uploads', expected: false },
  ])('$url: $expected', ({ url, expected }) => {
    expect(hasQueryAuth(url)).toBe(expected);
  });
});

describe('accessDeniedXml', () => {
  it('escapes the message so the body stays well-formed XML', () => {
    expect(accessDeniedXml('a <b> & "c"')).toContain('<Code>AccessDenied</Code><Message>a &#60;b&#62; &#38; &#34;c&#34;</Message>');
  });
});

function flipLastSignatureDigit(url: string): string {
  return url.replace(/(X-Amz-Signature=[0-9a-f]+)([0-9a-f])/, (_, head: string, last: string) => head + (last === '0' ? '1' : '0'));
}
