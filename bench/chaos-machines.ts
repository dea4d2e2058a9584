/**
 * What the many-machine crash test shares and what it keeps apart. Shared: one PostgreSQL database
 * and one S3 endpoint (the embedded server, hosted by the chaos process on 127.0.0.1), the seal key
 * and the chaos settings. Apart: each machine's data dir and its host name. Worker processes listen
 * on nothing, so no machine needs an address of its own; what tells machines apart to Sluice is
 * the host name in every lease owner (`host:pid:random`), and a worker frees at once the leases of
 * dead processes of its own host. On one host name a restart would free a killed machine's leases
 * by that shortcut; real machines wait for them to lapse. So each machine runs in a UTS namespace
 * of its own with its own host name, and its leases lapse as another machine's would.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { ensureEmbeddedS3 } from '../src/storage/s3/embedded-s3-server.js';
import type { Child } from './children.js';
import { createDatabase, dropDatabase, startPostgres } from './postgres-server.js';

/** Settings every machine and the chaos process's own engine get, to share one store. */
export type SharedSettings = Record<string, string>;

export interface SharedS3 {
  endpoint: string;
  /** SLUICE_S3_* for every machine. */
  settings: SharedSettings;
  close(): Promise<void>;
}

/** The one S3 endpoint of the run: the embedded server on 127.0.0.1, with a key pair of this run. */
export async function startSharedS3(dir: string): Promise<SharedS3> {
  const credentials = { accessKeyId: `chaos-${randomBytes(4).toString('hex')}`, secretAccessKey: randomBytes(24).toString('base64url') };
  const server = await ensureEmbeddedS3({ dataDir: dir, port: 0, bucket: 'sluice', region: 'us-east-1', ...credentials });
  return {
    endpoint: server.endpoint,
    settings: {
      SLUICE_S3_ENDPOINT: server.endpoint,
      SLUICE_S3_ACCESS_KEY_ID: credentials.accessKeyId,
      SLUICE_S3_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      SLUICE_S3_BUCKET: 'sluice',
    },
    close: () => server.close(),
  };
}

/** A seal key for one chaos run, made once and given to every machine and to the reference: without the same one, a sender could not unseal the webhook secret another machine sealed, and the billing cache names (keyed by it) would not compare. */
export function sharedSealKey(): string {
  return randomBytes(32).toString('base64');
}

export interface ChaosDatabase {
  /** A new, empty database for this run. */
  url: string;
  /** Where it lives, for the report: the server given, or the one started here. */
  origin: string;
  /** Drops the database, and stops the server if this process started it. */
  dispose(): Promise<void>;
}

/**
 * A database of its own on `serverUrl` (any database of a server on which this user may CREATE
 * DATABASE), or on a PostgreSQL server started here from the bundled binaries when none is given.
 */
export async function chaosDatabase(serverUrl: string | undefined): Promise<ChaosDatabase> {
  const server = serverUrl === undefined ? await startPostgres() : undefined;
  const admin = serverUrl ?? server!.url;
  let url: string;
  try {
    url = await createDatabase(admin, 'sluice_chaos');
  } catch (e: unknown) {
    await server?.stop();
    throw e;
  }
  return {
    url,
    origin: server ? 'bundled PostgreSQL started for this run' : `${new URL(admin).host} (given)`,
    async dispose() {
      try {
        await dropDatabase(admin, url);
      } finally {
        await server?.stop();
      }
    },
  };
}

/** How a machine gets a host name of its own: `unshare` as root, in a user namespace otherwise, or not at all. */
type Isolation = { prefix: string[]; how: string } | undefined;
let isolation: Isolation | null = null;

function findIsolation(): Isolation {
  const tries: [string[], string][] = [
    [['--uts'], 'own UTS namespace each'],
    [['--user', '--map-root-user', '--uts'], 'own user and UTS namespace each'],
  ];
  for (const [flags, how] of tries) {
    const probe = spawnSync('unshare', [...flags, '--', 'sh', '-c', 'hostname "$0" && hostname', 'sluice-chaos-probe'], { encoding: 'utf8' });
    if (probe.status === 0 && probe.stdout.trim() === 'sluice-chaos-probe') return { prefix: ['unshare', ...flags, '--'], how };
  }
  return undefined;
}

/** How the machines' host names were kept apart, for the report; `undefined` when they could not be. */
export function hostIsolation(): string | undefined {
  isolation ??= findIsolation();
  return isolation?.how;
}

/** Every machine process started and not yet seen exit; `killMachines` ends them. */
const machines = new Set<ChildProcess>();

/**
 * `node script args` as machine `host`: under its own host name where `unshare` allows. The shell
 * `exec`s node, so the pid is node's own and a SIGKILL reaches the worker itself.
 */
export function startMachine(host: string, script: string, args: string[], env: NodeJS.ProcessEnv, cwd: string): Child {
  isolation ??= findIsolation();
  const node = [process.execPath, script, ...args];
  const [command, ...argv] = isolation ? [...isolation.prefix, 'sh', '-c', 'hostname "$0" && exec "$@"', host, ...node] : node;
  const child = spawn(command!, argv, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  machines.add(child);
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (text: string) => (out = (out + text).slice(-64 * 1024)));
  child.stderr!.setEncoding('utf8').on('data', (text: string) => (err = (err + text).slice(-64 * 1024)));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      machines.delete(child);
      resolve({ code, signal });
    });
    child.once('error', () => {
      machines.delete(child);
      resolve({ code: -1, signal: null });
    });
  });
  return { child, exited, stdout: () => out, stderr: () => err };
}

/** SIGKILL, each by its own pid, to every machine still running; for a run cut short. */
export async function killMachines(): Promise<void> {
  const left = [...machines];
  for (const child of left) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  await Promise.all(left.map((child) => (child.exitCode !== null || child.signalCode !== null ? undefined : new Promise<void>((resolve) => child.once('exit', () => resolve())))));
  machines.clear();
}
