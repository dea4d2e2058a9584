import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/**
 * SigV4 pieces shared by the presigned-URL check and the Authorization-header check of the
 * embedded server. They follow what `@smithy/signature-v4` does for S3 (`uriEscapePath: false`).
 */

export const ALGORITHM = 'AWS4-HMAC-SHA256';

/** A request as both signature checks see it: what arrived, and what it must be signed with. */
export interface SignedRequestInput {
  method: string;
  /** The request target exactly as received (`req.url`): raw path plus query. */
  url: string;
  headers: IncomingHttpHeaders;
  now: number;
  accessKeyId: string;
  secretAccessKey: string;
}

/** Keeps repeated names: a request that repeats a parameter must not verify as one that does not. */
export function parseQuery(raw: string): Map<string, string[]> | undefined {
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

/** `skip` names parameters left out of the signature (X-Amz-Signature of a presigned URL). */
export function canonicalQuery(params: Map<string, string[]>, skip?: string): string {
  // Sorted by name first, then by value: sorting whole `name=value` strings would put `a-b=` before `a=`.
  return [...params]
    .filter(([name]) => name !== skip)
    .map(([name, values]) => [escapeUri(name), values.map(escapeUri).sort(compareCodeUnits)] as const)
    .sort(([a], [b]) => compareCodeUnits(a, b))
    .flatMap(([name, values]) => values.map((value) => `${name}=${value}`))
    .join('&');
}

/**
 * `name:value` lines for the signed headers, or undefined when one is absent. Reads only the
 * headers' own properties: `constructor` or `__proto__` in a signed-header list names nothing.
 */
export function canonicalHeaderLines(headers: IncomingHttpHeaders, names: readonly string[]): string[] | undefined {
  const lines: string[] = [];
  for (const name of names) {
    const value = Object.hasOwn(headers, name) ? headers[name] : undefined;
    const text = Array.isArray(value) ? value.join(',') : value;
    if (typeof text !== 'string') return undefined;
    lines.push(`${name}:${normalizeHeaderValue(text)}`);
  }
  return lines;
}

/** Milliseconds since the epoch of a `20260101T000000Z` date, or undefined. */
export function parseLongDate(value: string): number | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(value);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s] = m.map(Number) as [number, number, number, number, number, number, number];
  if (h > 23 || mi > 59 || s > 59) return undefined;
  const ms = Date.UTC(y, mo - 1, d, h, mi, s);
  return new Date(ms).getUTCDate() === d ? ms : undefined;
}

export interface StringToSignParts {
  canonicalRequest: string;
  longDate: string;
  scopeDate: string;
  region: string;
}

/** The hex signature of a canonical request, as the signer computes it for service `s3`. */
export function signatureOf(secretAccessKey: string, { canonicalRequest, longDate, scopeDate, region }: StringToSignParts): string {
  const scope = `${scopeDate}/${region}/s3/aws4_request`;
  const stringToSign = [ALGORITHM, longDate, scope, sha256Hex(canonicalRequest)].join('\n');
  let key: Buffer = hmac(`AWS4${secretAccessKey}`, scopeDate);
  for (const part of [region, 's3', 'aws4_request']) key = hmac(key, part);
  return hmac(key, stringToSign).toString('hex');
}

/** Constant-time for equal lengths; the length of a hex SHA-256 is no secret. */
export function sameSignature(given: string, expected: string): boolean {
  const a = Buffer.from(given.toLowerCase());
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The body real S3 sends with an error, so that clients parse it the same way. */
export function s3ErrorXml(code: string, message: string): string {
  const escape = (text: string): string => text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${escape(code)}</Code><Message>${escape(message)}</Message></Error>`;
}

export function splitOnce(value: string, separator: string): [string, string | undefined] {
  const at = value.indexOf(separator);
  return at === -1 ? [value, undefined] : [value.slice(0, at), value.slice(at + separator.length)];
}

function escapeUri(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function normalizeHeaderValue(value: string): string {
  return value.replace(/[\r\n]/g, ' ').replace(/[ \t]+/g, ' ').trim();
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
