import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/** dist/bench when compiled; the repository root is two levels up. */
export const BENCH_DIR = import.meta.dirname;
export const REPO_ROOT = path.resolve(BENCH_DIR, '../..');
export const CLI = path.join(REPO_ROOT, 'dist/src/main/cli.js');
export const ENGINE_RUN = path.join(BENCH_DIR, 'engine-run.js');
export const FLOOR_RUN = path.join(BENCH_DIR, 'floor-run.js');
export const MONITOR_RUN = path.join(BENCH_DIR, 'monitor-run.js');
export const REMOTE_SIMULATOR = path.join(BENCH_DIR, 'remote-simulator.js');
export const REMOTE_TRANSPORT = path.join(BENCH_DIR, 'remote-transport.js');

/** Every child this process started and has not yet seen exit; cleanup kills them. */
const running = new Set<ChildProcess>();

/**
 * Environment for a child: this process's environment, the data dir the scenario gives, warn-level
 * logs (to stderr, which is kept for error messages), then the bench's own overrides. SLUICE_*
 * settings the operator exported pass through on purpose, so that `SLUICE_BATCH_ROWS=5000 npm run
 * bench` measures that setting; RESULTS.md lists them.
 */
export function childEnv(dataDir: string | undefined, overrides: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, SLUICE_LOG_LEVEL: process.env.SLUICE_LOG_LEVEL ?? 'warn', ...overrides };
  if (dataDir !== undefined) env.SLUICE_DATA_DIR = dataDir;
  else delete env.SLUICE_DATA_DIR;
  env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  return env;
}

export interface Child {
  child: ChildProcess;
  /** Resolves with the exit code (null when killed by a signal) once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  stdout: () => string;
  stderr: () => string;
}

/**
 * Starts `node [nodeArgs] script args` and hands every complete stdout line that parses as JSON
 * to `onJson`. Stderr is kept (last 64 KiB) for error messages.
 */
export function startNode(
  script: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  options: { nodeArgs?: string[]; onJson?: (value: Record<string, unknown>) => void; cwd?: string } = {},
): Child {
  const child = spawn(process.execPath, [...(options.nodeArgs ?? []), script, ...args], {
    env,
    cwd: options.cwd ?? REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let out = '';
  let err = '';
  let pending = '';
  child.stdout!.setEncoding('utf8').on('data', (text: string) => {
    out += text;
    pending += text;
    let newline: number;
    while ((newline = pending.indexOf('\n')) >= 0) {
      const line = pending.slice(0, newline).trim();
      pending = pending.slice(newline + 1);
      if (line.startsWith('{') && options.onJson) {
        try {
          options.onJson(JSON.parse(line) as Record<string, unknown>);
        } catch {
          // Not JSON after all: it stays in stdout() for the error message.
        }
      }
    }
  });
  child.stderr!.setEncoding('utf8').on('data', (text: string) => {
    err = (err + text).slice(-64 * 1024);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve({ code, signal });
    });
    child.once('error', () => {
      running.delete(child);
      resolve({ code: -1, signal: null });
    });
  });
  return { child, exited, stdout: () => out, stderr: () => err };
}

/** Runs a node script to its end; rejects with its stderr when it exits non-zero. */
export async function runNode(script: string, args: string[], env: NodeJS.ProcessEnv, options: { nodeArgs?: string[] } = {}): Promise<string> {
  const child = startNode(script, args, env, options);
  const { code, signal } = await child.exited;
  if (code !== 0) {
    const output = child.stderr() || child.stdout();
    // The message, not the stack below it: the last line that is not a stack frame.
    const last = output.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('at ')).at(-1) ?? 'no output';
    const name = script === CLI ? `sluice ${args[0] ?? ''}` : path.basename(script);
    throw new Error(`${name} exited with ${code ?? signal}: ${last}\n(${args.join(' ')})\n${tail(output)}`);
  }
  return child.stdout();
}

/** The last JSON line a child printed with `"event": event`. */
export function lastEvent<T>(stdout: string, event: string): T {
  const lines = stdout.split('\n').filter((l) => l.startsWith('{'));
  for (let i = lines.length - 1; i >= 0; i--) {
    const value = JSON.parse(lines[i]!) as { event?: string };
    if (value.event === event) return value as T;
  }
  throw new Error(`no "${event}" line in the child's output:\n${tail(stdout)}`);
}

export function tail(text: string, chars = 4000): string {
  return text.length > chars ? `...${text.slice(-chars)}` : text;
}

/** Sends SIGTERM, then SIGKILL if the child has not exited within `graceMs`. */
export async function stopChild(c: Child, graceMs = 10_000): Promise<void> {
  if (c.child.exitCode !== null || c.child.signalCode !== null) return;
  c.child.kill('SIGTERM');
  const timer = setTimeout(() => c.child.kill('SIGKILL'), graceMs);
  await c.exited;
  clearTimeout(timer);
}

/** Kills (SIGKILL, each by its own pid) every child still running, and waits for them. */
export async function killAll(): Promise<void> {
  const left = [...running];
  for (const child of left) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  await Promise.all(
    left.map((child) =>
      child.exitCode !== null || child.signalCode !== null ? undefined : new Promise<void>((resolve) => child.once('exit', () => resolve())),
    ),
  );
  running.clear();
}

/** Resident set size of a process in bytes, from /proc (Linux only). */
export function rssOf(pid: number): number | undefined {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
    return match ? Number(match[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** User + system CPU time a process has used so far, in milliseconds, from /proc (Linux; clock ticks of 10 ms). */
export function cpuMsOf(pid: number): number | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may hold spaces: utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}
