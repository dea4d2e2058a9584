import { canonicalHeaderLines, canonicalQuery, parseLongDate, parseQuery, s3ErrorXml, sameSignature, signatureOf, splitOnce, type SignedRequestInput } from './sigv4.js';

/**
 * SigV4 query-string (presigned URL) verification for the embedded server. s3rver accepts any V4
 * signature and never checks it, so without this an expired or edited download link would still
 * work locally and then fail in production.
 */
export type PresignCheckInput = SignedRequestInput;

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
  if (!signedHeaders.includes('host') || signedHeaders.some((name) => name !== name.toLowerCase())) return mismatch();
  const headerLines = canonicalHeaderLines(input.headers, signedHeaders);
  if (headerLines === undefined) return mismatch();

  const payloadHash = params.get('X-Amz-Content-Sha256')?.[0] ?? 'UNSIGNED-PAYLOAD';
  // S3 signs the path as sent (no double encoding), unlike other AWS services.
  const canonicalRequest = [input.method, path, canonicalQuery(params, 'X-Amz-Signature'), ...headerLines, '', signedHeaders.join(';'), payloadHash].join('\n');
  const expected = signatureOf(input.secretAccessKey, { canonicalRequest, longDate, scopeDate, region });
  if (!sameSignature(get('X-Amz-Signature'), expected)) return mismatch();
  return { ok: true };
}

/** The body real S3 sends with a 403, so that clients parse it the same way. */
export function accessDeniedXml(message: string): string {
  return s3ErrorXml('AccessDenied', message);
}

function malformed(message: string): PresignVerdict {
  return { ok: false, reason: 'malformed', message: `Query-string authentication is malformed: ${message}` };
}

function mismatch(): PresignVerdict {
  return { ok: false, reason: 'bad_signature', message: 'The request signature we calculated does not match the signature you provided' };
}
