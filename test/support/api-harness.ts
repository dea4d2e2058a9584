import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { ApiDeps } from '../../src/api/api-deps.js';
import { buildApp } from '../../src/api/build-app.js';
import type { Role } from '../../src/auth/key-store.js';
import { hashPassword } from '../../src/auth/passwords.js';
import { JOB_STATUSES, TERMINAL_STATUSES, type JobStatus } from '../../src/storage/job-states.js';
import { Worker } from '../../src/jobs/worker.js';
import { apiDeps } from '../../src/main/open-api.js';
import type { EngineOverrides } from '../../src/main/open-engine.js';
import type { Clock } from '../../src/shared/clock.js';
import { silentLogger } from '../../src/shared/logger.js';
import { MemoryObjectStore } from '../../src/storage/s3/memory-object-store.js';
import type { StoreKind } from '../../src/storage/store.js';
import { openTestEngine, storeEnv, type TestEngine } from './test-engine.js';
import { assertResponsesDocumented, watchResponses } from './openapi-watch.js';

/** A real engine (temp data dir, embedded S3) with the API built on top of it. */
export interface ApiHarness {
  engine: TestEngine;
  deps: ApiDeps;
  app: FastifyInstance;
  /** Set once `listen()` has run: `http://127.0.0.1:<port>`. */
  baseUrl?: string;
}

const open: ApiHarness[] = [];

export async function openApiHarness(env: Record<string, string> = {}, clock?: Clock, overrides: Omit<EngineOverrides, 'clock'> = {}): Promise<ApiHarness> {
  const engine = await openTestEngine(env, clock, overrides);
  const deps = apiDeps(engine);
  const app = await buildApp(deps, silentLogger());
  watchResponses(app);
  const harness: ApiHarness = { engine, deps, app };
  open.push(harness);
  return harness;
}

/** Databases made by openStoreHarness, dropped by closeHarnesses once their engines are closed. */
const databases: Array<() => Promise<void>> = [];

/** A harness on a fresh database of `store` (on PostgreSQL, its own database); `env` adds settings. */
export async function openStoreHarness(store: StoreKind, env: Record<string, string> = {}, clock?: Clock, overrides: Omit<EngineOverrides, 'clock'> = {}): Promise<ApiHarness> {
  const { env: storeVars, drop } = await storeEnv(store);
  databases.push(drop);
  return openApiHarness({ ...storeVars, ...env }, clock, overrides);
}

/** For afterEach: closes every server and engine opened through openApiHarness, then drops their databases. */
export async function closeHarnesses(): Promise<void> {
  const all = open.splice(0);
  for (const h of all) {
    await h.app.close().catch(() => undefined);
    await h.engine.close().catch(() => undefined);
  }
  for (const drop of databases.splice(0)) await drop();
  assertResponsesDocumented();
}

/** Listens on a real loopback socket (port 0) and remembers the base URL. */
export async function listen(h: ApiHarness): Promise<string> {
  await h.app.listen({ port: 0, host: '127.0.0.1' });
  const address = h.app.server.address();
  if (address === null || typeof address === 'string') throw new Error('no TCP address');
  h.baseUrl = `http://127.0.0.1:${address.port}`;
  return h.baseUrl;
}

export interface TestAccount {
  id: string;
  email: string;
  password: string;
  /** The full secret of the account's first key. */
  key: string;
  keyId: string;
}

let accountCounter = 0;

/** An account with a password (for login) and one API key of the given role. */
export async function newAccount(
  h: ApiHarness,
  options: { credits?: number; role?: Role; password?: string | null; email?: string } = {},
): Promise<TestAccount> {
  const email = options.email ?? `user${++accountCounter}-${Date.now()}@example.com`;
  const password = options.password === undefined ? 'correct horse battery' : options.password;
  const account = await h.engine.deps.billing.createAccount({
    email,
    passwordHash: password === null ? null : await passwordHashOf(password),
    credits: options.credits ?? 1_000,
    now: h.engine.deps.clock.now(),
  });
  const { key, secret } = await h.deps.keys.create({ accountId: account.id, name: 'first', role: options.role ?? 'admin', now: h.engine.deps.clock.now() });
  return { id: account.id, email, password: password ?? '', key: secret, keyId: key.id };
}

/**
 * One scrypt hash per distinct password for the whole file: a hash costs tens of milliseconds of CPU
 * on purpose (src/auth/passwords.ts), and a fresh salt per test account proves nothing a test asks.
 */
const passwordHashes = new Map<string, Promise<string>>();
function passwordHashOf(password: string): Promise<string> {
  let hash = passwordHashes.get(password);
  if (!hash) passwordHashes.set(password, (hash = hashPassword(password)));
  return hash;
}

export async function addKey(h: ApiHarness, accountId: string, role: Role = 'admin', name = 'extra'): Promise<{ key: string; keyId: string }> {
  const { key, secret } = await h.deps.keys.create({ accountId, name, role, now: h.engine.deps.clock.now() });
  return { key: secret, keyId: key.id };
}

export function bearer(secret: string): { authorization: string } {
  return { authorization: `Bearer ${secret}` };
}

export interface Part {
  name: string;
  value: string | Buffer;
  filename?: string;
  contentType?: string;
}

/** A whole multipart/form-data body in memory, for app.inject(). */
export function multipart(parts: Part[], boundary = `----sluice-test-${Math.random().toString(16).slice(2)}`): {
  payload: Buffer;
  headers: { 'content-type': string };
} {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    chunks.push(Buffer.from(partHead(boundary, part)), Buffer.from(part.value), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

export function partHead(boundary: string, part: Pick<Part, 'name' | 'filename' | 'contentType'>): string {
  const disposition = `Content-Disposition: form-data; name="${part.name}"${part.filename === undefined ? '' : `; filename="${part.filename}"`}`;
  const type = part.filename === undefined ? '' : `Content-Type: ${part.contentType ?? 'text/csv'}\r\n`;
  return `--${boundary}\r\n${disposition}\r\n${type}\r\n`;
}

/**
 * A multipart body whose file part streams from `file` (a Readable), so a large file never sits
 * in this process's memory. Fields first, then the file, then the closing boundary.
 */
export function streamingMultipart(fields: Record<string, string>, file: Readable, filename = 'input.csv'): {
  body: Readable;
  contentType: string;
} {
  const boundary = `----sluice-stream-${Math.random().toString(16).slice(2)}`;
  async function* generate(): AsyncGenerator<Buffer> {
    for (const [name, value] of Object.entries(fields)) {
      yield Buffer.from(`${partHead(boundary, { name })}${value}\r\n`);
    }
    yield Buffer.from(partHead(boundary, { name: 'file', filename }));
    for await (const chunk of file) yield Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
    yield Buffer.from(`\r\n--${boundary}--\r\n`);
  }
  return { body: Readable.from(generate(), { objectMode: false }), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** A gender upload through app.inject(). */
export async function uploadCsv(
  h: ApiHarness,
  key: string,
  csv: string | Buffer,
  options: { type?: string; column?: string; downloadLink?: string; idempotencyKey?: string; filename?: string } = {},
): Promise<LightMyRequestResponse> {
  const parts: Part[] = [{ name: 'type', value: options.type ?? 'gender' }];
  if (options.downloadLink !== undefined) parts.push({ name: 'download_link', value: options.downloadLink });
  if (options.column !== undefined) parts.push({ name: 'column', value: options.column });
  parts.push({ name: 'file', value: csv, filename: options.filename ?? 'emails.csv' });
  const body = multipart(parts);
  return h.app.inject({
    method: 'POST',
    url: '/api/jobs/bulk',
    headers: { ...bearer(key), ...body.headers, ...(options.idempotencyKey === undefined ? {} : { 'idempotency-key': options.idempotencyKey }) },
    payload: body.payload,
  });
}

/** Runs one in-process worker until every listed job is terminal (or the deadline passes). */
export async function runUntilDone(h: ApiHarness, jobIds: string[], timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const statuses = () => Promise.all(jobIds.map(async (id) => (await h.engine.deps.jobs.require(id)).status));
  const done = async (): Promise<boolean> => (await statuses()).every((status) => TERMINAL_STATUSES.has(status as JobStatus));
  await new Worker(h.engine.deps).run({ concurrency: 1, until: async () => (await done()) || Date.now() > deadline });
  if (!(await done())) throw new Error(`jobs not finished after ${timeoutMs} ms: ${(await statuses()).join(', ')}`);
}

/** Runs a worker until the job reaches `status` (a pause, say, which runUntilDone would wait out to its time-out). */
export async function runUntilStatus(h: ApiHarness, jobId: string, status: JobStatus, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const reached = async (): Promise<boolean> => (await h.engine.deps.jobs.require(jobId)).status === status;
  await new Worker(h.engine.deps).run({ concurrency: 1, until: async () => (await reached()) || Date.now() > deadline });
  if (!(await reached())) throw new Error(`job not ${status} after ${timeoutMs} ms: ${(await h.engine.deps.jobs.require(jobId)).status}`);
}

export async function jobCount(h: ApiHarness, accountId: string): Promise<number> {
  return (await h.engine.deps.jobs.list({ accountId, limit: 1000, offset: 0 })).total;
}

/** Object keys the embedded S3 server holds under a prefix (read from its directory on disk), or the in-memory store. */
export function storedObjects(h: ApiHarness, prefix: string): string[] {
  if (h.engine.deps.objects instanceof MemoryObjectStore) return [...h.engine.deps.objects.objects.keys()].filter((k) => k.startsWith(prefix));
  const bucketDir = path.join(h.engine.dataDir, 's3', 'buckets', h.engine.config.s3.bucket);
  const found: string[] = [];
  const walk = (dir: string): void => {
    if (!fs.existsSync(dir)) return;
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else found.push(path.relative(bucketDir, full));
    }
  };
  walk(bucketDir);
  // s3rver keeps each object as `<key>._S3rver_object` plus metadata files beside it.
  return found
    .filter((f) => f.endsWith('._S3rver_object'))
    .map((f) => f.slice(0, -'._S3rver_object'.length).split(path.sep).join('/'))
    .filter((k) => k.startsWith(prefix));
}

/** No error body may show where the code lives or how it failed inside. */
export function expectNoLeak(body: string): void {
  expect(body).not.toContain('node_modules');
  expect(body).not.toContain('/work/');
  expect(body).not.toMatch(/\sat\s/);
  expect(body).not.toMatch(/\bat [\w.<>]+ \(/);
}

export function json(response: { body: string }): any {
  return JSON.parse(response.body);
}

export async function streamToBuffer(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
  return Buffer.concat(chunks);
}

export { JOB_STATUSES };
