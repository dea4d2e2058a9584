import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config/load-config.js';
import { JOB_STATUSES, TERMINAL_STATUSES, type ExportFilter } from '../../src/jobs/job-states.js';
import { Worker } from '../../src/jobs/worker.js';
import type { LookupOutcome, LookupProvider } from '../../src/lookups/lookup-provider.js';
import { openEngine, type Engine, type EngineOverrides } from '../../src/main/open-engine.js';
import type { Clock } from '../../src/shared/clock.js';
import { silentLogger } from '../../src/shared/logger.js';

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

/** A real engine (SQLite file, embedded S3 over the AWS SDK) in its own temp data dir. */
export async function openTestEngine(env: Record<string, string> = {}, clock?: Clock, overrides: Omit<EngineOverrides, 'clock'> = {}): Promise<TestEngine> {
  const dataDir = env.SLUICE_DATA_DIR ?? tempDir();
  const fullEnv = { ...SMALL_JOBS, ...env, SLUICE_DATA_DIR: dataDir };
  const engine = await openEngine(loadConfig(fullEnv), silentLogger(), { ...overrides, ...(clock ? { clock } : {}) });
  return Object.assign(engine, { dataDir, env: fullEnv });
}

export function writeFile(dir: string, name: string, content: string | Buffer): string {
  const file = path.join(dir, name);
  fs.writeFileSync(file, content);
  return file;
}

/**
 * The engines one test file opens: `const engines = engineScope(); afterEach(() => engines.closeAll());`
 * then `await engines.open(env)` in each test.
 */
export function engineScope() {
  const open: TestEngine[] = [];
  return {
    async open(env: Record<string, string> = {}): Promise<TestEngine> {
      const engine = await openTestEngine(env);
      open.push(engine);
      return engine;
    },
    async closeAll(): Promise<void> {
      await Promise.all(open.splice(0).map((e) => e.close()));
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
    until: () => {
      const status = engine.deps.jobs.status(jobId);
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
  await new Worker(engine.deps).run({ concurrency: 1, until: () => engine.deps.jobs.status(jobId) === JOB_STATUSES.completed || Date.now() > deadline });
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
 * that outlives its retries. `fails` is read at every call, so a test can heal the provider.
 */
export function failingProvider(real: LookupProvider, fails: { test: (key: string) => boolean }, retryable = true): LookupProvider {
  return {
    kind: real.kind,
    name: `failing-${real.name}`,
    maxBatch: real.maxBatch,
    async lookup(keys, signal) {
      const answers = await real.lookup(keys, signal);
      return keys.map((key, i): LookupOutcome<unknown> => (fails.test(key) ? { ok: false, retryable, code: 'provider_502', message: 'bad gateway' } : answers[i]!));
    },
  };
}
