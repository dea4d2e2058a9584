import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { jobEndEvent, jobPausedEvent } from '../../src/jobs/job-events.js';
import { AppError, type ErrorCode } from '../../src/shared/errors.js';
import { openPostgresStore } from '../../src/storage/postgres/pg-store.js';
import { openSqliteStore } from '../../src/storage/sqlite/sqlite-store.js';
import type { BatchOutput, JobOptions, JobRecord, Lease, RowCounters } from '../../src/storage/job-records.js';
import type { Account, NewWebhookRow } from '../../src/storage/records.js';
import { STORE_KINDS, type BatchCommit, type Store, type StoreHooks, type StoreKind } from '../../src/storage/store.js';
import { migratedDatabase } from './postgres-database.js';
import { REPO_ROOT, TEST_SEAL_KEY, tempDir } from './test-engine.js';

/** The real end event, so that what a test reads back is what the sender would post. */
export const TEST_HOOKS: StoreHooks = { jobEnded: jobEndEvent, jobPaused: jobPausedEvent };

const SQLITE_OPTIONS = { synchronous: 'NORMAL', busyTimeoutMs: 5000 } as const;
/** Small pools: many test files share the run's one server and its max_connections. */
const PG_POOL_SIZE = 4;

export interface TestStore {
  store: Store;
  /**
   * Another store on the same database, as a second process sees it. On SQLite it runs in a worker
   * thread with a connection of its own: better-sqlite3 is synchronous, so two stores on the test's
   * thread would run every operation one after the other and no race could ever happen between them.
   */
  openPeer(): Promise<Store>;
  /** Closes every store opened here and removes the database. */
  close(): Promise<void>;
}

export async function openTestStore(kind: StoreKind): Promise<TestStore> {
  return kind === STORE_KINDS.sqlite ? openSqlite() : openPostgres();
}

async function openSqlite(): Promise<TestStore> {
  const dir = tempDir('sluice-store-');
  const file = path.join(dir, 'sluice.db');
  const store = openSqliteStore(file, SQLITE_OPTIONS, TEST_HOOKS);
  const peers: Store[] = [];
  return {
    store,
    async openPeer() {
      const peer = await sqlitePeer(file);
      peers.push(peer);
      return peer;
    },
    async close() {
      await Promise.all(peers.splice(0).map((p) => p.close()));
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function openPostgres(): Promise<TestStore> {
  const database = await migratedDatabase('store_contract');
  const stores: Store[] = [];
  const open = async () => {
    const store = await openPostgresStore({ url: database.url, poolSize: PG_POOL_SIZE, sealKey: Buffer.from(TEST_SEAL_KEY, 'base64') }, TEST_HOOKS);
    stores.push(store);
    return store;
  };
  try {
    const store = await open();
    return {
      store,
      openPeer: open,
      async close() {
        await Promise.all(stores.splice(0).map((s) => s.close()));
        await database.drop();
      },
    };
  } catch (error) {
    await database.drop();
    throw error;
  }
}

/**
 * The worker cannot load TypeScript, so it runs the built adapter (`npm run build`). A peer on
 * stale code would test something other than the source, so stale output is refused: the SQLite
 * adapter, the port's own modules beside it, and what the end event is made of.
 */
const PEER_SOURCES = ['src/storage/sqlite', 'src/storage', 'src/jobs/job-events.ts', 'src/jobs/job-summary.ts', 'src/shared/errors.ts'];

function builtModule(source: string): string {
  const built = path.join(REPO_ROOT, 'dist', source.replace(/\.ts$/, '.js'));
  if (!fs.existsSync(built)) throw new Error(`${built} is missing: run npm run build first`);
  return built;
}

function assertBuildFresh(): void {
  const sources = PEER_SOURCES.flatMap((entry) => {
    const full = path.join(REPO_ROOT, entry);
    if (!fs.statSync(full).isDirectory()) return [entry];
    return fs
      .readdirSync(full)
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts') && !f.endsWith('.d.ts'))
      .map((f) => path.join(entry, f));
  });
  for (const source of sources) {
    const built = builtModule(source);
    if (fs.statSync(built).mtimeMs < fs.statSync(path.join(REPO_ROOT, source)).mtimeMs) {
      throw new Error(`${built} is older than ${source}: run npm run build first`);
    }
  }
}

/** Runs in the worker: the store's methods, called by name; data in and out by structured clone. */
const PEER_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const opened = (async () => {
  const { openSqliteStore } = await import(workerData.storeModule);
  const { jobEndEvent, jobPausedEvent } = await import(workerData.eventsModule);
  return openSqliteStore(workerData.file, workerData.options, { jobEnded: jobEndEvent, jobPaused: jobPausedEvent });
})();
// A Buffer arrives as a plain Uint8Array; the driver binds only Buffers as blobs.
const buffers = (v) => {
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
  if (Array.isArray(v)) return v.map(buffers);
  if (v && typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, buffers(x)]));
  }
  return v;
};
// A function argument (updateShared's change) arrives as its source; see sqlitePeer.
const revive = (v) => (v && typeof v === 'object' && typeof v.peerFunction === 'string' ? (0, eval)('(' + v.peerFunction + ')') : v);
parentPort.on('message', async ({ id, port, method, args }) => {
  try {
    const store = await opened;
    const target = port === null ? store : store[port];
    let value = target[method](...buffers(args).map(revive));
    if (value && typeof value[Symbol.asyncIterator] === 'function') {
      const all = [];
      for await (const item of value) all.push(item);
      value = all;
    } else value = await value;
    parentPort.postMessage({ id, ok: true, value });
  } catch (e) {
    const app = e && e.name === 'AppError';
    parentPort.postMessage({ id, ok: false, error: { app, message: String(e && e.message), code: app ? e.code : undefined, statusCode: app ? e.statusCode : undefined, retryable: Boolean(app && e.retryable) } });
  }
});
`;

const PORTS = ['jobs', 'billing', 'results', 'keys', 'sessions', 'idempotency', 'webhooks', 'deliveries', 'breaches', 'emailBreaches', 'companies', 'limits', 'audit', 'retention', 'monitors', 'monitorRuns', 'monitorResults', 'repoScans', 'ipNetwork', 'complianceChecks', 'workflows', 'quotaUsage', 'creditAlerts', 'usage', 'workflowSecrets'] as const;

interface Reply {
  id: number;
  ok: boolean;
  value?: unknown;
  /** An AppError comes back as one, with its code; anything else (a driver error) as a plain Error. */
  error?: { app: boolean; message: string; code?: string; statusCode?: number; retryable: boolean };
}

/**
 * A Store whose every call runs in a worker thread on its own SQLite connection. Arguments must be
 * data (a `LookupCommit.event` function cannot cross); `outputs` arrives whole, then iterates.
 * A function argument (updateShared's `change`) crosses as its source text and runs in the
 * worker, so it must use nothing from the scope it was written in.
 */
async function sqlitePeer(file: string): Promise<Store> {
  assertBuildFresh();
  const worker = new Worker(PEER_WORKER, {
    eval: true,
    workerData: {
      file,
      options: SQLITE_OPTIONS,
      storeModule: pathToFileURL(builtModule('src/storage/sqlite/sqlite-store.ts')).href,
      eventsModule: pathToFileURL(builtModule('src/jobs/job-events.ts')).href,
    },
  });
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  let next = 0;
  worker.on('message', (reply: Reply) => {
    const call = waiting.get(reply.id)!;
    waiting.delete(reply.id);
    if (reply.ok) call.resolve(fromWorker(reply.value));
    else {
      const e = reply.error!;
      call.reject(e.app ? new AppError(e.code as ErrorCode, e.message, { statusCode: e.statusCode, retryable: e.retryable }) : new Error(e.message));
    }
  });
  worker.on('error', (error) => {
    for (const call of waiting.values()) call.reject(error);
    waiting.clear();
  });
  const call = (port: string | null, method: string, args: unknown[]) =>
    new Promise<unknown>((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve, reject });
      worker.postMessage({ id, port, method, args: args.map((a) => (typeof a === 'function' ? { peerFunction: a.toString() } : a)) });
    });
  const proxy = (port: string) =>
    new Proxy(
      {},
      {
        get: (_, method: string) =>
          method === 'outputs'
            ? (...args: unknown[]) => iterate(call(port, method, args) as Promise<unknown[]>)
            : (...args: unknown[]) => call(port, method, args),
      },
    );
  await call(null, 'ping', []);
  return {
    kind: STORE_KINDS.sqlite,
    ...(Object.fromEntries(PORTS.map((port) => [port, proxy(port)])) as Pick<Store, (typeof PORTS)[number]>),
    ping: async () => {
      await call(null, 'ping', []);
    },
    close: async () => {
      await call(null, 'close', []);
      await worker.terminate();
    },
  };
}

async function* iterate(all: Promise<unknown[]>): AsyncIterable<unknown> {
  yield* (await all).map(fromWorker);
}

/** Buffers come back as plain Uint8Arrays; the port promises Buffers. */
function fromWorker(value: unknown): unknown {
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (Array.isArray(value)) return value.map(fromWorker);
  if (value && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fromWorker(v)]));
  }
  return value;
}

export const NOW = 1_700_000_000_000;
export const LEASE_MS = 60_000;
export const DAY_MS = 86_400_000;
/** The repeat-free window's start as the engine computes it (180 days). */
export const SINCE = NOW - 180 * DAY_MS;

export function newAccount(store: Store, credits = 100, id?: string): Promise<Account> {
  return store.billing.createAccount({ ...(id === undefined ? {} : { id }), credits, now: NOW });
}

export function newJob(store: Store, accountId: string, id: string, createdAt = NOW, options: JobOptions = {}): Promise<JobRecord> {
  return store.jobs.create({ id, accountId, type: 'gender', inputKey: `inputs/${id}.csv`, inputName: `${id}.csv`, options, now: createdAt });
}

/**
 * A job through its split, in its process phase with one chunk per entry of `rowCounts`. Splits the
 * oldest claimable job, which must be this one: call it before queueing others.
 */
export async function processingJob(store: Store, accountId: string, id: string, rowCounts: readonly number[] = [10], createdAt = NOW, options: JobOptions = {}): Promise<JobRecord> {
  await newJob(store, accountId, id, createdAt, options);
  const claim = await store.jobs.acquireJobPhase('splitter', createdAt, LEASE_MS);
  if (claim?.job.id !== id) throw new Error(`expected to split ${id}, got ${claim?.job.id}`);
  let firstRow = 0;
  const chunks = rowCounts.map((rowCount) => {
    const chunk = { firstRow, rowCount };
    firstRow += rowCount;
    return chunk;
  });
  await store.jobs.finishSplit(id, claim.lease, { header: ['email'], keyColumn: 0, totalRows: firstRow, chunks }, createdAt);
  return store.jobs.require(id);
}

/** Leases the next chunk, which must be `chunkIndex` of `jobId`. */
export async function claimChunk(store: Store, jobId: string, chunkIndex: number, owner = 'worker-a', now = NOW): Promise<Lease> {
  const claim = await store.jobs.acquireChunk(owner, now, LEASE_MS);
  if (claim?.chunk.jobId !== jobId || claim.chunk.chunkIndex !== chunkIndex) {
    throw new Error(`expected chunk ${chunkIndex} of ${jobId}, got ${claim?.chunk.chunkIndex} of ${claim?.chunk.jobId}`);
  }
  return claim.lease;
}

/** A batch's output as processBatch renders it: each row's text, where it ends, its flags. */
export function output(rows: readonly (readonly [text: string, flags: number])[]): BatchOutput {
  const rowEnds = Buffer.alloc(rows.length * 4);
  let allText = '';
  rows.forEach(([text], i) => {
    allText += text;
    rowEnds.writeUInt32LE(allText.length, i * 4);
  });
  return { allText, rowEnds, rowFlags: Buffer.from(rows.map(([, flags]) => flags)) };
}

export const NO_COUNTS: RowCounters = { processed: 0, found: 0, invalid: 0, duplicate: 0, error: 0, credits: 0 };

/**
 * A checkpoint of `rows` plain rows (`r<first row>`...), nothing charged, unless `over` says
 * otherwise. Its batch id is the chunk and cursor, as processBatch makes it.
 */
export function batch(
  target: { jobId: string; accountId: string; chunkIndex: number; lease: Lease; cursor: number; rows: number },
  over: Partial<Omit<BatchCommit, 'charges'>> & { charges?: Partial<BatchCommit['charges']> } = {},
): BatchCommit {
  const { charges, ...rest } = over;
  const texts = Array.from({ length: target.rows }, (_, i): [string, number] => [`${target.chunkIndex}:r${target.cursor + i}\r\n`, 0]);
  return {
    ...target,
    output: output(texts),
    counters: { ...NO_COUNTS, processed: target.rows },
    cache: [],
    outOfCredits: false,
    now: NOW,
    ...rest,
    charges: { kinds: ['gender'], keys: [[]], batchId: `${target.chunkIndex}:${target.cursor}`, since: SINCE, ...charges },
  };
}

/** The rows of a chunk's committed outputs, as one text. */
export async function outputText(store: Store, jobId: string, chunkIndex: number): Promise<string> {
  let text = '';
  for await (const o of store.jobs.outputs(jobId, chunkIndex)) text += o.allText;
  return text;
}

/** An active webhook of the account that gets `events`; its deliveries show the events queued. */
export async function subscribe(store: Store, accountId: string, events: string[] = ['bulk.completed'], over: Partial<NewWebhookRow> = {}): Promise<string> {
  const id = over.id ?? `wh_${accountId}_${events.join('_')}_${Math.random().toString(36).slice(2, 8)}`;
  await store.webhooks.insert({
    id,
    accountId,
    kind: 'generic',
    url: 'https://hooks.example.com/in',
    events,
    description: '',
    isActive: true,
    secretSealed: 'sealed-secret',
    telegramChat: null,
    telegramTokenSealed: null,
    now: NOW,
    ...over,
  });
  return id;
}

/** Relays the outbox and gives every end event the webhook got so far: job id and status. */
export async function endEvents(store: Store, webhookId: string, now = NOW): Promise<{ job: string; status: string }[]> {
  await store.deliveries.relayOutbox(now);
  const deliveries = await store.deliveries.list(webhookId, 1000);
  return deliveries.reverse().map((d) => {
    const data = (d.payload as { data: { id: string; status: string } }).data;
    return { job: data.id, status: data.status };
  });
}
