import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ObjectStore } from '../../src/storage/s3/object-store.js';
import { S3ObjectStore } from '../../src/storage/s3/s3-object-store.js';
import {
  bearer,
  closeHarnesses,
  expectNoLeak,
  json,
  jobCount,
  multipart,
  newAccount,
  openApiHarness,
  storedObjects,
  type ApiHarness,
  type TestAccount,
} from '../support/api-harness.js';

/**
 * Every route, fed what a careless or hostile client sends. Each row names the exact status and
 * error text; every error body has the spec's shape ({error}, plus an optional machine `code`),
 * and none shows a stack, a path on disk or a dependency.
 */

type Auth = 'key' | 'session' | 'none' | 'wrong';
type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

interface Row {
  name: string;
  method: Method;
  url: string;
  auth: Auth;
  /** An object is sent as JSON; a string or Buffer as it is, with `contentType`. */
  body?: unknown;
  contentType?: string;
  headers?: Record<string, string>;
  status: number;
  /** The exact error text, or a pattern where the text carries validator detail. */
  error: string | RegExp;
  /** For 405: the methods the Allow header must list. */
  allow?: string[];
}

const JSON_TYPE = 'application/json';
const OVERSIZED = JSON.stringify({ name: 'x'.repeat(70 * 1024), email: 'a@example.com', password: 'p' });
const UNKNOWN_UUID = '00000000-0000-4000-8000-000000000000';
const INVALID_REQUEST = /^Invalid request/;
const GENDER_PATHS = ['/api/email/gender', '/api/lookup/email/gender'];

function multipartRow(name: string, parts: Parameters<typeof multipart>[0], status: number, error: string | RegExp): Row {
  const body = multipart(parts);
  return { name, method: 'POST', url: '/api/jobs/bulk', auth: 'key', body: body.payload, contentType: body.headers['content-type'], status, error };
}

const CSV = 'email\nmaria.rossi@example.com\n';

const rows: Row[] = [
  // Unknown routes
  { name: 'unknown top-level path', method: 'GET', url: '/nope', auth: 'none', status: 404, error: 'Not found' },
  { name: 'unknown /api path', method: 'GET', url: '/api/nope', auth: 'key', status: 404, error: 'Not found' },
  { name: 'unknown nested job path', method: 'POST', url: '/api/jobs/x/y/z', auth: 'key', status: 404, error: 'Not found' },
  { name: 'unknown path, unusual method', method: 'PATCH', url: '/api/whatever', auth: 'key', status: 404, error: 'Not found' },
  { name: 'trailing slash on healthz', method: 'GET', url: '/healthz/', auth: 'none', status: 404, error: 'Not found' },
  // The dashboard (not API, so not in the OpenAPI document): only its three files, only GET
  { name: 'POST the dashboard page', method: 'POST', url: '/', auth: 'none', status: 405, error: 'Method not allowed', allow: ['GET'] },
  { name: 'unknown dashboard file', method: 'GET', url: '/dashboard/nope.js', auth: 'none', status: 404, error: 'Not found' },
  { name: 'index.html by name', method: 'GET', url: '/index.html', auth: 'none', status: 404, error: 'Not found' },

  // Malformed URLs must still get the API's own error shape, not the framework's default body
  { name: 'bad percent-encoding in a path parameter', method: 'GET', url: '/api/jobs/%E0%A4%A', auth: 'key', status: 400, error: /./ },
  { name: 'path parameter longer than the router allows', method: 'GET', url: `/api/jobs/${'x'.repeat(150)}`, auth: 'key', status: 414, error: /./ },

  // Operations
  { name: 'POST healthz', method: 'POST', url: '/healthz', auth: 'none', status: 405, error: 'Method not allowed', allow: ['GET'] },
  { name: 'DELETE readyz', method: 'DELETE', url: '/readyz', auth: 'none', status: 405, error: 'Method not allowed', allow: ['GET'] },
  { name: 'POST openapi.json', method: 'POST', url: '/api/openapi.json', auth: 'none', status: 405, error: 'Method not allowed', allow: ['GET'] },

  // POST /api/auth/login
  { name: 'GET login', method: 'GET', url: '/api/auth/login', auth: 'none', status: 405, error: 'Method not allowed', allow: ['POST'] },
  { name: 'login: malformed JSON', method: 'POST', url: '/api/auth/login', auth: 'none', body: '{"email":', contentType: JSON_TYPE, status: 400, error: 'Malformed JSON body' },
  { name: 'login: empty JSON body', method: 'POST', url: '/api/auth/login', auth: 'none', body: '', contentType: JSON_TYPE, status: 400, error: 'Malformed JSON body' },
  { name: 'login: missing fields', method: 'POST', url: '/api/auth/login', auth: 'none', body: {}, status: 422, error: INVALID_REQUEST },
  { name: 'login: missing password', method: 'POST', url: '/api/auth/login', auth: 'none', body: { email: 'a@example.com' }, status: 422, error: INVALID_REQUEST },
  { name: 'login: JSON array body', method: 'POST', url: '/api/auth/login', auth: 'none', body: '[]', contentType: JSON_TYPE, status: 422, error: INVALID_REQUEST },
  { name: 'login: JSON null body', method: 'POST', url: '/api/auth/login', auth: 'none', body: 'null', contentType: JSON_TYPE, status: 422, error: INVALID_REQUEST },
  { name: 'login: email is an object', method: 'POST', url: '/api/auth/login', auth: 'none', body: { email: {}, password: 'x' }, status: 422, error: INVALID_REQUEST },
  { name: 'login: email is a number (wrong type)', method: 'POST', url: '/api/auth/login', auth: 'none', body: { email: 12345, password: 'x' }, status: 422, error: INVALID_REQUEST },
  { name: 'login: email is an array (wrong type)', method: 'POST', url: '/api/auth/login', auth: 'none', body: { email: ['a@example.com'], password: 'x' }, status: 422, error: INVALID_REQUEST },
  { name: 'login: password is a boolean (wrong type)', method: 'POST', url: '/api/auth/login', auth: 'none', body: { email: 'a@example.com', password: true }, status: 422, error: INVALID_REQUEST },
  // Fastify parses text/plain as a string, which then fails the object schema.
  { name: 'login: text/plain body', method: 'POST', url: '/api/auth/login', auth: 'none', body: 'email=a', contentType: 'text/plain', status: 422, error: INVALID_REQUEST },
  { name: 'login: form-encoded body', method: 'POST', url: '/api/auth/login', auth: 'none', body: 'email=a&password=b', contentType: 'application/x-www-form-urlencoded', status: 415, error: 'Unsupported content type' },
  { name: 'login: JSON over 64 KiB', method: 'POST', url: '/api/auth/login', auth: 'none', body: OVERSIZED, contentType: JSON_TYPE, status: 413, error: 'Request body is too large' },

  // POST /api/keys (session token)
  { name: 'GET /api/keys', method: 'GET', url: '/api/keys', auth: 'session', status: 405, error: 'Method not allowed', allow: ['POST'] },
  { name: '/api/keys without a token', method: 'POST', url: '/api/keys', auth: 'none', body: { name: 'k' }, status: 401, error: 'Unauthorized' },
  { name: '/api/keys with an API key instead of a session', method: 'POST', url: '/api/keys', auth: 'key', body: { name: 'k' }, status: 401, error: 'Unauthorized' },
  { name: '/api/keys with a made-up session', method: 'POST', url: '/api/keys', auth: 'wrong', body: { name: 'k' }, status: 401, error: 'Unauthorized' },
  { name: '/api/keys: name missing', method: 'POST', url: '/api/keys', auth: 'session', body: {}, status: 400, error: 'Name is required' },
  { name: '/api/keys: name blank', method: 'POST', url: '/api/keys', auth: 'session', body: { name: '   ' }, status: 400, error: 'Name is required' },
  { name: '/api/keys: name is a number (wrong type)', method: 'POST', url: '/api/keys', auth: 'session', body: { name: 42 }, status: 422, error: INVALID_REQUEST },
  { name: '/api/keys: malformed JSON', method: 'POST', url: '/api/keys', auth: 'session', body: '{"name"', contentType: JSON_TYPE, status: 400, error: 'Malformed JSON body' },
  { name: '/api/keys: text/plain', method: 'POST', url: '/api/keys', auth: 'session', body: 'name=k', contentType: 'text/plain', status: 422, error: INVALID_REQUEST },
  { name: '/api/keys: form-encoded', method: 'POST', url: '/api/keys', auth: 'session', body: 'name=k', contentType: 'application/x-www-form-urlencoded', status: 415, error: 'Unsupported content type' },
  { name: '/api/keys: JSON over 64 KiB', method: 'POST', url: '/api/keys', auth: 'session', body: OVERSIZED, contentType: JSON_TYPE, status: 413, error: 'Request body is too large' },

  // /api/account/keys
  // POST /api/auth/logout
  { name: 'GET logout', method: 'GET', url: '/api/auth/logout', auth: 'session', status: 405, error: 'Method not allowed', allow: ['POST'] },
  { name: 'logout without a token', method: 'POST', url: '/api/auth/logout', auth: 'none', status: 401, error: 'Unauthorized' },

  // GET /api/account/audit
  { name: 'POST audit log', method: 'POST', url: '/api/account/audit', auth: 'key', status: 405, error: 'Method not allowed', allow: ['GET'] },
  { name: 'audit log without a key', method: 'GET', url: '/api/account/audit', auth: 'none', status: 401, error: 'Unauthorized' },
  { name: 'audit log with an unknown key', method: 'GET', url: '/api/account/audit', auth: 'wrong', status: 401, error: 'Unauthorized' },
  { name: 'audit log: limit 0', method: 'GET', url: '/api/account/audit?limit=0', auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'audit log: limit over 100', method: 'GET', url: '/api/account/audit?limit=101', auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'audit log: before is not a number', method: 'GET', url: '/api/account/audit?before=abc', auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'POST usage log', method: 'POST', url: '/api/account/usage', auth: 'key', status: 405, error: 'Method not allowed', allow: ['GET'] },
  { name: 'usage log without a key', method: 'GET', url: '/api/account/usage', auth: 'none', status: 401, error: 'Unauthorized' },
  { name: 'audit log: before past 2^53 (a 500 on PostgreSQL before)', method: 'GET', url: '/api/account/audit?before=99999999999999999999', auth: 'key', status: 400, error: /^Invalid request: before must be no more than/ },
  { name: 'usage log: before past 2^53 (a 500 on PostgreSQL before)', method: 'GET', url: '/api/account/usage?before=99999999999999999999', auth: 'key', status: 400, error: /^Invalid request: before must be no more than/ },
  { name: 'usage log: limit 0', method: 'GET', url: '/api/account/usage?limit=0', auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'usage log: before is not a number', method: 'GET', url: '/api/account/usage?before=abc', auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'usage log: since is not a time', method: 'GET', url: '/api/account/usage?since=yesterday', auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'usage log: since without a zone', method: 'GET', url: '/api/account/usage?since=2026-01-01T00:00:00', auth: 'key', status: 422, error: INVALID_REQUEST },

  { name: 'PUT account keys', method: 'PUT', url: '/api/account/keys', auth: 'key', status: 405, error: 'Method not allowed', allow: ['GET', 'POST', 'PATCH'] },
  { name: 'DELETE account keys', method: 'DELETE', url: '/api/account/keys', auth: 'key', status: 405, error: 'Method not allowed', allow: ['GET', 'POST', 'PATCH'] },
  { name: 'create key without a key', method: 'POST', url: '/api/account/keys', auth: 'none', body: { name: 'k' }, status: 401, error: 'Unauthorized' },
  { name: 'create key with an unknown key', method: 'POST', url: '/api/account/keys', auth: 'wrong', body: { name: 'k' }, status: 401, error: 'Unauthorized' },
  { name: 'create key without a key, invalid body: auth comes first', method: 'POST', url: '/api/account/keys', auth: 'none', body: { name: 'x'.repeat(300) }, status: 401, error: 'Unauthorized' },
  { name: 'create key: name missing', method: 'POST', url: '/api/account/keys', auth: 'key', body: {}, status: 400, error: 'Name is required' },
  { name: 'create key: no body at all', method: 'POST', url: '/api/account/keys', auth: 'key', status: 400, error: 'Name is required' },
  { name: 'create key: name empty', method: 'POST', url: '/api/account/keys', auth: 'key', body: { name: '' }, status: 400, error: 'Name is required' },
  { name: 'create key: name is a number (wrong type)', method: 'POST', url: '/api/account/keys', auth: 'key', body: { name: 123 }, status: 422, error: INVALID_REQUEST },
  { name: 'create key: name is an array (wrong type)', method: 'POST', url: '/api/account/keys', auth: 'key', body: { name: ['k'] }, status: 422, error: INVALID_REQUEST },
  { name: 'create key: name over 200 characters', method: 'POST', url: '/api/account/keys', auth: 'key', body: { name: 'x'.repeat(201) }, status: 422, error: INVALID_REQUEST },
  { name: 'create key: unknown role', method: 'POST', url: '/api/account/keys', auth: 'key', body: { name: 'k', role: 'root' }, status: 422, error: INVALID_REQUEST },
  { name: 'create key: malformed JSON', method: 'POST', url: '/api/account/keys', auth: 'key', body: '{name: k}', contentType: JSON_TYPE, status: 400, error: 'Malformed JSON body' },
  { name: 'create key: text/plain', method: 'POST', url: '/api/account/keys', auth: 'key', body: 'k', contentType: 'text/plain', status: 422, error: INVALID_REQUEST },
  { name: 'workflows: page 10^20 (a 500 before)', method: 'GET', url: '/api/workflows?page=99999999999999999999', auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'workflow runs: page 10^20 (a 500 before)', method: 'GET', url: '/api/workflows/runs?page=99999999999999999999', auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'lists: a text/plain body (a 500 before)', method: 'POST', url: '/api/lists', auth: 'key', body: 'name=x', contentType: 'text/plain', status: 422, error: INVALID_REQUEST },
  { name: 'create key: XML', method: 'POST', url: '/api/account/keys', auth: 'key', body: '<name>k</name>', contentType: 'application/xml', status: 415, error: 'Unsupported content type' },
  { name: 'create key: JSON over 64 KiB', method: 'POST', url: '/api/account/keys', auth: 'key', body: OVERSIZED, contentType: JSON_TYPE, status: 413, error: 'Request body is too large' },
  { name: 'list keys without a key', method: 'GET', url: '/api/account/keys', auth: 'none', status: 401, error: 'Unauthorized' },
  { name: 'toggle: no query', method: 'PATCH', url: '/api/account/keys', auth: 'key', status: 400, error: 'id and action are required' },
  { name: 'toggle: id only', method: 'PATCH', url: `/api/account/keys?id=${UNKNOWN_UUID}`, auth: 'key', status: 400, error: 'id and action are required' },
  { name: 'toggle: action only', method: 'PATCH', url: '/api/account/keys?action=disable', auth: 'key', status: 400, error: 'id and action are required' },
  { name: 'toggle: unknown action', method: 'PATCH', url: `/api/account/keys?id=${UNKNOWN_UUID}&action=delete`, auth: 'key', status: 400, error: 'id and action are required' },
  { name: 'toggle: unknown key', method: 'PATCH', url: `/api/account/keys?id=${UNKNOWN_UUID}&action=disable`, auth: 'key', status: 404, error: 'API key not found' },
  { name: 'toggle without a key', method: 'PATCH', url: `/api/account/keys?id=${UNKNOWN_UUID}&action=disable`, auth: 'none', status: 401, error: 'Unauthorized' },
  { name: 'POST reveal', method: 'POST', url: '/api/account/keys/reveal', auth: 'key', status: 405, error: 'Method not allowed', allow: ['GET'] },
  { name: 'reveal: id missing', method: 'GET', url: '/api/account/keys/reveal', auth: 'key', status: 400, error: 'id is required and must be a UUID' },
  { name: 'reveal: id not a UUID', method: 'GET', url: '/api/account/keys/reveal?id=abc', auth: 'key', status: 400, error: 'id is required and must be a UUID' },
  { name: 'reveal: unknown key', method: 'GET', url: `/api/account/keys/reveal?id=${UNKNOWN_UUID}`, auth: 'key', status: 404, error: 'API key not found' },
  { name: 'reveal without a key', method: 'GET', url: `/api/account/keys/reveal?id=${UNKNOWN_UUID}`, auth: 'none', status: 401, error: 'Unauthorized' },
  { name: 'GET roll', method: 'GET', url: '/api/account/keys/roll', auth: 'key', status: 405, error: 'Method not allowed', allow: ['POST'] },
  { name: 'roll: no body', method: 'POST', url: '/api/account/keys/roll', auth: 'key', status: 400, error: 'id is required and must be a UUID' },
  { name: 'roll: id not a UUID', method: 'POST', url: '/api/account/keys/roll', auth: 'key', body: { id: 'abc' }, status: 400, error: 'id is required and must be a UUID' },
  { name: 'roll: id is a number (wrong type)', method: 'POST', url: '/api/account/keys/roll', auth: 'key', body: { id: 7 }, status: 400, error: 'id is required and must be a UUID' },
  { name: 'roll: grace over a week', method: 'POST', url: '/api/account/keys/roll', auth: 'key', body: { id: UNKNOWN_UUID, grace_seconds: 604801 }, status: 422, error: INVALID_REQUEST },
  { name: 'roll: grace negative', method: 'POST', url: '/api/account/keys/roll', auth: 'key', body: { id: UNKNOWN_UUID, grace_seconds: -1 }, status: 422, error: INVALID_REQUEST },
  { name: 'roll: grace a string', method: 'POST', url: '/api/account/keys/roll', auth: 'key', body: { id: UNKNOWN_UUID, grace_seconds: '60' }, status: 422, error: INVALID_REQUEST },
  { name: 'roll: body an array', method: 'POST', url: '/api/account/keys/roll', auth: 'key', body: '[]', contentType: JSON_TYPE, status: 422, error: INVALID_REQUEST },
  { name: 'roll: unknown key', method: 'POST', url: '/api/account/keys/roll', auth: 'key', body: { id: UNKNOWN_UUID }, status: 404, error: 'API key not found' },
  { name: 'roll without a key', method: 'POST', url: '/api/account/keys/roll', auth: 'none', body: { id: UNKNOWN_UUID }, status: 401, error: 'Unauthorized' },
  { name: 'create key: expires_at in the past', method: 'POST', url: '/api/account/keys', auth: 'key', body: { name: 'k', expires_at: '2001-01-01T00:00:00Z' }, status: 422, error: INVALID_REQUEST },
  { name: 'create key: expires_at without a zone', method: 'POST', url: '/api/account/keys', auth: 'key', body: { name: 'k', expires_at: '2030-01-01T00:00:00' }, status: 422, error: INVALID_REQUEST },
  { name: 'create key: expires_at a number', method: 'POST', url: '/api/account/keys', auth: 'key', body: { name: 'k', expires_at: 1893456000000 }, status: 422, error: INVALID_REQUEST },

  // POST /api/jobs/bulk
  { name: 'GET bulk', method: 'GET', url: '/api/jobs/bulk', auth: 'key', status: 405, error: 'Method not allowed', allow: ['POST'] },
  { name: 'bulk without a key', method: 'POST', url: '/api/jobs/bulk', auth: 'none', body: multipart([{ name: 'type', value: 'gender' }]).payload, contentType: 'multipart/form-data; boundary=x', status: 401, error: 'Unauthorized' },
  { name: 'bulk with a JSON body', method: 'POST', url: '/api/jobs/bulk', auth: 'key', body: { type: 'gender' }, status: 415, error: 'Expected a multipart/form-data body' },
  { name: 'bulk with a text/plain body', method: 'POST', url: '/api/jobs/bulk', auth: 'key', body: CSV, contentType: 'text/plain', status: 415, error: 'Expected a multipart/form-data body' },
  multipartRow('bulk: type missing', [{ name: 'file', value: CSV, filename: 'a.csv' }], 422, 'type is required'),
  multipartRow('bulk: file missing', [{ name: 'type', value: 'gender' }], 422, 'file is required'),
  multipartRow('bulk: unknown type', [{ name: 'type', value: 'horoscope' }, { name: 'file', value: CSV, filename: 'a.csv' }], 422, /horoscope/),
  multipartRow('bulk: download_link not a boolean', [{ name: 'type', value: 'gender' }, { name: 'download_link', value: 'maybe' }, { name: 'file', value: CSV, filename: 'a.csv' }], 422, 'download_link must be true or false'),
  multipartRow('bulk: file in the wrong field', [{ name: 'type', value: 'gender' }, { name: 'upload', value: CSV, filename: 'a.csv' }], 422, 'send exactly one file, in the field named file'),
  multipartRow('bulk: two files', [{ name: 'type', value: 'gender' }, { name: 'file', value: CSV, filename: 'a.csv' }, { name: 'file', value: CSV, filename: 'b.csv' }], 422, 'send exactly one file, in the field named file'),
  { name: 'bulk: multipart with no boundary', method: 'POST', url: '/api/jobs/bulk', auth: 'key', body: 'garbage', contentType: 'multipart/form-data', status: 400, error: /./ },
  { name: 'bulk: multipart body with a different boundary', method: 'POST', url: '/api/jobs/bulk', auth: 'key', body: multipart([{ name: 'type', value: 'gender' }], 'other').payload, contentType: 'multipart/form-data; boundary=declared', status: 400, error: /./ },
  {
    name: 'bulk: multipart body cut off inside the file',
    method: 'POST',
    url: '/api/jobs/bulk',
    auth: 'key',
    body: '--b\r\nContent-Disposition: form-data; name="type"\r\n\r\ngender\r\n--b\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n\r\nemail\nx@example.com\n',
    contentType: 'multipart/form-data; boundary=b',
    status: 400,
    error: /./,
  },
  { name: 'bulk: Idempotency-Key over 255 characters', method: 'POST', url: '/api/jobs/bulk', auth: 'key', body: multipart([{ name: 'type', value: 'gender' }], 'b').payload, contentType: 'multipart/form-data; boundary=b', headers: { 'idempotency-key': 'k'.repeat(256) }, status: 422, error: 'Idempotency-Key must be 1 to 255 characters' },

  // /api/jobs and /api/jobs/{id}...
  { name: 'POST jobs list', method: 'POST', url: '/api/jobs', auth: 'key', status: 405, error: 'Method not allowed', allow: ['GET'] },
  { name: 'list without a key', method: 'GET', url: '/api/jobs', auth: 'none', status: 401, error: 'Unauthorized' },
  { name: 'list with an unknown key', method: 'GET', url: '/api/jobs', auth: 'wrong', status: 401, error: 'Unauthorized' },
  { name: 'list without a key, invalid query: auth comes first', method: 'GET', url: '/api/jobs?limit=500', auth: 'none', status: 401, error: 'Unauthorized' },
  { name: 'list: limit 0', method: 'GET', url: '/api/jobs?limit=0', auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'list: limit 101', method: 'GET', url: '/api/jobs?limit=101', auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'list: limit not a number', method: 'GET', url: '/api/jobs?limit=ten', auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'list: negative offset', method: 'GET', url: '/api/jobs?offset=-1', auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'list: unknown status', method: 'GET', url: '/api/jobs?status=exploded', auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'PATCH a job', method: 'PATCH', url: '/api/jobs/job_x', auth: 'key', status: 405, error: 'Method not allowed', allow: ['GET', 'DELETE'] },
  { name: 'delete: unknown job', method: 'DELETE', url: '/api/jobs/job_unknown', auth: 'key', status: 404, error: 'Job not found' },
  { name: 'delete without a key', method: 'DELETE', url: '/api/jobs/job_unknown', auth: 'none', status: 401, error: 'Unauthorized' },
  { name: 'delete: JSON over 64 KiB', method: 'DELETE', url: '/api/jobs/job_unknown', auth: 'key', body: OVERSIZED, contentType: JSON_TYPE, status: 413, error: 'Request body is too large' },
  { name: 'unknown job', method: 'GET', url: '/api/jobs/job_unknown', auth: 'key', status: 404, error: 'Job not found' },
  { name: 'job without a key', method: 'GET', url: '/api/jobs/job_unknown', auth: 'none', status: 401, error: 'Unauthorized' },
  { name: 'POST download', method: 'POST', url: '/api/jobs/job_x/download', auth: 'key', status: 405, error: 'Method not allowed', allow: ['GET'] },
  { name: 'download: unknown filter', method: 'GET', url: '/api/jobs/job_x/download?filter=some', auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'download: unknown format', method: 'GET', url: '/api/jobs/job_x/download?format=html', auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'download: unknown job', method: 'GET', url: '/api/jobs/job_unknown/download', auth: 'key', status: 404, error: 'Job not found' },
  { name: 'download without a key', method: 'GET', url: '/api/jobs/job_unknown/download', auth: 'none', status: 401, error: 'Unauthorized' },
  { name: 'GET cancel', method: 'GET', url: '/api/jobs/job_x/cancel', auth: 'key', status: 405, error: 'Method not allowed', allow: ['POST'] },
  { name: 'cancel: unknown job', method: 'POST', url: '/api/jobs/job_unknown/cancel', auth: 'key', status: 404, error: 'Job not found' },
  { name: 'cancel: malformed JSON body', method: 'POST', url: '/api/jobs/job_unknown/cancel', auth: 'key', body: '{', contentType: JSON_TYPE, status: 400, error: 'Malformed JSON body' },
  { name: 'cancel: JSON over 64 KiB', method: 'POST', url: '/api/jobs/job_unknown/cancel', auth: 'key', body: OVERSIZED, contentType: JSON_TYPE, status: 413, error: 'Request body is too large' },
  { name: 'cancel without a key', method: 'POST', url: '/api/jobs/job_unknown/cancel', auth: 'none', status: 401, error: 'Unauthorized' },
  { name: 'GET retry-failed', method: 'GET', url: '/api/jobs/job_x/retry-failed', auth: 'key', status: 405, error: 'Method not allowed', allow: ['POST'] },
  { name: 'retry-failed: unknown job', method: 'POST', url: '/api/jobs/job_unknown/retry-failed', auth: 'key', status: 404, error: 'Job not found' },
  { name: 'retry-failed without a key', method: 'POST', url: '/api/jobs/job_unknown/retry-failed', auth: 'none', status: 401, error: 'Unauthorized' },
  { name: 'GET resume', method: 'GET', url: '/api/jobs/job_x/resume', auth: 'key', status: 405, error: 'Method not allowed', allow: ['POST'] },
  { name: 'resume: unknown job', method: 'POST', url: '/api/jobs/job_unknown/resume', auth: 'key', status: 404, error: 'Job not found' },
  { name: 'resume: JSON over 64 KiB', method: 'POST', url: '/api/jobs/job_unknown/resume', auth: 'key', body: OVERSIZED, contentType: JSON_TYPE, status: 413, error: 'Request body is too large' },
  { name: 'resume without a key', method: 'POST', url: '/api/jobs/job_unknown/resume', auth: 'none', status: 401, error: 'Unauthorized' },
  // GET /api/account
  { name: 'POST account', method: 'POST', url: '/api/account', auth: 'key', status: 405, error: 'Method not allowed', allow: ['GET'] },
  { name: 'account without a key', method: 'GET', url: '/api/account', auth: 'none', status: 401, error: 'Unauthorized' },
  { name: 'account with an unknown key', method: 'GET', url: '/api/account', auth: 'wrong', status: 401, error: 'Unauthorized' },
  ...['1.5', '-0.1', 'some', '5%'].map((rate) =>
    multipartRow(`bulk: max_error_rate "${rate}"`, [{ name: 'type', value: 'gender' }, { name: 'max_error_rate', value: rate }, { name: 'file', filename: 'a.csv', value: CSV }], 422, /max_error_rate must be a number from 0 to 1/),
  ),

  // Gender, both paths: the spec's own texts
  ...GENDER_PATHS.flatMap((url): Row[] => [
    ...(['GET', 'PUT', 'PATCH', 'DELETE'] as const).map(
      (method): Row => ({ name: `gender ${method}`, method, url, auth: 'key', status: 405, error: 'Only POST method is allowed', allow: ['POST'] }),
    ),
    { name: 'gender GET without a key', method: 'GET', url, auth: 'none', status: 405, error: 'Only POST method is allowed', allow: ['POST'] },
    { name: 'gender: malformed JSON', method: 'POST', url, auth: 'key', body: '{"email": "a@', contentType: JSON_TYPE, status: 400, error: 'Invalid request body' },
    { name: 'gender: empty JSON body', method: 'POST', url, auth: 'key', body: '', contentType: JSON_TYPE, status: 400, error: 'Invalid request body' },
    { name: 'gender: JSON array', method: 'POST', url, auth: 'key', body: '[]', contentType: JSON_TYPE, status: 400, error: 'Invalid request body' },
    { name: 'gender: JSON string', method: 'POST', url, auth: 'key', body: '"maria@example.com"', contentType: JSON_TYPE, status: 400, error: 'Invalid request body' },
    { name: 'gender: email missing', method: 'POST', url, auth: 'key', body: {}, status: 400, error: 'Invalid request body' },
    { name: 'gender: email a number', method: 'POST', url, auth: 'key', body: { email: 7 }, status: 400, error: 'Invalid request body' },
    { name: 'gender: email an array', method: 'POST', url, auth: 'key', body: { email: ['maria@example.com'] }, status: 400, error: 'Invalid request body' },
    { name: 'gender: email malformed', method: 'POST', url, auth: 'key', body: { email: 'maria@' }, status: 400, error: 'Invalid email address' },
    { name: 'gender: email empty', method: 'POST', url, auth: 'key', body: { email: '' }, status: 400, error: 'Invalid email address' },
    { name: 'gender: text/plain body (not JSON)', method: 'POST', url, auth: 'key', body: '{"email":"maria@example.com"}', contentType: 'text/plain', status: 400, error: 'Invalid request body' },
    { name: 'gender: form-encoded body (not JSON)', method: 'POST', url, auth: 'key', body: 'email=maria%40example.com', contentType: 'application/x-www-form-urlencoded', status: 400, error: 'Invalid request body' },
    { name: 'gender: JSON over 64 KiB', method: 'POST', url, auth: 'key', body: OVERSIZED, contentType: JSON_TYPE, status: 413, error: 'Request body is too large' },
    { name: 'gender: no key', method: 'POST', url, auth: 'none', body: { email: 'maria@example.com' }, status: 401, error: 'API key required' },
    { name: 'gender: unknown key', method: 'POST', url, auth: 'wrong', body: { email: 'maria@example.com' }, status: 401, error: 'bad key' },
    { name: 'gender: no key and an invalid body: auth comes first', method: 'POST', url, auth: 'none', body: '[]', contentType: JSON_TYPE, status: 401, error: 'API key required' },
  ]),
  // Email breaches
  { name: 'email breaches: email missing', method: 'POST', url: '/api/lookup/email/breaches', auth: 'key', body: {}, status: 422, error: INVALID_REQUEST },
  { name: 'email breaches: email a number', method: 'POST', url: '/api/lookup/email/breaches', auth: 'key', body: { email: 7 }, status: 422, error: INVALID_REQUEST },
  { name: 'email breaches: email malformed', method: 'POST', url: '/api/lookup/email/breaches', auth: 'key', body: { email: 'maria@' }, status: 400, error: 'Invalid email address' },
  { name: 'email breaches: malformed JSON', method: 'POST', url: '/api/lookup/email/breaches', auth: 'key', body: '{"email":', contentType: JSON_TYPE, status: 400, error: 'Malformed JSON body' },
  { name: 'email breaches: no key', method: 'POST', url: '/api/lookup/email/breaches', auth: 'none', body: { email: 'maria@example.com' }, status: 401, error: 'Unauthorized' },
  { name: 'GET email breaches', method: 'GET', url: '/api/lookup/email/breaches', auth: 'key', status: 405, error: 'Method not allowed', allow: ['POST'] },
  // Email validity (a malformed address is an answer, invalid_syntax, not an error)
  { name: 'email validity: email missing', method: 'POST', url: '/api/lookup/email/validity', auth: 'key', body: {}, status: 422, error: INVALID_REQUEST },
  { name: 'email validity: email a number', method: 'POST', url: '/api/lookup/email/validity', auth: 'key', body: { email: 7 }, status: 422, error: INVALID_REQUEST },
  { name: 'email validity: two addresses', method: 'POST', url: '/api/lookup/email/validity', auth: 'key', body: { email: 'a@example.com, b@example.com' }, status: 400, error: 'Invalid email address' },
  { name: 'email validity: malformed JSON', method: 'POST', url: '/api/lookup/email/validity', auth: 'key', body: '{"email":', contentType: JSON_TYPE, status: 400, error: 'Malformed JSON body' },
  { name: 'email validity: no key', method: 'POST', url: '/api/lookup/email/validity', auth: 'none', body: { email: 'maria@example.com' }, status: 401, error: 'Unauthorized' },
  { name: 'GET email validity', method: 'GET', url: '/api/lookup/email/validity', auth: 'key', status: 405, error: 'Method not allowed', allow: ['POST'] },
  // Email enrich (a key or a session) and compliance
  { name: 'email enrich: email missing', method: 'POST', url: '/api/email/validity/enrich', auth: 'key', body: {}, status: 422, error: INVALID_REQUEST },
  { name: 'email enrich: not an address', method: 'POST', url: '/api/email/validity/enrich', auth: 'session', body: { email: 'not-an-address' }, status: 400, error: 'Invalid email address' },
  { name: 'email enrich: malformed JSON', method: 'POST', url: '/api/email/validity/enrich', auth: 'key', body: '{"email":', contentType: JSON_TYPE, status: 400, error: 'Malformed JSON body' },
  { name: 'email enrich: a wrong key', method: 'POST', url: '/api/email/validity/enrich', auth: 'wrong', body: { email: 'maria@example.com' }, status: 401, error: 'Unauthorized' },
  { name: 'GET email enrich', method: 'GET', url: '/api/email/validity/enrich', auth: 'key', status: 405, error: 'Method not allowed', allow: ['POST'] },
  { name: 'email compliance: email missing', method: 'POST', url: '/api/lookup/email/compliance', auth: 'key', body: {}, status: 422, error: INVALID_REQUEST },
  { name: 'email compliance: email a list', method: 'POST', url: '/api/lookup/email/compliance', auth: 'key', body: { email: ['maria@example.com'] }, status: 422, error: INVALID_REQUEST },
  { name: 'email compliance: not an address', method: 'POST', url: '/api/lookup/email/compliance', auth: 'key', body: { email: 'not-an-address' }, status: 400, error: 'Invalid email address' },
  { name: 'email compliance: no key', method: 'POST', url: '/api/lookup/email/compliance', auth: 'none', body: { email: 'maria@example.com' }, status: 401, error: 'Unauthorized' },
  // Exposed credentials: in text, and in a repository's history
  { name: 'exposed keys: content missing', method: 'POST', url: '/api/lookup/breaches/exposed-keys', auth: 'key', body: {}, status: 422, error: INVALID_REQUEST },
  { name: 'exposed keys: an unknown engine type', method: 'POST', url: '/api/lookup/breaches/exposed-keys', auth: 'key', body: { content: 'x', type: 7 }, status: 422, error: INVALID_REQUEST },
  { name: 'exposed keys: content over 256 KB', method: 'POST', url: '/api/lookup/breaches/exposed-keys', auth: 'key', body: { content: 'x'.repeat(256 * 1024 + 1) }, status: 413, error: /^content is larger than/ },
  { name: 'exposed keys: malformed JSON', method: 'POST', url: '/api/lookup/breaches/exposed-keys', auth: 'key', body: '{"content":', contentType: JSON_TYPE, status: 400, error: 'Malformed JSON body' },
  { name: 'exposed keys: no key', method: 'POST', url: '/api/lookup/breaches/exposed-keys', auth: 'none', body: { content: 'x' }, status: 401, error: 'Unauthorized' },
  { name: 'repository scan: url missing', method: 'POST', url: '/api/lookup/breaches/github', auth: 'key', body: {}, status: 422, error: INVALID_REQUEST },
  { name: 'repository scan: not a URL', method: 'POST', url: '/api/lookup/breaches/github', auth: 'key', body: { url: 'not a url' }, status: 422, error: 'url is not a valid URL' },
  { name: 'repository scan: ftp', method: 'POST', url: '/api/lookup/breaches/github', auth: 'key', body: { url: 'ftp://example.com/a/b.git' }, status: 422, error: 'url must use https' },
  { name: 'repository scan: credentials in the url', method: 'POST', url: '/api/lookup/breaches/github', auth: 'key', body: { url: 'https://u:p@example.com/a/b.git' }, status: 422, error: /^url must not carry credentials/ },
  { name: 'repository scan: an unknown scan', method: 'GET', url: '/api/lookup/breaches/github/no-such-scan', auth: 'key', status: 404, error: 'No such scan' },
  { name: 'repository scan: no key', method: 'GET', url: '/api/lookup/breaches/github/no-such-scan', auth: 'none', status: 401, error: 'Unauthorized' },
  // Password breaches (k-anonymity) and the range protocol
  { name: 'password breaches: neither password nor sha1', method: 'POST', url: '/api/lookup/email/password/breaches', auth: 'key', body: {}, status: 422, error: 'Invalid request: give exactly one of password and sha1' },
  { name: 'password breaches: both password and sha1', method: 'POST', url: '/api/lookup/email/password/breaches', auth: 'key', body: { password: 'hunter2', sha1: 'F3BBBD66A63D4BF1747940578EC3D0103530E21D' }, status: 422, error: 'Invalid request: give exactly one of password and sha1' },
  { name: 'password breaches: sha1 not 40 hex digits', method: 'POST', url: '/api/lookup/email/password/breaches', auth: 'key', body: { sha1: 'xyz' }, status: 400, error: 'A SHA-1 is 40 hex digits' },
  { name: 'password breaches: malformed JSON', method: 'POST', url: '/api/lookup/email/password/breaches', auth: 'key', body: '{"password":', contentType: JSON_TYPE, status: 400, error: 'Malformed JSON body' },
  { name: 'password breaches: no key', method: 'POST', url: '/api/lookup/email/password/breaches', auth: 'none', body: { password: 'hunter2' }, status: 401, error: 'Unauthorized' },
  { name: 'GET password breaches', method: 'GET', url: '/api/lookup/email/password/breaches', auth: 'key', status: 405, error: 'Method not allowed', allow: ['POST'] },
  { name: 'range: prefix not 5 hex digits', method: 'GET', url: '/api/range/XYZ12', auth: 'key', status: 400, error: 'A range prefix is 5 hex digits' },
  { name: 'range: no key', method: 'GET', url: '/api/range/ABCDE', auth: 'none', status: 401, error: 'Unauthorized' },
  { name: 'POST range', method: 'POST', url: '/api/range/ABCDE', auth: 'key', body: {}, status: 405, error: 'Method not allowed', allow: ['GET'] },
  // Phone
  { name: 'agent phone: no query', method: 'POST', url: '/api/agent/phone-breaches', auth: 'key', body: {}, status: 400, error: /^query is required/ },
  { name: 'agent phone: a number without country code', method: 'POST', url: '/api/agent/phone-breaches', auth: 'key', body: { query: '030 1234567' }, status: 400, error: /^Invalid phone number/ },
  { name: 'agent phone: malformed JSON', method: 'POST', url: '/api/agent/phone-breaches', auth: 'key', body: '{"query":', contentType: JSON_TYPE, status: 400, error: 'Malformed JSON body' },
  { name: 'phone jobs: unknown feature', method: 'POST', url: '/api/phone-jobs', auth: 'key', body: { feature: 'x', numbers: ['+14155552671'] }, status: 422, error: INVALID_REQUEST },
  ...[1.5, -0.1, '0.1', null].map((rate): Row => ({ name: `phone jobs: max_error_rate ${JSON.stringify(rate)}`, method: 'POST', url: '/api/phone-jobs', auth: 'key', body: { feature: 'breaches', numbers: ['+14155552671'], max_error_rate: rate }, status: 422, error: /max_error_rate must be a number from 0 to 1/ })),
  { name: 'phone jobs: body is an array', method: 'POST', url: '/api/phone-jobs', auth: 'key', body: '[]', contentType: JSON_TYPE, status: 422, error: INVALID_REQUEST },
  { name: 'phone jobs: progress without id', method: 'GET', url: '/api/phone-jobs', auth: 'key', status: 400, error: 'id is required' },
  { name: 'phone jobs: unknown id', method: 'GET', url: `/api/phone-jobs?id=${UNKNOWN_UUID}`, auth: 'key', status: 404, error: 'Job not found' },
  { name: 'phone jobs resume: no id', method: 'POST', url: '/api/phone-jobs/resume', auth: 'key', status: 400, error: 'id is required' },
  { name: 'phone jobs resume: unknown id', method: 'POST', url: `/api/phone-jobs/resume?id=${UNKNOWN_UUID}`, auth: 'key', status: 404, error: 'Job not found' },
  { name: 'phone jobs resume: id over 100 characters', method: 'POST', url: `/api/phone-jobs/resume?id=${'x'.repeat(101)}`, auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'GET phone jobs resume', method: 'GET', url: '/api/phone-jobs/resume?id=x', auth: 'key', status: 405, error: 'Method not allowed', allow: ['POST'] },
  // Company
  { name: 'agent company: no query', method: 'POST', url: '/api/agent/company', auth: 'key', body: {}, status: 400, error: /^query is required/ },
  { name: 'agent company: query a number', method: 'POST', url: '/api/agent/company', auth: 'key', body: { query: 7 }, status: 400, error: /^query is required/ },
  { name: 'agent company: query over 200 characters', method: 'POST', url: '/api/agent/company', auth: 'key', body: { query: 'x'.repeat(201) }, status: 400, error: /^Invalid query/ },
  { name: 'agent company: malformed JSON', method: 'POST', url: '/api/agent/company', auth: 'key', body: '{"query":', contentType: JSON_TYPE, status: 400, error: 'Malformed JSON body' },
  { name: 'agent company: wrong method', method: 'GET', url: '/api/agent/company', auth: 'key', status: 405, error: 'Method not allowed', allow: ['POST'] },
  { name: 'bulk company search: no queries', method: 'POST', url: '/api/bulk-company-search', auth: 'key', body: {}, status: 422, error: INVALID_REQUEST },
  { name: 'bulk company search: an empty list', method: 'POST', url: '/api/bulk-company-search', auth: 'key', body: { queries: [] }, status: 422, error: INVALID_REQUEST },
  { name: 'bulk company search: 101 queries', method: 'POST', url: '/api/bulk-company-search', auth: 'key', body: { queries: Array(101).fill('Acme') }, status: 422, error: INVALID_REQUEST },
  { name: 'bulk company search: queries not a list', method: 'POST', url: '/api/bulk-company-search', auth: 'key', body: { queries: 'Acme' }, status: 422, error: INVALID_REQUEST },
  { name: 'bulk company search: a blank query', method: 'POST', url: '/api/bulk-company-search', auth: 'key', body: { queries: ['Acme', ' '] }, status: 422, error: INVALID_REQUEST },
  { name: 'agent ip network: no ip', method: 'POST', url: '/api/agent/ip-network', auth: 'key', body: {}, status: 400, error: /^ip is required/ },
  { name: 'agent ip network: not an address', method: 'POST', url: '/api/agent/ip-network', auth: 'key', body: { ip: '10.0.0.0/8' }, status: 400, error: /^Invalid ip/ },
  { name: 'agent ip network: malformed JSON', method: 'POST', url: '/api/agent/ip-network', auth: 'key', body: '{"ip":', contentType: JSON_TYPE, status: 400, error: 'Malformed JSON body' },
  { name: 'agent ip network: wrong method', method: 'GET', url: '/api/agent/ip-network', auth: 'key', status: 405, error: 'Method not allowed', allow: ['POST'] },
  { name: 'bulk ip search: no queries', method: 'POST', url: '/api/bulk-ip-search', auth: 'key', body: {}, status: 422, error: INVALID_REQUEST },
  { name: 'bulk ip search: an empty list', method: 'POST', url: '/api/bulk-ip-search', auth: 'key', body: { queries: [] }, status: 422, error: INVALID_REQUEST },
  { name: 'bulk ip search: 101 addresses', method: 'POST', url: '/api/bulk-ip-search', auth: 'key', body: { queries: Array(101).fill('10.0.0.1') }, status: 422, error: INVALID_REQUEST },
  { name: 'bulk ip search: queries not a list', method: 'POST', url: '/api/bulk-ip-search', auth: 'key', body: { queries: '10.0.0.1' }, status: 422, error: INVALID_REQUEST },
  { name: 'agent domain: no domain', method: 'POST', url: '/api/agent/domain', auth: 'key', body: {}, status: 400, error: /^domain is required/ },
  { name: 'agent domain: not a domain', method: 'POST', url: '/api/agent/domain', auth: 'key', body: { domain: 'not a domain' }, status: 400, error: /^Invalid domain/ },
  { name: 'agent domain: malformed JSON', method: 'POST', url: '/api/agent/domain', auth: 'key', body: '{"domain":', contentType: JSON_TYPE, status: 400, error: 'Malformed JSON body' },
  { name: 'agent domain: wrong method', method: 'GET', url: '/api/agent/domain', auth: 'key', status: 405, error: 'Method not allowed', allow: ['POST'] },
  { name: 'bulk domain search: no queries', method: 'POST', url: '/api/bulk-domain-search', auth: 'key', body: {}, status: 422, error: INVALID_REQUEST },
  { name: 'bulk domain search: 101 domains', method: 'POST', url: '/api/bulk-domain-search', auth: 'key', body: { queries: Array(101).fill('example.com') }, status: 422, error: INVALID_REQUEST },
  { name: 'bulk company search: malformed JSON', method: 'POST', url: '/api/bulk-company-search', auth: 'key', body: '{"queries":', contentType: JSON_TYPE, status: 400, error: 'Malformed JSON body' },
  { name: 'bulk company search: no key', method: 'POST', url: '/api/bulk-company-search', auth: 'none', body: { queries: ['Acme'] }, status: 401, error: 'Unauthorized' },
  { name: 'bulk company search: wrong method', method: 'GET', url: '/api/bulk-company-search', auth: 'key', status: 405, error: 'Method not allowed', allow: ['POST'] },
  // Webhooks answer in their own envelope: {success: false, result: {code}, message}.
  { name: 'webhooks: no key', method: 'GET', url: '/api/webhooks', auth: 'none', status: 401, error: 'Unauthorized' },
  { name: 'webhooks: malformed JSON', method: 'POST', url: '/api/webhooks', auth: 'key', body: '{"url":', contentType: JSON_TYPE, status: 400, error: 'Malformed JSON body' },
  { name: 'webhooks: body is an array', method: 'POST', url: '/api/webhooks', auth: 'key', body: '[]', contentType: JSON_TYPE, status: 422, error: INVALID_REQUEST },
  { name: 'webhooks: no url', method: 'POST', url: '/api/webhooks', auth: 'key', body: {}, status: 400, error: 'url is required' },
  { name: 'webhooks: a url that is not https', method: 'POST', url: '/api/webhooks', auth: 'key', body: { url: 'http://example.com/x' }, status: 422, error: /https/ },
  { name: 'webhooks: events not a list', method: 'POST', url: '/api/webhooks', auth: 'key', body: { url: 'https://example.com/x', events: 'bulk.completed' }, status: 422, error: INVALID_REQUEST },
  { name: 'webhooks: limit over 100', method: 'GET', url: '/api/webhooks?limit=500', auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'webhooks: wrong method', method: 'PATCH', url: '/api/webhooks', auth: 'key', status: 405, error: 'Method not allowed', allow: ['GET', 'POST', 'PUT', 'DELETE'] },
  { name: 'webhooks: update without id', method: 'PUT', url: '/api/webhooks', auth: 'key', body: { url: 'https://example.com/x' }, status: 400, error: 'id is required' },
  { name: 'webhooks: update of an unknown id', method: 'PUT', url: '/api/webhooks', auth: 'key', body: { id: UNKNOWN_UUID, url: 'https://example.com/x' }, status: 404, error: 'Webhook not found' },
  { name: 'webhooks: delete without any id', method: 'DELETE', url: '/api/webhooks', auth: 'key', body: {}, status: 400, error: 'id is required' },
  { name: 'webhooks: unknown id', method: 'GET', url: `/api/webhooks/${UNKNOWN_UUID}`, auth: 'key', status: 404, error: 'Webhook not found' },
  { name: 'webhooks: delete of an unknown id', method: 'DELETE', url: `/api/webhooks/${UNKNOWN_UUID}`, auth: 'key', status: 404, error: 'Webhook not found' },
  { name: 'webhooks: test without id', method: 'POST', url: '/api/webhooks/test', auth: 'key', body: {}, status: 400, error: 'id is required' },
  { name: 'webhooks: test with a numeric id', method: 'POST', url: '/api/webhooks/test', auth: 'key', body: { id: 7 }, status: 422, error: INVALID_REQUEST },
  { name: 'webhooks: deliveries without webhook_id', method: 'GET', url: '/api/webhooks/deliveries', auth: 'key', status: 400, error: 'webhook_id is required' },
  { name: 'webhooks: rotate the secret of an unknown webhook', method: 'POST', url: `/api/webhooks/${UNKNOWN_UUID}/rotate-secret`, auth: 'key', status: 404, error: 'Webhook not found' },
  { name: 'webhooks: rotate with an overlap over a week', method: 'POST', url: `/api/webhooks/${UNKNOWN_UUID}/rotate-secret`, auth: 'key', body: { overlap_seconds: 604801 }, status: 422, error: INVALID_REQUEST },
  { name: 'webhooks: rotate with a fractional overlap', method: 'POST', url: `/api/webhooks/${UNKNOWN_UUID}/rotate-secret`, auth: 'key', body: { overlap_seconds: 1.5 }, status: 422, error: INVALID_REQUEST },
  { name: 'webhooks: rotate with a body that is an array', method: 'POST', url: `/api/webhooks/${UNKNOWN_UUID}/rotate-secret`, auth: 'key', body: '[1]', contentType: JSON_TYPE, status: 422, error: INVALID_REQUEST },
  { name: 'webhooks: rotate without a key', method: 'POST', url: `/api/webhooks/${UNKNOWN_UUID}/rotate-secret`, auth: 'none', status: 401, error: 'Unauthorized' },
  { name: 'webhooks: GET rotate-secret', method: 'GET', url: `/api/webhooks/${UNKNOWN_UUID}/rotate-secret`, auth: 'key', status: 405, error: 'Method not allowed', allow: ['POST'] },

  // Monitors and target lists
  { name: 'monitors: a spec type without a lookup', method: 'POST', url: '/api/monitors', auth: 'key', body: { name: 'x', type: 'darkweb', frequency: 'weekly' }, status: 422, error: /monitor type darkweb is not supported/ },
  { name: 'monitors: frequency daily', method: 'POST', url: '/api/monitors', auth: 'key', body: { name: 'x', type: 'email', frequency: 'daily' }, status: 422, error: INVALID_REQUEST },
  { name: 'monitors: limit over 100', method: 'GET', url: '/api/monitors?limit=500', auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'monitors: an unknown monitor', method: 'GET', url: `/api/monitors/${UNKNOWN_UUID}`, auth: 'key', status: 404, error: 'Monitor not found' },
  { name: 'monitors: an update naming nothing', method: 'PATCH', url: `/api/monitors/${UNKNOWN_UUID}`, auth: 'key', body: {}, status: 422, error: INVALID_REQUEST },
  { name: 'monitors: pause an unknown monitor', method: 'POST', url: `/api/monitors/${UNKNOWN_UUID}/pause`, auth: 'key', status: 404, error: 'Monitor not found' },
  { name: 'monitors: resume with PUT', method: 'PUT', url: `/api/monitors/${UNKNOWN_UUID}/resume`, auth: 'key', status: 405, error: 'Method not allowed', allow: ['POST'] },
  { name: 'monitors: targets of an unknown monitor', method: 'POST', url: `/api/monitors/${UNKNOWN_UUID}/targets`, auth: 'key', body: { targets: ['a@example.com'] }, status: 404, error: 'Monitor not found' },
  { name: 'monitors: remove targets without targets', method: 'DELETE', url: `/api/monitors/${UNKNOWN_UUID}/targets`, auth: 'key', body: {}, status: 422, error: INVALID_REQUEST },
  { name: 'monitors: run an unknown monitor', method: 'POST', url: `/api/agent/monitors/${UNKNOWN_UUID}/run`, auth: 'key', status: 404, error: 'Monitor not found' },
  { name: 'workflows: no key', method: 'POST', url: '/api/workflows', auth: 'none', body: { name: 'w', steps: [{ id: 'a', type: 'delay', config: { seconds: 1 } }] }, status: 401, error: 'Unauthorized' },
  { name: 'workflows: no steps', method: 'POST', url: '/api/workflows', auth: 'key', body: { name: 'w' }, status: 422, error: INVALID_REQUEST },
  { name: 'workflows: a step type without a lookup', method: 'POST', url: '/api/workflows', auth: 'key', body: { name: 'w', steps: [{ id: 'a', type: 'ip_lookup', config: {} }] }, status: 422, error: /no lookup for ip_lookup/ },
  { name: 'workflows: limit over 100', method: 'GET', url: '/api/workflows?limit=500', auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'workflow runs: page 0', method: 'GET', url: '/api/workflows/runs?page=0', auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'workflow logs: no run_id', method: 'GET', url: '/api/workflows/logs', auth: 'key', status: 400, error: 'run_id is required' },
  { name: 'workflow logs: an unknown run', method: 'GET', url: `/api/workflows/logs?run_id=${UNKNOWN_UUID}`, auth: 'key', status: 404, error: `no workflow run ${UNKNOWN_UUID}` },
  { name: 'workflow run: an unknown run', method: 'GET', url: `/api/workflow-runs/${UNKNOWN_UUID}`, auth: 'key', status: 404, error: `no workflow run ${UNKNOWN_UUID}` },
  { name: 'workflow run: cancel an unknown run', method: 'POST', url: `/api/workflow-runs/${UNKNOWN_UUID}/cancel`, auth: 'key', status: 404, error: `no workflow run ${UNKNOWN_UUID}` },
  { name: 'workflow run: redrive an unknown run', method: 'POST', url: `/api/workflow-runs/${UNKNOWN_UUID}/redrive`, auth: 'key', status: 404, error: `no workflow run ${UNKNOWN_UUID}` },
  { name: 'workflow run: rerun an unknown run', method: 'POST', url: `/api/workflow-runs/${UNKNOWN_UUID}/rerun`, auth: 'key', body: { from_step: 'a' }, status: 404, error: `no workflow run ${UNKNOWN_UUID}` },
  { name: 'workflow secrets: no key', method: 'GET', url: '/api/workflow-secrets', auth: 'none', status: 401, error: 'Unauthorized' },
  { name: 'workflow secrets: a name that is no name', method: 'PUT', url: '/api/workflow-secrets/9lives', auth: 'key', body: { value: 'x' }, status: 422, error: INVALID_REQUEST },
  { name: 'workflow secrets: an empty value', method: 'PUT', url: '/api/workflow-secrets/API_TOKEN', auth: 'key', body: { value: '' }, status: 422, error: INVALID_REQUEST },
  { name: 'workflow secrets: delete an unknown secret', method: 'DELETE', url: '/api/workflow-secrets/NOPE', auth: 'key', status: 404, error: 'no workflow secret NOPE' },
  { name: 'workflow secrets: delete a name that is no name', method: 'DELETE', url: '/api/workflow-secrets/a-b', auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'workflows: a header referencing an unknown secret', method: 'POST', url: '/api/workflows', auth: 'key', body: { name: 'w', steps: [{ id: 'a', type: 'webhook', config: { webhook_id: 'wh', headers: { authorization: 'Bearer {{secrets.MISSING}}' } } }] }, status: 422, error: /no secret MISSING/ },
  { name: 'workflows: a header Sluice sets itself', method: 'POST', url: '/api/workflows', auth: 'key', body: { name: 'w', steps: [{ id: 'a', type: 'webhook', config: { webhook_id: 'wh', headers: { 'Idempotency-Key': 'x' } } }] }, status: 422, error: /is set by Sluice/ },
  { name: 'workflow templates: no key', method: 'GET', url: '/api/workflow-templates', auth: 'none', status: 401, error: 'Unauthorized' },
  { name: 'workflow templates: clone an unknown template', method: 'POST', url: '/api/workflow-templates/nope/clone', auth: 'key', status: 404, error: 'no workflow template nope' },
  { name: 'workflow templates: clone with an unknown status', method: 'POST', url: '/api/workflow-templates/email_gender_segment/clone', auth: 'key', body: { status: 'running' }, status: 422, error: INVALID_REQUEST },
  { name: 'workflow run: rerun without from_step', method: 'POST', url: `/api/workflow-runs/${UNKNOWN_UUID}/rerun`, auth: 'key', body: {}, status: 422, error: INVALID_REQUEST },
  { name: 'workflow: an unknown workflow', method: 'GET', url: `/api/workflows/${UNKNOWN_UUID}`, auth: 'key', status: 404, error: `no workflow ${UNKNOWN_UUID}` },
  { name: 'workflow: update an unknown workflow', method: 'PUT', url: `/api/workflows/${UNKNOWN_UUID}`, auth: 'key', body: { name: 'w', steps: [{ id: 'a', type: 'delay', config: { seconds: 1 } }] }, status: 404, error: `no workflow ${UNKNOWN_UUID}` },
  { name: 'workflow: update with an unknown field', method: 'PUT', url: `/api/workflows/${UNKNOWN_UUID}`, auth: 'key', body: { name: 'w', steps: [], colour: 'red' }, status: 422, error: INVALID_REQUEST },
  { name: 'workflow: delete an unknown workflow', method: 'DELETE', url: `/api/workflows/${UNKNOWN_UUID}`, auth: 'key', status: 404, error: `no workflow ${UNKNOWN_UUID}` },
  { name: 'workflow: run an unknown workflow', method: 'POST', url: `/api/workflows/${UNKNOWN_UUID}/run`, auth: 'key', body: { input: {} }, status: 404, error: `no workflow ${UNKNOWN_UUID}` },
  { name: 'workflow: ingest token of an unknown workflow', method: 'POST', url: `/api/workflows/${UNKNOWN_UUID}/ingest-token`, auth: 'key', status: 404, error: `no workflow ${UNKNOWN_UUID}` },
  { name: 'workflow: revoke the token of an unknown workflow', method: 'DELETE', url: `/api/workflows/${UNKNOWN_UUID}/ingest-token`, auth: 'key', status: 404, error: `no workflow ${UNKNOWN_UUID}` },
  { name: 'ingest: an unknown token', method: 'POST', url: '/api/ingest/workflows/wfi_nothing', auth: 'none', body: { email: 'a@example.com' }, status: 404, error: 'Not found' },
  { name: 'ingest: not JSON', method: 'POST', url: '/api/ingest/workflows/wfi_nothing', auth: 'none', body: 'email=a', contentType: 'text/plain', status: 415, error: 'the ingest URL takes application/json only' },
  { name: 'ingest: a JSON array', method: 'POST', url: '/api/ingest/workflows/wfi_nothing', auth: 'none', body: '[1]', contentType: JSON_TYPE, status: 422, error: INVALID_REQUEST },
  { name: 'ingest: a body over 64 KiB', method: 'POST', url: '/api/ingest/workflows/wfi_nothing', auth: 'none', body: OVERSIZED, contentType: JSON_TYPE, status: 413, error: 'Request body is too large' },
  { name: 'monitoring targets: an unknown type', method: 'GET', url: '/api/monitoring/targets?type=fax', auth: 'key', status: 422, error: /unknown monitor type/ },
  { name: 'monitor results: an unknown monitor', method: 'GET', url: `/api/monitors/${UNKNOWN_UUID}/runs/${UNKNOWN_UUID}/results`, auth: 'key', status: 404, error: 'Monitor not found' },
  { name: 'monitor results: changes_only not a boolean', method: 'GET', url: `/api/monitors/${UNKNOWN_UUID}/runs/${UNKNOWN_UUID}/results?changes_only=maybe`, auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'monitor results CSV: an unknown monitor', method: 'GET', url: `/api/monitors/${UNKNOWN_UUID}/runs/${UNKNOWN_UUID}/results/download`, auth: 'key', status: 404, error: 'Monitor not found' },
  { name: 'monitor results CSV: POST', method: 'POST', url: `/api/monitors/${UNKNOWN_UUID}/runs/${UNKNOWN_UUID}/results/download`, auth: 'key', status: 405, error: 'Method not allowed', allow: ['GET'] },
  { name: 'agent monitor runs: an unknown monitor', method: 'GET', url: `/api/agent/monitors/${UNKNOWN_UUID}/runs`, auth: 'key', status: 404, error: 'Monitor not found' },
  { name: 'agent monitor runs: a negative offset', method: 'GET', url: `/api/agent/monitors/${UNKNOWN_UUID}/runs?offset=-1`, auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'agent run results: limit 0', method: 'GET', url: `/api/agent/monitors/${UNKNOWN_UUID}/runs/${UNKNOWN_UUID}/results?limit=0`, auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'monitoring runs: an unknown type', method: 'GET', url: '/api/agent/monitoring/runs?type=fax', auth: 'key', status: 422, error: /unknown monitor type/ },
  { name: 'monitoring results: a spec type without a lookup', method: 'GET', url: '/api/agent/monitoring/results?type=darkweb', auth: 'key', status: 422, error: /monitor type darkweb is not supported/ },
  { name: 'monitoring results: changes_only not a boolean', method: 'GET', url: '/api/agent/monitoring/results?changes_only=2', auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'lists: no targets', method: 'POST', url: '/api/lists', auth: 'key', body: { name: 'x', type: 'email' }, status: 422, error: INVALID_REQUEST },
  { name: 'credit alert: threshold 0', method: 'PUT', url: '/api/account/credit-alert', auth: 'key', body: { threshold: 0 }, status: 422, error: INVALID_REQUEST },
  { name: 'credit alert: threshold not a number', method: 'PUT', url: '/api/account/credit-alert', auth: 'key', body: { threshold: 'low' }, status: 422, error: INVALID_REQUEST },
  { name: 'credit alert: no threshold', method: 'PUT', url: '/api/account/credit-alert', auth: 'key', body: {}, status: 422, error: INVALID_REQUEST },
  { name: 'lists: an unknown list', method: 'GET', url: `/api/lists/${UNKNOWN_UUID}`, auth: 'key', status: 404, error: 'List not found' },
  { name: 'list targets: an unknown list', method: 'GET', url: `/api/lists/${UNKNOWN_UUID}/targets`, auth: 'key', status: 404, error: 'List not found' },
  { name: 'list targets: limit 0', method: 'GET', url: `/api/lists/${UNKNOWN_UUID}/targets?limit=0`, auth: 'key', status: 422, error: INVALID_REQUEST },
  { name: 'list targets: no key', method: 'GET', url: `/api/lists/${UNKNOWN_UUID}/targets`, auth: 'none', status: 401, error: 'Unauthorized' },
  { name: 'webhooks: deliveries of an unknown webhook', method: 'GET', url: `/api/webhooks/deliveries?webhook_id=${UNKNOWN_UUID}`, auth: 'key', status: 404, error: 'Webhook not found' },
  { name: 'webhooks: redeliver an unknown delivery', method: 'POST', url: `/api/webhooks/deliveries/${UNKNOWN_UUID}/redeliver`, auth: 'key', status: 404, error: 'Delivery not found' },
];

let h: ApiHarness;
let account: TestAccount;
let session: string;

beforeAll(async () => {
  // A high budget: this file sends far more than 200 requests from one account.
  h = await openApiHarness({ SLUICE_RATE_LIMIT_PER_MINUTE: '100000' });
  account = await newAccount(h, { credits: 100 });
  const login = await h.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: account.email, password: account.password } });
  expect(login.statusCode).toBe(200);
  session = json(login).token;
});

afterAll(closeHarnesses);

function authHeader(auth: Auth): Record<string, string> {
  switch (auth) {
    case 'key':
      return bearer(account.key);
    case 'session':
      return bearer(session);
    case 'wrong':
      return bearer('sluice_0000000000000000000000000000dead');
    case 'none':
      return {};
  }
}

describe('bad requests, route by route', () => {
  it.each(rows.map((row) => [`${row.method} ${row.url.slice(0, 60)}: ${row.name}`, row] as const))('%s', async (_title, row) => {
    const headers: Record<string, string> = { ...authHeader(row.auth), ...row.headers };
    let payload: string | Buffer | undefined;
    if (row.body !== undefined) {
      if (typeof row.body === 'string' || Buffer.isBuffer(row.body)) {
        payload = row.body;
        headers['content-type'] = row.contentType ?? JSON_TYPE;
      } else {
        payload = JSON.stringify(row.body);
        headers['content-type'] = JSON_TYPE;
      }
    }
    const stagedBefore = storedObjects(h, 'inputs/');
    const response = await h.app.inject({ method: row.method, url: row.url, headers, ...(payload === undefined ? {} : { payload }) });
    // A refused upload must not leave its bytes in the object store.
    expect(storedObjects(h, 'inputs/'), 'staged input left behind').toEqual(stagedBefore);

    expectNoLeak(response.body);
    expect({ status: response.statusCode, body: response.body }).toMatchObject({ status: row.status });
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    let body = json(response);
    if (row.url.startsWith('/api/webhooks')) {
      // Spec 7: the webhook envelope, and exactly that.
      expect(Object.keys(body).sort()).toEqual(['message', 'result', 'success']);
      expect(body.success).toBe(false);
      expect(Object.keys(body.result)).toEqual(['code']);
      if (row.status === 400) expect(body.result.code).toBe('bad_request');
      body = { error: body.message, code: body.result.code };
    } else {
      // The spec's shape: {error: <message>}; a machine-readable code may ride along, nothing else.
      expect(Object.keys(body).filter((k) => k !== 'error' && k !== 'code')).toEqual([]);
      if (row.status === 401) expect(body).toEqual({ error: row.error });
    }
    if (typeof row.error === 'string') expect(body.error).toBe(row.error);
    else expect(body.error).toMatch(row.error);
    if (body.code !== undefined) expect(body.code).toMatch(/^[a-z][a-z0-9_]*$/);
    if (row.allow) {
      const allow = String(response.headers.allow ?? '')
        .split(',')
        .map((m) => m.trim())
        .filter(Boolean);
      expect(allow.sort()).toEqual([...row.allow].sort());
    }
  });

  it('the table covers every route the app serves', async () => {
    const doc = json(await h.app.inject({ method: 'GET', url: '/api/openapi.json' }));
    const documented = Object.keys(doc.paths as Record<string, unknown>);
    const toPattern = (p: string) => new RegExp(`^${p.replace(/\{[^}]+\}/g, '[^/?]+')}(\\?|$)`);
    for (const path of [...documented, '/api/openapi.json']) {
      expect(rows.some((row) => toPattern(path).test(row.url)), `no bad-request row for ${path}`).toBe(true);
    }
  });

  it('after the whole table: no job was made and nothing was charged', async () => {
    expect(await jobCount(h, account.id)).toBe(0);
    expect((await h.engine.deps.billing.requireAccount(account.id)).credits).toBe(100);
  });
});

describe('failures inside the service', () => {
  it('an unreachable object store gives a plain 5xx that names no address, port or system error', async () => {
    const local = await openApiHarness();
    const owner = await newAccount(local, { credits: 10 });
    const dead = new S3ObjectStore({ endpoint: 'http://127.0.0.1:1', region: 'us-east-1', bucket: 'sluice', accessKeyId: 'a', secretAccessKey: 'b', forcePathStyle: true });
    const deps = local.engine.deps as { objects: ObjectStore };
    const original = deps.objects;
    deps.objects = dead;
    try {
      const body = multipart([{ name: 'type', value: 'gender' }, { name: 'file', value: CSV, filename: 'a.csv' }]);
      const response = await local.app.inject({ method: 'POST', url: '/api/jobs/bulk', headers: { ...bearer(owner.key), ...body.headers }, payload: body.payload });
      expectNoLeak(response.body);
      expect([500, 503]).toContain(response.statusCode);
      expect(response.body).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|:1\b/);
      expect(Object.keys(json(response)).filter((k) => k !== 'error' && k !== 'code')).toEqual([]);

      const ready = await local.app.inject({ method: 'GET', url: '/readyz' });
      expect(ready.statusCode).toBe(503);
      expectNoLeak(ready.body);
    } finally {
      deps.objects = original;
      dead.destroy();
    }
    expect(await jobCount(local, owner.id)).toBe(0);
  });
});
