import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/**
 * SigV4 query-string (presigned URL) verification for the embedded server. s3rver accepts any V4
 * signature and never checks it, so without this an expired or edited download link would still
 * work locally and then fail in production.
 */
export interface PresignCheckInput {
  method: string;
  /** The request target exactly as received (`req.url`): raw path plus query. */
  url: string;
  headers: IncomingHttpHeaders;
  now: number;
  accessKeyId: string;
  secretAccessKey: string;
}

export type PresignVerdict =
  | { ok: true }
  | { ok: false; reason: 'expired' | 'not_yet_valid' | 'bad_signature' | 'malformed'; message: string };

const AUTH_PARAMS = ['X-Amz-Algorithm', 'X-Amz-Credential', 'X-Amz-Date', 'X-Amz-Expires', 'X-Amz-SignedHeaders', 'X-Amz-Signature'] as const;
const MAX_EXPIRES_SECONDS = 604_800;
/** AWS tolerates this much clock skew for a date in the future. */
const MAX_SKEW_MS = 15 * 60_000;

export function hasQueryAuth(url: string): boolean {
  const query = url.split('?', 2)[1] ?? '';
  return /(^|&)X-Amz-(Signature|Algorithm|Credential)=/i.test(query);
}

export function checkPresigned(input: PresignCheckInput): PresignVerdict {
  const [path = '/', rawQuery = ''] = splitOnce(input.url, '?');
  const params = parseQuery(rawQuery);
  if (params === undefined) return malformed('the query string is not valid percent-encoding');

  const auth = new Map<string, string>();
  for (const name of AUTH_PARAMS) {
    const values = params.get(name);
    if (values?.length !== 1 || values[0] === undefined) return malformed(`${name} must appear exactly once`);
    auth.set(name, values[0]);
  }
  const get = (name: (typeof AUTH_PARAMS)[number]): string => auth.get(name) ?? '';

  if (get('X-Amz-Algorithm') !== 'AWS4-HMAC-SHA256') return malformed('X-Amz-Algorithm must be AWS4-HMAC-SHA256');
  const longDate = get('X-Amz-Date');
  const signedAt = parseLongDate(longDate);
  if (signedAt === undefined) return malformed('X-Amz-Date must look like 20260101T000000Z');
  const expires = /^\d{1,6}$/.test(get('X-Amz-Expires')) ? Number(get('X-Amz-Expires')) : NaN;
  if (!(expires >= 1 && expires <= MAX_EXPIRES_SECONDS)) return malformed('X-Amz-Expires must be 1 to 604800 seconds');

  if (input.now > signedAt + expires * 1000) return { ok: false, reason: 'expired', message: 'Request has expired' };
  if (signedAt - input.now > MAX_SKEW_MS) return { ok: false, reason: 'not_yet_valid', message: 'Request is not valid yet' };

  const [accessKeyId, scopeDate, region, service, terminator, ...extra] = get('X-Amz-Credential').split('/');
  if (accessKeyId !== input.accessKeyId || scopeDate !== longDate.slice(0, 8) || service !== 's3' || terminator !== 'aws4_request' || extra.length > 0 || !region) {
    return mismatch();
  }

  const signedHeaders = get('X-Amz-SignedHeaders').split(';');
  if (!signedHeaders.includes('host')) return mismatch();
  const headerLines: string[] = [];
  for (const name of signedHeaders) {
    const value = input.headers[name];
    if (value === undefined || name !== name.toLowerCase()) return mismatch();
    headerLines.push(`${name}:${normalizeHeaderValue(Array.isArray(value) ? value.join(',') : value)}`);
  }

  const payloadHash = params.get('X-Amz-Content-Sha256')?.[0] ?? 'UNSIGNED-PAYLOAD';
  // S3 signs the path as sent (no double encoding), unlike other AWS services.
  const canonicalRequest = [input.method, path, canonicalQuery(params), ...headerLines, '', signedHeaders.join(';'), payloadHash].join('\n');
  const scope = `${scopeDate}/${region}/s3/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', longDate, scope, sha256Hex(canonicalRequest)].join('\n');

  let key: Buffer = hmac(`AWS4${input.secretAccessKey}`, scopeDate);
  for (const part of [region, 's3', 'aws4_request']) key = hmac(key, part);
  const expected = Buffer.from(hmac(key, stringToSign).toString('hex'));
  const given = Buffer.from(get('X-Amz-Signature').toLowerCase());
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return mismatch();
  return { ok: true };
}

/** The body real S3 sends with a 403, so that clients parse it the same way. */
export function accessDeniedXml(message: string): string {
  const escaped = message.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code><Message>${escaped}</Message></Error>`;
}

function canonicalQuery(params: Map<string, string[]>): string {
  // Sorted by name first, then by value: sorting whole `name=value` strings would put `a-b=` before `a=`.
  return [...params]
    .filter(([name]) => name !== 'X-Amz-Signature')
    .map(([name, values]) => [escapeUri(name), values.map(escapeUri).sort(compareCodeUnits)] as const)
    .sort(([a], [b]) => compareCodeUnits(a, b))
    .flatMap(([name, values]) => values.map((value) => `${name}=${value}`))
    .join('&');
}

/** Keeps repeated names: a URL that repeats a parameter must not verify as one that does not. */
function parseQuery(raw: string): Map<string, string[]> | undefined {
  const params = new Map<string, string[]>();
  if (raw === '') return params;
  try {
    for (const pair of raw.split('&')) {
      const [name = '', value = ''] = splitOnce(pair, '=');
      // No `+` to space here: the signer percent-encodes spaces, so a literal `+` is a plus.
      const decodedName = decodeURIComponent(name);
      params.set(decodedName, [...(params.get(decodedName) ?? []), decodeURIComponent(value)]);
    }
  } catch {
    return undefined;
  }
  return params;
}

function parseLongDate(value: string): number | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s] = m.map(Number) as [number, number, number, number, number, number, number];
  const ms = Date.UTC(y, mo - 1, d, h, mi, s);
  return new Date(ms).getUTCDate() === d ? ms : undefined;
}

function escapeUri(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function normalizeHeaderValue(value: string): string {
  return value.replace(/[\r\n]/g, ' ').replace(/[ \t]+/g, ' ').trim();
}

function splitOnce(value: string, separator: string): [string, string | undefined] {
  const at = value.indexOf(separator);
  return at === -1 ? [value, undefined] : [value.slice(0, at), value.slice(at + separator.length)];
}

function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data, 'utf8').digest();
}

function sha256Hex(data: string): string {
  return createHash('sha256').update(data, 'utf8').digest('hex');
}

function malformed(message: string): PresignVerdict {
  return { ok: false, reason: 'malformed', message: `Query-string authentication is malformed: ${message}` };
}

function mismatch(): PresignVerdict {
  return { ok: false, reason: 'bad_signature', message: 'The request signature we calculated does not match the signature you provided' };
}
