/**
 * What the scale-out scenario's machines share, each in a process of its own as on separate
 * machines: one S3 endpoint (Sluice's embedded server), one provider simulator, and a fresh
 * database on one PostgreSQL server; and the worker processes themselves, each with a data dir of
 * its own. Everything listens on 127.0.0.1 only.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { BENCH_DIR, CLI, childEnv, lastEvent, REMOTE_SIMULATOR, startNode, stopChild, tail, type Child } from './children.js';
import type { SimulatorListening, SimulatorReport } from './remote-simulator.js';
import type { S3Listening } from './s3-server.js';

const S3_SERVER = path.join(BENCH_DIR, 's3-server.js');
const START_TIMEOUT_MS = 60_000;

/** Waits until `ready()` or the child's death or the time-out, whichever comes first. */
async function until(child: Child, what: string, ready: () => boolean, timeoutMs = START_TIMEOUT_MS): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ready()) {
    if (child.child.exitCode !== null || child.child.signalCode !== null) throw new Error(`${what} exited before it was ready:\n${tail(child.stderr())}`);
    if (Date.now() > deadline) {
      await stopChild(child);
      throw new Error(`${what} was not ready after ${timeoutMs / 1000} s:\n${tail(child.stderr())}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

export interface SharedS3 {
  child: Child;
  /** The SLUICE_S3_* settings every machine gets. */
  env: Record<string, string>;
}

/** Sluice's embedded S3 server over `dir`, with a key pair made for this run. */
export async function startSharedS3(dir: string): Promise<SharedS3> {
  const keys = { SLUICE_S3_ACCESS_KEY_ID: `bench-${randomBytes(6).toString('hex')}`, SLUICE_S3_SECRET_ACCESS_KEY: randomBytes(24).toString('base64url') };
  let endpoint: string | undefined;
  const child = startNode(S3_SERVER, ['--dir', dir, '--bucket', 'sluice'], childEnv(undefined, keys), {
    onJson: (v) => {
      if (v.event === 'listening') endpoint = (v as unknown as S3Listening).endpoint;
    },
  });
  await until(child, 'the S3 server', () => endpoint !== undefined);
  return { child, env: { ...keys, SLUICE_S3_ENDPOINT: endpoint!, SLUICE_S3_BUCKET: 'sluice' } };
}

export async function startSimulator(latencyMs: number, full: number, env: NodeJS.ProcessEnv = childEnv(undefined, {})): Promise<{ child: Child; url: string }> {
  let url: string | undefined;
  const child = startNode(REMOTE_SIMULATOR, ['--latency-ms', String(latencyMs), '--full', String(full)], env, {
    onJson: (v) => {
      if (v.event === 'listening') url = (v as unknown as SimulatorListening).url;
    },
  });
  await until(child, 'the provider simulator', () => url !== undefined);
  return { child, url: url! };
}

/** SIGTERM makes the simulator print its counters and timeline, then exit. */
export async function stopSimulator(child: Child): Promise<SimulatorReport> {
  await stopChild(child);
  return lastEvent<SimulatorReport>(child.stdout(), 'stats');
}

/**
 * `sluice worker` processes, each on a data dir of its own, started together; resolves once every
 * one has said it runs (its engine open, its database and S3 reached), so that start-up stays out
 * of what the scenario times.
 */
export async function startWorkers(dirs: string[], env: Record<string, string>): Promise<Child[]> {
  const workers = dirs.map((dir) => {
    fs.mkdirSync(dir, { recursive: true });
    return startNode(CLI, ['worker'], childEnv(dir, env));
  });
  try {
    await Promise.all(workers.map((w, i) => until(w, `worker ${i + 1}`, () => /worker \S+ running/.test(w.stderr()))));
  } catch (e: unknown) {
    await Promise.all(workers.map((w) => stopChild(w)));
    throw e;
  }
  return workers;
}

/**
 * CPU time, in milliseconds, of every process below this one (Linux /proc; clock ticks of 10 ms):
 * each one's own, plus what its children that have exited and been reaped used, so that a server's
 * short-lived helpers (PostgreSQL's autovacuum workers) count too. This process's own is left out.
 */
export function descendantsCpuMs(): Map<number, number> {
  const parents = new Map<number, number>();
  const cpu = new Map<number, number>();
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      // After the command name, which is in parentheses and may hold spaces: ppid is the 2nd field,
      // utime, stime, cutime and cstime the 12th to the 15th.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parents.set(Number(name), Number(fields[1]));
      cpu.set(Number(name), (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 10);
    } catch {
      // Exited between readdir and read.
    }
  }
  const below = new Map<number, number>();
  for (const [pid, ms] of cpu) {
    for (let p = parents.get(pid); p !== undefined && p > 1; p = parents.get(p)) {
      if (p === process.pid) {
        below.set(pid, ms);
        break;
      }
    }
  }
  return below;
}

/** Sums `cpu` (from descendantsCpuMs) over the processes of `children` and the processes below them. */
export function cpuMsOf(cpu: Map<number, number>, children: Child[]): number {
  const roots = new Set(children.map((c) => c.child.pid));
  let sum = 0;
  for (const [pid, ms] of cpu) if (roots.has(pid)) sum += ms;
  return sum;
}

/** The machine's CPU time so far, busy and in all, in clock ticks, from /proc/stat (Linux). */
export function machineTicks(): { busy: number; total: number } | undefined {
  try {
    const line = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
    const fields = line.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal ...: idle and iowait are the time nobody ran.
    const total = fields.slice(0, 8).reduce((a, b) => a + b, 0);
    return { busy: total - fields[3]! - fields[4]!, total };
  } catch {
    return undefined;
  }
}

export interface JobPeek {
  status: string;
  phase: string;
  processedRows: number;
  totalRows: number | null;
  errorRows: number;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
}

/** Reads the one job of a database straight from its table, as an operator's query would. */
export async function peekJob(client: pg.Client): Promise<JobPeek | undefined> {
  const { rows } = await client.query<Record<string, string | null>>(
    'SELECT status, phase, processed_rows, total_rows, error_rows, created_at, started_at, finished_at FROM jobs ORDER BY created_at DESC LIMIT 1',
  );
  const r = rows[0];
  if (!r) return undefined;
  const num = (v: string | null | undefined): number | null => (v === null || v === undefined ? null : Number(v));
  return {
    status: r.status!,
    phase: r.phase!,
    processedRows: num(r.processed_rows)!,
    totalRows: num(r.total_rows),
    errorRows: num(r.error_rows)!,
    createdAt: num(r.created_at)!,
    startedAt: num(r.started_at),
    finishedAt: num(r.finished_at),
  };
}
