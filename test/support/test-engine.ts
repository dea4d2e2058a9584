import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config/load-config.js';
import { JOB_STATUSES, TERMINAL_STATUSES, type ExportFilter } from '../../src/storage/job-states.js';
import { Worker } from '../../src/jobs/worker.js';
import type { LookupOutcome, LookupProvider } from '../../src/lookups/lookup-provider.js';
import { openEngine, type Engine, type EngineOverrides } from '../../src/main/open-engine.js';
import type { Clock } from '../../src/shared/clock.js';
import { silentLogger } from '../../src/shared/logger.js';
import { STORE_KINDS, type StoreKind } from '../../src/storage/store.js';
import { migratedDatabase, postgresServerUrl } from './postgres-database.js';
import { testObjectStore } from './test-objects.js';

export const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
export const CLI = path.join(REPO_ROOT, 'dist/src/main/cli.js');

export function tempDir(prefix = 'sluice-test-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/** Small chunks and batches by default, so that a few thousand rows cross many checkpoints. */
export const SMALL_JOBS = {
  SLUICE_CHUNK_ROWS: '500',
  SLUICE_BATCH_ROWS: '100',
  SLUICE_POLL_MS: '20',
  SLUICE_LOG_LEVEL: 'silent',
};

export interface TestEngine extends Engine {
  dataDir: string;
  env: Record<string, string>;
}

/**
 * The stores a guarantee suite runs on: `describe.each(TEST_STORES)`. SQLite always; PostgreSQL
 * unless the run switched it off (SLUICE_TEST_POSTGRES=off).
 */
export const TEST_STORES: readonly StoreKind[] = postgresServerUrl() ? [STORE_KINDS.sqlite, STORE_KINDS.postgres] : [STORE_KINDS.sqlite];

/** The seal key of every test engine on PostgreSQL. */
export const TEST_SEAL_KEY = Buffer.alloc(32, 's').toString('base64');

/**
 * What to add to an engine's environment to put it on `store`: nothing for SQLite (the data dir's
 * file), a database of its own for PostgreSQL. Every process given the same `env` shares it.
 */
export async function storeEnv(store: StoreKind): Promise<{ env: Record<string, string>; drop: () => Promise<void> }> {
  if (store === STORE_KINDS.sqlite) return { env: {}, drop: async () => undefined };
  const db = await migratedDatabase(`sluice_${store}`);
  // Small pools: many test files run at once against the one server and its max_connections. One
  // seal key, as on machines that share a database: engines of one test have data dirs of their own.
  return { env: { SLUICE_DATABASE_URL: db.url, SLUICE_DATABASE_POOL_SIZE: '4', SLUICE_SEAL_KEY: TEST_SEAL_KEY }, drop: db.drop };
}

/**
 * A real engine (SQLite file or SLUICE_DATABASE_URL, embedded S3 over the AWS SDK) in its own temp data dir.
 * In the unit tier its objects live in memory instead (test-objects.ts).
 */
export async function openTestEngine(env: Record<string, string> = {}, clock?: Clock, overrides: Omit<EngineOverrides, 'clock'> = {}): Promise<TestEngine> {
  const dataDir = env.SLUICE_DATA_DIR ?? tempDir();
  const fullEnv = { ...SMALL_JOBS, ...env, SLUICE_DATA_DIR: dataDir };
  const objects = overrides.objects ?? testObjectStore(clock);
  const engine = await openEngine(loadConfig(fullEnv), silentLogger(), { ...overrides, ...(clock ? { clock } : {}), ...(objects ? { objects } : {}) });
  return Object.assign(engine, { dataDir, env: fullEnv });
}

export function writeFile(dir: string, name: string, content: string | Buffer): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, content);
  return file;
}

/**
 * The engines one test file opens: `const engines = engineScope(store); afterEach(() => engines.closeAll());`
 * then `await engines.open(env)` in each test. On PostgreSQL each `open` without a
 * SLUICE_DATABASE_URL of its own gets a fresh database, dropped by `closeAll`; pass an engine's
 * `env` to open another on the same store.
 */
export function engineScope(store: StoreKind = STORE_KINDS.sqlite) {
  const open: TestEngine[] = [];
  const drops: (() => Promise<void>)[] = [];
  return {
    async open(env: Record<string, string> = {}, clock?: Clock): Promise<TestEngine> {
      let full = env;
      if (env.SLUICE_DATABASE_URL === undefined) {
        const placed = await storeEnv(store);
        drops.push(placed.drop);
        full = { ...placed.env, ...env };
      }
      const engine = await openTestEngine(full, clock);
      open.push(engine);
      return engine;
    },
    /** A store's env for processes this test starts itself (workers, the CLI). */
    async env(): Promise<Record<string, string>> {
      const placed = await storeEnv(store);
      drops.push(placed.drop);
      return placed.env;
    },
    async closeAll(): Promise<void> {
      await Promise.all(open.splice(0).map((e) => e.close()));
      await Promise.all(drops.splice(0).map((drop) => drop()));
    },
  };
}

/** A completed job's result file for `filter`, as text. */
export async function resultText(engine: Engine, jobId: string, filter: ExportFilter): Promise<string> {
  let text = '';
  for await (const piece of await engine.jobService.openResult(jobId, filter)) text += String(piece);
  return text;
}

/** Runs an in-process worker until the job has paused or ended. */
export async function runUntilSettled(engine: Engine, jobId: string, concurrency = 2): Promise<void> {
  await new Worker(engine.deps).run({
    concurrency,
    until: async () => {
      const status = await engine.deps.jobs.status(jobId);
      return status === JOB_STATUSES.paused || (status !== undefined && TERMINAL_STATUSES.has(status));
    },
  });
}

/**
 * Runs an in-process worker until the job has completed, or for `timeoutMs`: through pauses the
 * worker lifts itself, such as a provider outage's. The caller checks the status it ended with.
 */
export async function runUntilCompleted(engine: Engine, jobId: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  await new Worker(engine.deps).run({ concurrency: 1, until: async () => (await engine.deps.jobs.status(jobId)) === JOB_STATUSES.completed || Date.now() > deadline });
}

/**
 * `real`'s answers from a provider the result cache serves, as it serves a remote service: for tests
 * of the cache (`cached`) against an embedded engine, which answers locally and skips the cache.
 */
export function cachedProvider(real: LookupProvider): LookupProvider {
  return { kind: real.kind, name: `cached-${real.name}`, maxBatch: real.maxBatch, lookup: (keys, signal) => real.lookup(keys, signal) };
}

/**
 * `real`, except that keys `fails` picks get a 502 however often they are asked: a transient failure
 * that outlives its retries. `fails` is read at every call, so a test can heal the provider. Its
 * failures ask to be tried again at once (Retry-After 0): the lookup layer still spends every try
 * on a failing key, without the seconds of backoff between tries.
 */
export function failingProvider(real: LookupProvider, fails: { test: (key: string) => boolean }, retryable = true): LookupProvider {
  return {
    kind: real.kind,
    name: `failing-${real.name}`,
    maxBatch: real.maxBatch,
    async lookup(keys, signal) {
      const answers = await real.lookup(keys, signal);
      return keys.map((key, i): LookupOutcome<unknown> => (fails.test(key) ? { ok: false, retryable, code: 'provider_502', message: 'bad gateway', retryAfterMs: 0 } : answers[i]!));
    },
  };
}
