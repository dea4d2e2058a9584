import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, expect } from 'vitest';
import { runJob } from '../../src/cli/run-command.js';
import { STORE_KINDS, type StoreKind } from '../../src/storage/store.js';
import { exited } from '../support/child-worker.js';
import { killChildren, removeScratchDirs, type CliChild, type JobRow } from '../support/cli-process.js';
import { engineScope, openTestEngine, REPO_ROOT, type TestEngine } from '../support/test-engine.js';

/**
 * What a finished job left behind, in a form two runs of one file can be compared by: result
 * bytes, the keys paid for, the ledger's charge lines and the balance.
 */
export interface JobOutcome {
  status: string;
  all: Buffer;
  found: Buffer;
  creditsUsed: number;
  chargedKeys: string[];
  /** One ledger line per batch that charged anything; sorted, since line ids name the job. */
  chargeDeltas: number[];
  balance: number;
  /** Balance minus reservations: equal to `balance` once nothing runs, or credits leaked. */
  available: number;
}

export async function jobOutcome(engine: TestEngine, accountId: string, jobId: string): Promise<JobOutcome> {
  const { billing } = engine.deps;
  const job = await engine.jobService.get(jobId);
  return {
    status: job.status,
    all: await streamToBuffer(await engine.jobService.openResult(jobId, 'all')),
    found: await streamToBuffer(await engine.jobService.openResult(jobId, 'found')),
    creditsUsed: job.creditsUsed,
    chargedKeys: await billing.chargedKeys(accountId, jobId),
    chargeDeltas: (await billing.ledger(accountId))
      .filter((l) => l.reason === 'charge' && l.jobId === jobId)
      .map((l) => l.delta)
      .sort((a, b) => a - b),
    balance: (await billing.requireAccount(accountId)).credits,
    available: await billing.available(accountId),
  };
}

/**
 * The same file run start to end by one in-process engine in its own data dir: the reference. On
 * PostgreSQL `env` names the reference's own database (SLUICE_DATABASE_URL), apart from the test's.
 */
export async function cleanRun(dataDir: string, input: string, env: Record<string, string>, credits: number): Promise<JobOutcome> {
  return (await cleanRuns(dataDir, [input], env, credits))[0]!;
}

/**
 * cleanRun started now, to be awaited at the end, so that it overlaps the child processes' work. A
 * test that fails first leaves it unawaited: its failure must not surface as an unhandled rejection.
 */
export function cleanRunMeanwhile(dataDir: string, input: string, env: Record<string, string>, credits: number): Promise<JobOutcome> {
  const run = cleanRun(dataDir, input, env, credits);
  void run.catch(() => undefined);
  return run;
}

/** Clean runs of several files, one after another, each billed to an account of its own. */
export async function cleanRuns(dataDir: string, inputs: string[], env: Record<string, string>, credits: number): Promise<JobOutcome[]> {
  const engine = await openTestEngine({ ...env, SLUICE_DATA_DIR: dataDir });
  try {
    const outcomes: JobOutcome[] = [];
    for (const [i, input] of inputs.entries()) {
      const accountId = i === 0 ? 'acc' : `acc-${i}`;
      await engine.deps.billing.createAccount({ id: accountId, credits, now: Date.now() });
      // An explicit out dir: without one, runJob writes the result files under the working directory.
      const run = await runJob(engine, { file: input, type: 'gender', accountId, outDir: path.join(dataDir, 'out', String(i)) });
      if (run.summary.status !== 'completed') throw new Error(`the clean run of ${input} ended ${run.summary.status}`);
      outcomes.push(await jobOutcome(engine, accountId, run.summary.id));
    }
    return outcomes;
  } finally {
    await engine.close();
  }
}

/**
 * Nothing lost, nothing doubled: the same result bytes, the same keys paid for, the same charge
 * lines and the same balance as the clean run, and no credits left reserved.
 */
export function expectSameOutcome(actual: JobOutcome, expected: JobOutcome, context = ''): void {
  expect(actual.status, context).toBe('completed');
  expect(actual.all.equals(expected.all), `all.csv differs from the clean run ${context}`).toBe(true);
  expect(actual.found.equals(expected.found), `found.csv differs from the clean run ${context}`).toBe(true);
  expect(actual.chargedKeys, `keys paid for ${context}`).toEqual(expected.chargedKeys);
  expect(actual.chargeDeltas, `ledger charge lines ${context}`).toEqual(expected.chargeDeltas);
  expect(actual.creditsUsed).toBe(expected.creditsUsed);
  expect(-actual.chargeDeltas.reduce((sum, d) => sum + d, 0), 'the ledger adds up to the credits the job says it used').toBe(actual.creditsUsed);
  expect(actual.balance, `balance ${context}`).toBe(expected.balance);
  expect(actual.available, 'credits still reserved after the job ended').toBe(actual.balance);
}

export async function streamToBuffer(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(Buffer.from(part as Buffer));
  return Buffer.concat(parts);
}

/** pino's JSON lines among a process's stderr, for the reasons a worker gave. */
export function logRecords(stderr: string): Record<string, any>[] {
  return stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as Record<string, any>];
      } catch {
        return [];
      }
    });
}

/** A stand-alone S3-compatible server (s3rver) in its own process, that a test can kill and start again. */
export interface S3ServerProcess {
  child: ChildProcess;
  port: number;
  endpoint: string;
  /** SIGKILL: the store vanishes as a crashed or unplugged server would, connections and all. */
  kill(): Promise<void>;
}

/** The s3rver key pair that SLUICE_S3_ACCESS_KEY_ID / _SECRET_ACCESS_KEY name for these servers. */
export const S3RVER_ENV = { SLUICE_S3_ACCESS_KEY_ID: 'S3RVER', SLUICE_S3_SECRET_ACCESS_KEY: 'S3RVER', SLUICE_S3_BUCKET: 'sluice' };

const S3_SERVER_SCRIPT = `
import S3rver from 's3rver';
const server = new S3rver({
  address: '127.0.0.1',
  port: Number(process.env.S3_PORT),
  directory: process.env.S3_DIR,
  silent: true,
  configureBuckets: [{ name: 'sluice' }],
});
const { port } = await server.run();
process.stdout.write('listening ' + port + '\\n');
`;

const s3Servers = new Set<ChildProcess>();

/** Starts s3rver over `directory` on `port` (0: any free one); the same directory and port restart it. */
export async function startS3Server(directory: string, port = 0, timeoutMs = 15_000): Promise<S3ServerProcess> {
  fs.mkdirSync(directory, { recursive: true });
  const child = spawn(process.execPath, ['--input-type=module', '-e', S3_SERVER_SCRIPT], {
    cwd: REPO_ROOT,
    env: { ...process.env, S3_DIR: directory, S3_PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  s3Servers.add(child);
  child.once('exit', () => s3Servers.delete(child));
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (text: string) => (out += text));
  child.stderr!.setEncoding('utf8').on('data', (text: string) => (err += text));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = /listening (\d+)/.exec(out);
    if (match) {
      const bound = Number(match[1]);
      return {
        child,
        port: bound,
        endpoint: `http://127.0.0.1:${bound}`,
        async kill() {
          child.kill('SIGKILL');
          await exited(child);
        },
      };
    }
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`s3rver exited before listening: ${err}`);
    if (Date.now() > deadline) throw new Error(`s3rver not listening after ${timeoutMs} ms: ${err}`);
    await sleep(20);
  }
}

/** For afterEach. */
export async function stopS3Servers(): Promise<void> {
  const left = [...s3Servers];
  s3Servers.clear();
  for (const child of left) child.kill('SIGKILL');
  await Promise.all(left.map((child) => exited(child)));
}

/**
 * A TCP port in front of a service that a test can take away (connections refused, open ones cut)
 * and give back on the same port, as a crashed and restarted service would behave on the wire.
 */
export interface Outage {
  port: number;
  down(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

export async function outageSwitch(targetPort: number): Promise<Outage> {
  const sockets = new Set<net.Socket>();
  const forward = (client: net.Socket) => {
    const upstream = net.connect(targetPort, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.once('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream).pipe(client);
  };
  const listen = (port: number) =>
    new Promise<net.Server>((resolve, reject) => {
      const server = net.createServer(forward);
      server.once('error', reject);
      server.listen({ host: '127.0.0.1', port }, () => resolve(server));
    });
  let server: net.Server | undefined = await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  const down = async () => {
    const closing = server;
    server = undefined;
    for (const socket of sockets) socket.destroy();
    if (closing) await new Promise((resolve) => closing.close(resolve));
  };
  return {
    port,
    down,
    async up() {
      server ??= await listen(port);
    },
    close: down,
  };
}

/**
 * What a test of a `describe.each(TEST_STORES)` suite opens on `store`, closed after each test in
 * this order: processes first (SIGKILL also ends one left stopped by a failed test), then the
 * servers, peeks and engines they used, then the test's databases and scratch dirs.
 */
export function reliabilityScope(store: StoreKind) {
  const engines = engineScope(store);
  const peeks: StorePeek[] = [];
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    await killChildren();
    await stopS3Servers();
    for (const close of closers.splice(0).reverse()) await close();
    for (const peek of peeks.splice(0)) await peek.close();
    await engines.closeAll();
    removeScratchDirs();
  });
  return {
    engines,
    /** Run after the test, last added first. */
    closers,
    peek(dataDir: string, env: Record<string, string>): StorePeek {
      const peek = openPeek(dataDir, env);
      peeks.push(peek);
      return peek;
    },
  };
}

/** Whether `env` puts an engine on PostgreSQL (SLUICE_DATABASE_URL) rather than the data dir's SQLite file. */
export function storeOf(env: Record<string, string>): StoreKind {
  return env.SLUICE_DATABASE_URL === undefined ? STORE_KINDS.sqlite : STORE_KINDS.postgres;
}

/**
 * Read-only looks at the store of a data dir (its SQLite file, or the PostgreSQL database that
 * `env` names) while other processes write it. The SQL is what both stores accept, with `?`
 * parameters; PostgreSQL's BIGINT comes back as a number, as from SQLite.
 */
export interface StorePeek {
  readonly kind: StoreKind;
  all<R>(sql: string, params?: readonly unknown[]): Promise<R[]>;
  get<R>(sql: string, params?: readonly unknown[]): Promise<R | undefined>;
  job(id: string): Promise<JobRow>;
  heldChunkLeases(jobId: string): Promise<number>;
  /**
   * How often each chunk's lease was taken (its epoch counts every take): more than once means a
   * worker lost the chunk, crashed on it or failed on it and tried again.
   */
  chunkLeaseTakes(jobId: string): Promise<number[]>;
  chunkCursors(jobId: string): Promise<{ chunk_index: number; cursor: number; row_count: number; status: string }[]>;
  close(): Promise<void>;
}

const INT8_OID = 20;
const PEEK_TYPES = {
  getTypeParser(oid: number, format?: 'text' | 'binary') {
    if (oid === INT8_OID) return (value: string) => Number(value);
    return format === 'binary' ? pg.types.getTypeParser(oid, 'binary') : pg.types.getTypeParser(oid, 'text');
  },
} as pg.CustomTypesConfig;

export function openPeek(dataDir: string, env: Record<string, string>): StorePeek {
  const url = env.SLUICE_DATABASE_URL;
  let all: StorePeek['all'];
  let close: () => Promise<void>;
  if (url === undefined) {
    const db = new Database(dbFileOf(dataDir), { fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    all = async <R>(sql: string, params: readonly unknown[] = []) => db.prepare(sql).all(...params) as R[];
    close = async () => void db.close();
  } else {
    const pool = new pg.Pool({ connectionString: url, max: 2, types: PEEK_TYPES });
    // The test drops the database at its end, which cuts idle connections: not a failure.
    pool.on('error', () => undefined);
    all = async <R>(sql: string, params: readonly unknown[] = []) => {
      let n = 0;
      return (await pool.query(sql.replace(/\?/g, () => `$${++n}`), params as unknown[])).rows as R[];
    };
    close = () => pool.end();
  }
  const get = async <R>(sql: string, params: readonly unknown[] = []) => (await all<R>(sql, params))[0];
  return {
    kind: storeOf(env),
    all,
    get,
    async job(id) {
      const row = await get<JobRow>('SELECT status, phase, processed_rows, total_rows, lease_owner FROM jobs WHERE id = ?', [id]);
      if (!row) throw new Error(`no job ${id}`);
      return row;
    },
    async heldChunkLeases(jobId) {
      return (await get<{ n: number }>('SELECT COUNT(*) AS n FROM job_chunks WHERE job_id = ? AND lease_owner IS NOT NULL', [jobId]))!.n;
    },
    async chunkLeaseTakes(jobId) {
      return (await all<{ n: number }>('SELECT lease_epoch AS n FROM job_chunks WHERE job_id = ? ORDER BY chunk_index', [jobId])).map((r) => r.n);
    },
    chunkCursors(jobId) {
      return all('SELECT chunk_index, cursor, row_count, status FROM job_chunks WHERE job_id = ? ORDER BY chunk_index', [jobId]);
    },
    close,
  };
}

/** As test/support's waitFor, for checks that read the store and so answer a promise. */
export async function waitUntil(check: () => boolean | Promise<boolean>, timeoutMs: number, everyMs = 5): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await sleep(everyMs);
  }
  return check();
}

/**
 * Stops `child` with SIGSTOP at a moment when it holds no write lock of the store, and resolves
 * with the number of tries. A process frozen inside a checkpoint transaction would keep every
 * other process from writing (SQLite) or from the rows it locked (PostgreSQL), so a take-over
 * could not happen at all: that is a different test from a frozen worker whose lease runs out
 * while the others go on. On SQLite a short `BEGIN IMMEDIATE` from here proves the lock is free; on
 * PostgreSQL no other session of the database has a transaction open. When the lock is held, the
 * child runs on for a moment and is stopped again.
 */
export async function freezeOutsideWriteLock(child: ChildProcess, peek: StorePeek, dataDir: string, maxTries = 200): Promise<number> {
  const probe = peek.kind === STORE_KINDS.sqlite ? new Database(dbFileOf(dataDir), { fileMustExist: true, timeout: 50 }) : undefined;
  const lockFree = async (): Promise<boolean> => {
    if (probe) {
      try {
        probe.exec('BEGIN IMMEDIATE');
        probe.exec('ROLLBACK');
        return true;
      } catch {
        return false;
      }
    }
    const open = await peek.get<{ n: number }>(
      "SELECT COUNT(*) AS n FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid() AND xact_start IS NOT NULL",
    );
    return open!.n === 0;
  };
  try {
    for (let tries = 1; tries <= maxTries; tries++) {
      child.kill('SIGSTOP');
      // The signal is delivered asynchronously; give the kernel a moment to actually stop it.
      await sleep(20);
      if (await lockFree()) return tries;
      child.kill('SIGCONT');
      await sleep(5 + Math.floor(Math.random() * 20));
    }
    throw new Error(`could not stop process ${child.pid} outside a write transaction in ${maxTries} tries`);
  } finally {
    probe?.close();
  }
}

/**
 * Holds the store's write lock from this process, as a backup, a migration or a stuck tool would:
 * SQLite's one write lock on the file, or on PostgreSQL every table of the database in EXCLUSIVE
 * mode, which lets readers through and makes every writer wait, as SQLite's lock in WAL mode does.
 */
export async function lockStore(dataDir: string, env: Record<string, string>): Promise<{ release: () => Promise<void> }> {
  const url = env.SLUICE_DATABASE_URL;
  if (url === undefined) {
    const db = new Database(dbFileOf(dataDir), { fileMustExist: true, timeout: 10_000 });
    db.exec('BEGIN EXCLUSIVE');
    return {
      async release() {
        db.exec('COMMIT');
        db.close();
      },
    };
  }
  const client = new pg.Client({ connectionString: url });
  // The test's database is dropped with FORCE at its end, which cuts this connection: not a failure.
  client.on('error', () => undefined);
  await client.connect();
  const tables = (await client.query<{ name: string }>("SELECT quote_ident(tablename) AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename")).rows;
  if (tables.length === 0) throw new Error('no tables to lock');
  // The tables are locked one after another, so waiting for one while holding others can deadlock
  // with a worker's transaction that holds one and waits for another (ten deadlocks in a row were
  // seen once, with as many tables as there are now). So this never waits long while holding: each
  // try gives up after 50 ms (55P03) or on a deadlock (40P01), lets everything go, and tries again,
  // for up to 20 s.
  const deadline = Date.now() + 20_000;
  for (;;) {
    await client.query('BEGIN');
    try {
      await client.query("SET LOCAL lock_timeout = '50ms'");
      await client.query(`LOCK TABLE ${tables.map((t) => t.name).join(', ')} IN EXCLUSIVE MODE`);
      break;
    } catch (error) {
      await client.query('ROLLBACK');
      const code = (error as { code?: string }).code;
      if ((code !== '40P01' && code !== '55P03') || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 10 + Math.random() * 40));
    }
  }
  return {
    async release() {
      await client.query('COMMIT');
      await client.end();
    },
  };
}

/**
 * Waits until the job leaves `queued` and `running`, or one of `processes` exits (a dead worker
 * would leave it running for ever), and gives the job's status then: a test fails at once, with the
 * reason, instead of waiting out its time-out.
 */
export async function jobEnd(db: { job(id: string): JobRow | Promise<JobRow> }, jobId: string, processes: CliChild[], timeoutMs = 30_000): Promise<string> {
  const running = (status: string) => status === 'queued' || status === 'running';
  await waitUntil(async () => !running((await db.job(jobId)).status) || processes.some((p) => p.child.exitCode !== null || p.child.signalCode !== null), timeoutMs, 20);
  return (await db.job(jobId)).status;
}

export function dbFileOf(dataDir: string): string {
  return path.join(dataDir, 'sluice.db');
}
