import { hasQueryAuth } from './presign-check.js';
import { ALGORITHM, canonicalHeaderLines, canonicalQuery, parseLongDate, parseQuery, sameSignature, signatureOf, splitOnce, type SignedRequestInput } from './sigv4.js';

/**
 * SigV4 `Authorization` header verification for the embedded server, which is what the AWS SDK
 * sends. s3rver only looks up the access key id of such a request and never checks its signature,
 * so without this anyone holding one presigned URL (which shows the key id) could forge requests.
 */
export type HeaderAuthInput = SignedRequestInput;

/** S3's own error codes, so that the SDK names its errors as it would against AWS. */
export type HeaderAuthErrorCode =
  | 'AccessDenied'
  | 'AuthorizationHeaderMalformed'
  | 'InvalidAccessKeyId'
  | 'InvalidRequest'
  | 'RequestTimeTooSkewed'
  | 'SignatureDoesNotMatch';

export type HeaderAuthVerdict = { ok: true } | { ok: false; code: HeaderAuthErrorCode; message: string };

/** AWS refuses a request dated further than this from its clock, either way. */
export const MAX_CLOCK_SKEW_MS = 15 * 60_000;

/**
 * What `x-amz-content-sha256` may hold with an HMAC signature. The digest is signed as given and
 * not compared with the body here, as AWS too signs first and checks the body as it arrives.
 */
const PAYLOAD_HASH = /^(?:[0-9a-fA-F]{64}|UNSIGNED-PAYLOAD|STREAMING-UNSIGNED-PAYLOAD-TRAILER|STREAMING-AWS4-HMAC-SHA256-PAYLOAD(?:-TRAILER)?)$/;
const SIGNATURE = /^[0-9a-f]{64}$/;
/** A lowercase header name as Node hands them over (RFC 9110 token characters). */
const HEADER_NAME = /^[a-z0-9!#$%&'*+.^_`|~-]+$/;

export function checkHeaderSigned(input: HeaderAuthInput): HeaderAuthVerdict {
  const authorization = input.headers.authorization;
  if (authorization === undefined || authorization === '') return deny('AccessDenied', 'Access Denied');
  const [algorithm = '', rest = ''] = splitOnce(authorization, ' ');
  if (algorithm !== ALGORITHM) {
    // Notably the V2 `AWS key:signature`: s3rver would check it, but against a key pair of its own
    // (S3RVER/S3RVER) that everyone knows.
    return deny('InvalidRequest', `The authorization mechanism you have provided is not supported. Please use ${ALGORITHM}.`);
  }
  const fields = parseAuthorization(rest);
  if (fields === undefined) {
    return deny('AuthorizationHeaderMalformed', 'The authorization header is malformed; it requires Credential, SignedHeaders and Signature, once each.');
  }

  const [rawPath = '', rawQuery = ''] = splitOnce(input.url, '?');
  if (!rawPath.startsWith('/')) return deny('InvalidRequest', 'The request target must be a path');
  const params = parseQuery(rawQuery);
  if (params === undefined) return deny('InvalidRequest', 'The query string is not valid percent-encoding');
  if (hasQueryAuth(input.url) || params.has('Signature') || params.has('AWSAccessKeyId')) {
    return deny('InvalidRequest', 'Only one auth mechanism allowed; use either the Authorization header or query-string authentication');
  }

  const [accessKeyId, scopeDate = '', region, service, terminator, ...extra] = fields.credential.split('/');
  if (accessKeyId !== input.accessKeyId) return deny('InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.');
  if (!/^\d{8}$/.test(scopeDate) || !region || service !== 's3' || terminator !== 'aws4_request' || extra.length > 0) {
    return deny('AuthorizationHeaderMalformed', 'The authorization header is malformed; the Credential is not <key>/<date>/<region>/s3/aws4_request.');
  }

  const longDate = single(input.headers['x-amz-date']) ?? '';
  const signedAt = parseLongDate(longDate);
  if (signedAt === undefined) return deny('AccessDenied', 'AWS authentication requires a valid Date or x-amz-date header');
  if (scopeDate !== longDate.slice(0, 8)) {
    return deny('AuthorizationHeaderMalformed', 'The authorization header is malformed; the Credential date is not the day of x-amz-date.');
  }
  if (Math.abs(input.now - signedAt) > MAX_CLOCK_SKEW_MS) {
    return deny('RequestTimeTooSkewed', 'The difference between the request time and the current time is too large.');
  }

  const payloadHash = single(input.headers['x-amz-content-sha256']);
  if (payloadHash === undefined) return deny('InvalidRequest', 'Missing required header for this request: x-amz-content-sha256');
  if (!PAYLOAD_HASH.test(payloadHash)) {
    return deny('InvalidRequest', 'x-amz-content-sha256 must be UNSIGNED-PAYLOAD, a STREAMING-* value or a SHA-256 hex digest.');
  }

  const signedHeaders = fields.signedHeaders.split(';');
  // Strictly ascending, as the signer writes them: one list, one canonical request.
  if (signedHeaders.some((name, i) => !HEADER_NAME.test(name) || (i > 0 && (signedHeaders[i - 1] ?? '') >= name))) {
    return deny('AuthorizationHeaderMalformed', 'The authorization header is malformed; SignedHeaders must be sorted lowercase header names.');
  }
  if (!signedHeaders.includes('host')) return deny('AccessDenied', 'The host header must be signed');
  // As AWS: an unsigned x-amz-* header (x-amz-copy-source, say) could be added to a captured request.
  const unsigned = Object.keys(input.headers).filter((name) => name.startsWith('x-amz-') && !signedHeaders.includes(name));
  if (unsigned.length > 0) return deny('AccessDenied', `There were headers present in the request which were not signed: ${unsigned.join(', ')}`);
  const headerLines = canonicalHeaderLines(input.headers, signedHeaders);
  if (headerLines === undefined) return deny('AccessDenied', 'A header named in SignedHeaders is missing from the request');

  // S3 signs the path as sent (no normalizing, no double encoding), unlike other AWS services.
  const canonicalRequest = [input.method, rawPath, canonicalQuery(params), ...headerLines, '', signedHeaders.join(';'), payloadHash].join('\n');
  const expected = signatureOf(input.secretAccessKey, { canonicalRequest, longDate, scopeDate, region });
  if (!sameSignature(fields.signature, expected)) {
    return deny('SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided. Check your key and signing method.');
  }
  return { ok: true };
}

/** `Credential=…, SignedHeaders=…, Signature=…` in any order, each exactly once, nothing else. */
function parseAuthorization(rest: string): { credential: string; signedHeaders: string; signature: string } | undefined {
  const found = new Map<string, string>();
  for (const part of rest.split(',')) {
    const [name = '', value] = splitOnce(part.trim(), '=');
    if (value === undefined || value === '' || found.has(name) || !['Credential', 'SignedHeaders', 'Signature'].includes(name)) return undefined;
    found.set(name, value);
  }
  const credential = found.get('Credential');
  const signedHeaders = found.get('SignedHeaders');
  const signature = found.get('Signature');
  if (credential === undefined || signedHeaders === undefined || signature === undefined || !SIGNATURE.test(signature)) return undefined;
  return { credential, signedHeaders, signature };
}

function single(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

function deny(code: HeaderAuthErrorCode, message: string): HeaderAuthVerdict {
  return { ok: false, code, message };
}
