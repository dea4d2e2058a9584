import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { exited } from './child-worker.js';
import { CLI, openTestEngine, tempDir } from './test-engine.js';

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

const running = new Set<ChildProcess>();

/**
 * The environment of a child: never the developer's own SLUICE_* settings (a stray
 * SLUICE_S3_ENDPOINT would send the test to real storage), always an explicit data dir and
 * silent logs, then whatever the test sets.
 */
export function cliEnv(dataDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('SLUICE_')));
  return { ...base, SLUICE_DATA_DIR: dataDir, SLUICE_LOG_LEVEL: 'silent', ...extra };
}

/** Runs the built CLI to its end (or the time limit, which kills it) and never rejects. */
export function runCli(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 30_000): Promise<CliResult> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [CLI, ...args],
      { env, timeout: timeoutMs, killSignal: 'SIGKILL', maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
      (_error, stdout, stderr) => {
        running.delete(child);
        resolve({ code: child.exitCode, signal: child.signalCode, stdout, stderr });
      },
    );
    running.add(child);
  });
}

/** The whole of stdout as one JSON document; fails the test if anything else was printed. */
export function parseJson<T = Record<string, any>>(result: CliResult): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch {
    throw new Error(`stdout is not one JSON document (exit ${result.code}):\n${result.stdout}\nstderr:\n${result.stderr}`);
  }
}

/** A long-running CLI process (`worker`), with its stderr collected for later checks. */
export interface CliChild {
  child: ChildProcess;
  stderr: () => string;
}

export function spawnCli(args: string[], env: NodeJS.ProcessEnv): CliChild {
  const child = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  running.add(child);
  child.once('exit', () => running.delete(child));
  let err = '';
  child.stderr!.setEncoding('utf8').on('data', (text: string) => (err += text));
  return { child, stderr: () => err };
}

/** Resolves once a `sluice worker` says it runs (its engine, S3 included, is open by then). */
export async function workerReady(worker: CliChild, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!/worker \S+ running/.test(worker.stderr())) {
    if (worker.child.exitCode !== null || worker.child.signalCode !== null) {
      throw new Error(`worker exited before it was ready: ${worker.stderr()}`);
    }
    if (Date.now() > deadline) throw new Error(`worker not ready after ${timeoutMs} ms: ${worker.stderr()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Exit code, or a rejection naming the deadline, so a hung process fails the test instead of the run. */
export async function exitWithin(child: ChildProcess, timeoutMs: number): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`process ${child.pid} still running after ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([exited(child), late]);
  } finally {
    clearTimeout(timer);
  }
}

const scratch: string[] = [];

/** A temp dir that removeScratchDirs deletes; a 40,000-row job leaves tens of MB behind. */
export function scratchDir(prefix = 'sluice-cli-'): string {
  const dir = tempDir(prefix);
  scratch.push(dir);
  return dir;
}

/** For afterEach, once every process and handle on the dirs is closed. */
export function removeScratchDirs(): void {
  for (const dir of scratch.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
}

/** For afterEach: whatever a test left running is killed and reaped. */
export async function killChildren(): Promise<void> {
  const left = [...running];
  running.clear();
  for (const child of left) child.kill('SIGKILL');
  await Promise.all(left.map((child) => exited(child)));
}

/**
 * A queued job and its account, made by an engine in this process that is closed again before any
 * CLI process starts: the job waits for whichever worker process comes first.
 */
export async function queueJob(
  dataDir: string,
  input: string,
  options: { credits: number; accountId?: string; env?: Record<string, string> },
): Promise<{ jobId: string; accountId: string }> {
  const engine = await openTestEngine({ ...options.env, SLUICE_DATA_DIR: dataDir });
  try {
    const account = await engine.deps.billing.createAccount({ id: options.accountId, credits: options.credits, now: Date.now() });
    const job = await engine.jobService.submit({ accountId: account.id, type: 'gender', body: fs.createReadStream(input), inputName: path.basename(input), options: {} });
    return { jobId: job.id, accountId: account.id };
  } finally {
    await engine.close();
  }
}

export interface JobRow {
  status: string;
  phase: string;
  processed_rows: number;
  total_rows: number | null;
  lease_owner: string | null;
}

/** Read-only looks at a data dir's SQLite file while other processes write it. */
export class DbPeek {
  private readonly db: Database.Database;

  constructor(dataDir: string) {
    this.db = new Database(path.join(dataDir, 'sluice.db'), { fileMustExist: true });
    this.db.pragma('busy_timeout = 5000');
  }

  job(id: string): JobRow {
    const row = this.db.prepare('SELECT status, phase, processed_rows, total_rows, lease_owner FROM jobs WHERE id = ?').get(id) as JobRow | undefined;
    if (!row) throw new Error(`no job ${id}`);
    return row;
  }

  heldChunkLeases(jobId: string): number {
    return (this.db.prepare('SELECT COUNT(*) AS n FROM job_chunks WHERE job_id = ? AND lease_owner IS NOT NULL').get(jobId) as { n: number }).n;
  }

  /**
   * How often each chunk's lease was taken (its epoch counts every take): more than once means a
   * worker lost the chunk, crashed on it or failed on it and tried again.
   */
  chunkLeaseTakes(jobId: string): number[] {
    return (this.db.prepare('SELECT lease_epoch AS n FROM job_chunks WHERE job_id = ? ORDER BY chunk_index').all(jobId) as { n: number }[]).map((r) => r.n);
  }

  chunkCursors(jobId: string): { chunk_index: number; cursor: number; row_count: number; status: string }[] {
    return this.db.prepare('SELECT chunk_index, cursor, row_count, status FROM job_chunks WHERE job_id = ? ORDER BY chunk_index').all(jobId) as {
      chunk_index: number;
      cursor: number;
      row_count: number;
      status: string;
    }[];
  }

  credits(accountId: string): number {
    const row = this.db.prepare('SELECT credits FROM accounts WHERE id = ?').get(accountId) as { credits: number } | undefined;
    if (!row) throw new Error(`no account ${accountId}`);
    return row.credits;
  }

  close(): void {
    this.db.close();
  }
}
