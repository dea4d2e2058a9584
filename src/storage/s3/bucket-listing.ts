import fs from 'node:fs/promises';
import type http from 'node:http';
import path from 'node:path';
import { systemCodeOf } from '../../shared/errors.js';
import { s3ErrorXml } from './sigv4.js';

/**
 * ListObjects (v1) and ListObjectsV2, answered by the front instead of s3rver 3.7.1, whose listing
 * `aws s3api list-objects-v2 --delimiter /` showed wrong:
 * - with a delimiter it never descends into a directory below a common prefix, so a prefix whose
 *   keys all sit two levels down (`results/<job>/...`) was not listed at all, while `inputs/x` was;
 * - it walks the directory tree in readdir order (hash order on ext4), not key order, and pages by
 *   `key <= startAfter` over that order, so a second page could repeat or lose keys;
 * - common prefixes did not count against MaxKeys, and a page that ended on one had no token.
 * This one reads every key of the bucket, sorts them as S3 does (by UTF-8 bytes) and pages over
 * keys and common prefixes together, as AWS documents.
 */

/** s3rver's file store: the object itself is `<dir>/<last part>._S3rver_object` (POSIX: no escaping). */
const OBJECT_SUFFIX = '._S3rver_object';
const MAX_KEYS = 1000;
const TOKEN_TAG = 'sluice-list-1\n';
/** Query parameters a listing may carry; anything else (`?acl`, `?uploads`, `?versions`, ...) is s3rver's. */
const LIST_PARAMS = new Set(['list-type', 'prefix', 'delimiter', 'max-keys', 'marker', 'continuation-token', 'start-after', 'fetch-owner', 'encoding-type', 'x-id']);
const OWNER = { id: '123456789000', displayName: 'S3rver' };

export interface ObjectMetadata {
  etag: string;
  lastModified: string;
  size: number;
}

export type MetadataReader = (key: string) => Promise<ObjectMetadata | undefined>;

interface ListRequest {
  version: 1 | 2;
  prefix: string;
  delimiter: string;
  maxKeys: number;
  maxKeysText: string;
  /** Keys and common prefixes at or before this are not listed. */
  after: string;
  startAfter: string | undefined;
  marker: string | undefined;
  continuationToken: string | undefined;
  fetchOwner: boolean;
  urlEncoded: boolean;
}

type Entry = { kind: 'key'; value: string } | { kind: 'prefix'; value: string };

/** The listing a GET on the bucket asks for, or undefined when s3rver should answer the request. */
export function listRequestOf(method: string, pathname: string, rawQuery: string, bucket: string): ListRequest | 'bad-token' | undefined {
  if (method !== 'GET' || (pathname !== `/${bucket}` && pathname !== `/${bucket}/`)) return undefined;
  const query = new URLSearchParams(rawQuery);
  for (const name of query.keys()) if (!LIST_PARAMS.has(name) && !name.toLowerCase().startsWith('x-amz-')) return undefined;
  const version = query.get('list-type') === '2' ? 2 : query.has('list-type') ? undefined : 1;
  if (version === undefined) return undefined;
  // Argument errors (max-keys out of range, v1 with a continuation token, ...) stay s3rver's to word.
  const maxKeysText = query.get('max-keys') ?? String(MAX_KEYS);
  if (!/^\d{1,10}$/.test(maxKeysText) || Number(maxKeysText) > 2_147_483_647) return undefined;
  if (version === 1 && (query.has('continuation-token') || query.has('start-after'))) return undefined;
  if (version === 2 && query.has('marker')) return undefined;
  const encodingType = query.get('encoding-type');
  if (encodingType !== null && encodingType !== 'url') return undefined;
  const continuationToken = version === 2 ? query.get('continuation-token') || undefined : undefined;
  let after = version === 2 ? (query.get('start-after') ?? '') : (query.get('marker') ?? '');
  if (continuationToken !== undefined) {
    const decoded = decodeToken(continuationToken);
    if (decoded === undefined) return 'bad-token';
    after = decoded;
  }
  return {
    version,
    prefix: query.get('prefix') ?? '',
    delimiter: query.get('delimiter') ?? '',
    maxKeys: Math.min(MAX_KEYS, Number(maxKeysText)),
    maxKeysText,
    after,
    startAfter: version === 2 ? (query.get('start-after') ?? undefined) : undefined,
    marker: version === 1 ? (query.get('marker') ?? '') : undefined,
    continuationToken,
    // v1 always names the owner; v2 only when asked.
    fetchOwner: version === 1 || query.get('fetch-owner') === 'true',
    urlEncoded: encodingType === 'url',
  };
}

/** Answers a listing request from the bucket's directory; errors go out as S3 error XML. */
export async function answerListing(res: http.ServerResponse, bucketDir: string, bucket: string, request: ListRequest | 'bad-token', metadataOf: MetadataReader): Promise<void> {
  if (request === 'bad-token') return sendXml(res, 400, s3ErrorXml('InvalidArgument', 'The continuation token provided is incorrect'));
  let keys: string[];
  try {
    keys = await keysOf(bucketDir);
  } catch (e: unknown) {
    if (systemCodeOf(e) === 'ENOENT') return sendXml(res, 404, s3ErrorXml('NoSuchBucket', 'The specified bucket does not exist'));
    throw e;
  }
  const { entries, truncated } = page(keys, request);
  const objects = await Promise.all(entries.filter((e) => e.kind === 'key').map(async (e) => ({ key: e.value, meta: await metadataOf(e.value) })));
  sendXml(res, 200, listingXml(bucket, request, entries, objects, truncated));
}

/** Every key of the bucket, in S3's order: ascending UTF-8 bytes. */
async function keysOf(bucketDir: string): Promise<string[]> {
  const files = await fs.readdir(bucketDir, { recursive: true });
  const keys = files.filter((f) => f.endsWith(OBJECT_SUFFIX)).map((f) => f.split(path.sep).join('/').slice(0, -OBJECT_SUFFIX.length));
  return keys.map((k) => ({ k, bytes: Buffer.from(k) })).sort((a, b) => Buffer.compare(a.bytes, b.bytes)).map(({ k }) => k);
}

function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/**
 * One page: keys after `after` under the prefix, those holding the delimiter past the prefix rolled
 * up into one common prefix each; keys and prefixes together count against MaxKeys. A common prefix
 * at or before `after` is the one the previous page ended on (or one the marker points into): its
 * keys were rolled up there already.
 */
export function page(sortedKeys: readonly string[], request: Pick<ListRequest, 'prefix' | 'delimiter' | 'maxKeys' | 'after'>): { entries: Entry[]; truncated: boolean } {
  const { prefix, delimiter, maxKeys, after } = request;
  const entries: Entry[] = [];
  if (maxKeys === 0) return { entries, truncated: false };
  for (const key of sortedKeys) {
    if (!key.startsWith(prefix) || compareBytes(key, after) <= 0) continue;
    const cut = delimiter === '' ? -1 : key.indexOf(delimiter, prefix.length);
    let entry: Entry = { kind: 'key', value: key };
    if (cut !== -1) {
      const common = key.slice(0, cut + delimiter.length);
      if (compareBytes(common, after) <= 0) continue;
      // Keys sharing a common prefix are adjacent in sorted order.
      const last = entries.at(-1);
      if (last?.kind === 'prefix' && last.value === common) continue;
      entry = { kind: 'prefix', value: common };
    }
    if (entries.length === maxKeys) return { entries, truncated: true };
    entries.push(entry);
  }
  return { entries, truncated: false };
}

export function encodeToken(after: string): string {
  return Buffer.from(TOKEN_TAG + after).toString('base64url');
}

function decodeToken(token: string): string | undefined {
  const text = Buffer.from(token, 'base64url').toString();
  return text.startsWith(TOKEN_TAG) ? text.slice(TOKEN_TAG.length) : undefined;
}

function listingXml(bucket: string, request: ListRequest, entries: Entry[], objects: { key: string; meta: ObjectMetadata | undefined }[], truncated: boolean): string {
  const enc = (text: string): string => (request.urlEncoded ? encodeURIComponent(text).replace(/%2F/g, '/') : text);
  const el = (name: string, value: string | number | boolean | undefined): string => (value === undefined ? '' : `<${name}>${escapeXml(String(value))}</${name}>`);
  const last = entries.at(-1)?.value;
  const owner = request.fetchOwner ? `<Owner>${el('ID', OWNER.id)}${el('DisplayName', OWNER.displayName)}</Owner>` : '';
  const contents = objects
    .filter((o): o is { key: string; meta: ObjectMetadata } => o.meta !== undefined)
    .map(({ key, meta }) => `<Contents>${el('Key', enc(key))}${el('LastModified', meta.lastModified)}${el('ETag', meta.etag)}${el('Size', meta.size)}${owner}${el('StorageClass', 'STANDARD')}</Contents>`);
  const prefixes = entries.filter((e) => e.kind === 'prefix').map((e) => `<CommonPrefixes>${el('Prefix', enc(e.value))}</CommonPrefixes>`);
  const head = [el('Name', bucket), el('Prefix', enc(request.prefix)), request.delimiter === '' ? '' : el('Delimiter', enc(request.delimiter))];
  const paging =
    request.version === 2
      ? [
          request.startAfter === undefined ? '' : el('StartAfter', enc(request.startAfter)),
          el('ContinuationToken', request.continuationToken),
          el('KeyCount', contents.length + prefixes.length),
          el('MaxKeys', request.maxKeysText),
          request.urlEncoded ? el('EncodingType', 'url') : '',
          el('IsTruncated', truncated),
          truncated && last !== undefined ? el('NextContinuationToken', encodeToken(last)) : '',
        ]
      : [
          el('Marker', enc(request.marker ?? '')),
          // AWS gives NextMarker only with a delimiter; without one the last key is the next marker.
          truncated && request.delimiter !== '' && last !== undefined ? el('NextMarker', enc(last)) : '',
          el('MaxKeys', request.maxKeysText),
          request.urlEncoded ? el('EncodingType', 'url') : '',
          el('IsTruncated', truncated),
        ];
  return `<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${head.join('')}${paging.join('')}${contents.join('')}${prefixes.join('')}</ListBucketResult>`;
}

function escapeXml(text: string): string {
  return text.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function sendXml(res: http.ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(body) }).end(body);
}
