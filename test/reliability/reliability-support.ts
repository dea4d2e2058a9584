import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Database from 'better-sqlite3';
import { expect } from 'vitest';
import { runJob } from '../../src/cli/run-command.js';
import { exited, waitFor } from '../support/child-worker.js';
import type { CliChild, DbPeek } from '../support/cli-process.js';
import { openTestEngine, REPO_ROOT, type TestEngine } from '../support/test-engine.js';

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
  const job = engine.jobService.get(jobId);
  return {
    status: job.status,
    all: await streamToBuffer(await engine.jobService.openResult(jobId, 'all')),
    found: await streamToBuffer(await engine.jobService.openResult(jobId, 'found')),
    creditsUsed: job.creditsUsed,
    chargedKeys: billing.chargedKeys(accountId, jobId),
    chargeDeltas: billing
      .ledger(accountId)
      .filter((l) => l.reason === 'charge' && l.jobId === jobId)
      .map((l) => l.delta)
      .sort((a, b) => a - b),
    balance: billing.requireAccount(accountId).credits,
    available: billing.available(accountId),
  };
}

/** The same file run start to end by one in-process engine in its own data dir: the reference. */
export async function cleanRun(dataDir: string, input: string, env: Record<string, string>, credits: number): Promise<JobOutcome> {
  return (await cleanRuns(dataDir, [input], env, credits))[0]!;
}

/**
 * cleanRun started now, to be awaited at the end, so that it overlaps the child processes' work. A
 * test that fails first leaves it unawaited: its failure must not surface as an unhandled rejection.
 */
export function cleanRunMeanwhile(dataDir: string, input: string, env: Record<string, string>, credits: number): Promise<JobOutcome> {
  const run = cleanRun(dataDir, input, env, credits);
  run.catch(() => undefined);
  return run;
}

/** Clean runs of several files, one after another, each billed to an account of its own. */
export async function cleanRuns(dataDir: string, inputs: string[], env: Record<string, string>, credits: number): Promise<JobOutcome[]> {
  const engine = await openTestEngine({ ...env, SLUICE_DATA_DIR: dataDir });
  try {
    const outcomes: JobOutcome[] = [];
    for (const [i, input] of inputs.entries()) {
      const accountId = i === 0 ? 'acc' : `acc-${i}`;
      engine.deps.billing.createAccount({ id: accountId, credits, now: Date.now() });
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
 * Stops `child` with SIGSTOP at a moment when it holds no SQLite write lock, and resolves with the
 * number of tries. A process frozen inside a checkpoint transaction would keep every other process
 * from writing, so a take-over could not happen at all: that is a different test from a frozen
 * worker whose lease runs out while the others go on. A short `BEGIN IMMEDIATE` from here proves
 * the lock is free; when it is not, the child runs on for a moment and is stopped again.
 */
export async function freezeOutsideWriteLock(child: ChildProcess, dbFile: string, maxTries = 200): Promise<number> {
  const probe = new Database(dbFile, { fileMustExist: true, timeout: 50 });
  try {
    for (let tries = 1; tries <= maxTries; tries++) {
      child.kill('SIGSTOP');
      // The signal is delivered asynchronously; give the kernel a moment to actually stop it.
      await sleep(20);
      try {
        probe.exec('BEGIN IMMEDIATE');
        probe.exec('ROLLBACK');
        return tries;
      } catch {
        child.kill('SIGCONT');
        await sleep(5 + Math.floor(Math.random() * 20));
      }
    }
    throw new Error(`could not stop process ${child.pid} outside a write transaction in ${maxTries} tries`);
  } finally {
    probe.close();
  }
}

/** Holds SQLite's write lock on `dbFile` from this process, as a backup, a migration or a stuck tool would. */
export function lockDatabase(dbFile: string): { release: () => void } {
  const db = new Database(dbFile, { fileMustExist: true, timeout: 10_000 });
  db.exec('BEGIN EXCLUSIVE');
  return {
    release() {
      db.exec('COMMIT');
      db.close();
    },
  };
}

/**
 * Waits until the job leaves `queued` and `running`, or one of `processes` exits (a dead worker
 * would leave it running for ever), and gives the job's status then: a test fails at once, with the
 * reason, instead of waiting out its time-out.
 */
export async function jobEnd(db: DbPeek, jobId: string, processes: CliChild[], timeoutMs = 30_000): Promise<string> {
  const running = (status: string) => status === 'queued' || status === 'running';
  await waitFor(() => !running(db.job(jobId).status) || processes.some((p) => p.child.exitCode !== null || p.child.signalCode !== null), timeoutMs, 20);
  return db.job(jobId).status;
}

export function dbFileOf(dataDir: string): string {
  return path.join(dataDir, 'sluice.db');
}
