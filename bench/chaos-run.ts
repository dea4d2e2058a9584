/**
 * The crash test (DESIGN guarantees 1 to 3, and durable webhooks). One big gender job, plus a few
 * small jobs of other accounts for more webhook events, runs twice on the same inputs: once by
 * worker processes left alone on one data dir's SQLite (the reference), once by worker processes
 * killed with SIGKILL at random moments and each replaced by a fresh one. Both runs must end with
 * the same result bytes and charges, and every job completed; every event must reach the receiver,
 * and its repeats must share one webhook-id. The run under fire is either more workers on one data
 * dir's SQLite, or (`machines`) worker machines that share only PostgreSQL and one S3 endpoint
 * (bench/chaos-machines.ts). `npm run chaos` (bench/chaos.ts), test/reliability/chaos.test.ts and
 * test/reliability/chaos-machines.test.ts run it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { generateGenderCsv } from '../fixtures/generate-gender-csv.js';
import { loadConfig } from '../src/config/load-config.js';
import { openEngine } from '../src/main/open-engine.js';
import { silentLogger } from '../src/shared/logger.js';
import { WEBHOOK_KINDS } from '../src/webhooks/webhook-store.js';
import { hostIsolation, killMachines, sharedSealKey, startMachine, startSharedS3 } from './chaos-machines.js';
import { collect, compare } from './chaos-verify.js';
import { Peek, startReceiver, type JobView, type Receiver } from './chaos-watch.js';
import { killAll, startNode, stopChild, tail, type Child } from './children.js';
import { seededRandom } from '../src/shared/seeded-random.js';

const HERE = import.meta.dirname;
/** dist/bench under `npm run chaos`, bench/ when vitest runs the source. */
const ROOT = path.basename(path.dirname(HERE)) === 'dist' ? path.resolve(HERE, '../..') : path.resolve(HERE, '..');
const CLI = path.join(ROOT, 'dist/src/main/cli.js');

export interface ChaosOptions {
  rows: number;
  /** Kills that must land on a worker holding a lease before the big job completes. */
  kills: number;
  seed: number;
  /** Chunks of the big job (50): the more, the longer split and assembly last, and the run. */
  chunks?: number;
  /** Worker processes alive at once. */
  workers?: number;
  /** Small jobs of other accounts, each one more bulk.completed event. */
  sideJobs?: number;
  /** Senders killed during a webhook attempt, on top of `kills`. */
  deliveryKills?: number;
  /**
   * Worker machines of the run under fire (2 or more), in place of `workers` on one data dir: each
   * its own process, data dir and host name, sharing only `databaseUrl` and one S3 endpoint.
   */
  machines?: number;
  /** An empty PostgreSQL database for the machines; needed with `machines`. */
  databaseUrl?: string;
  /** Connections each machine keeps to PostgreSQL (5): enough for two slots and the sender. */
  poolSize?: number;
  log?: (line: string) => void;
}

export interface ChaosReport {
  seed: number;
  rows: number;
  /** Where the run under fire ran: its store, and how many processes on how many data dirs. */
  setup: string;
  /** Worker machines of the run under fire; undefined on one data dir. */
  machines: number | undefined;
  /** Restarts of each machine, in machine order (one entry in all on one data dir). */
  restartsByMachine: number[];
  chunkRows: number;
  batchRows: number;
  cleanMs: number;
  chaosMs: number;
  /** Kills of a lease holder before the big job completed, by the big job's phase at the time. */
  kills: number;
  phases: Record<string, number>;
  /** Every SIGKILL sent, counted or not. */
  killsSent: number;
  missedKills: number;
  deliveryKills: number;
  restarts: number;
  events: number;
  deliveries: number;
  distinctIds: number;
  resultsIdentical: boolean;
  ledgerIdentical: boolean;
  rowsLost: number;
  rowsDoubled: number;
  chargesDoubled: number;
  /** Status of every job at the end, e.g. { completed: 4 }. */
  statuses: Record<string, number>;
  /** Each failed check, with its evidence; empty when the run passed. */
  problems: string[];
}

type Settings = Record<string, string>;
interface JobRef { id: string; accountId: string }
interface Proc { c: Child; pid: number; machine: number; id?: string; killed?: boolean }
interface Timing { split: number; assemble: number; total: number }

/** Chunks small enough that every phase lasts long enough to be hit, and a lease that lapses fast. */
function chaosSettings(rows: number, chunks: number): Settings {
  const chunk = Math.max(100, Math.round(rows / chunks));
  return {
    SLUICE_CHUNK_ROWS: String(chunk),
    SLUICE_BATCH_ROWS: String(Math.max(10, Math.round(chunk / 10))),
    SLUICE_LEASE_SECONDS: '2',
    SLUICE_POLL_MS: '50',
    SLUICE_WORKER_CONCURRENCY: '2',
    SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true',
    // A killed sender's claim lasts one attempt plus 5 s; a short attempt lets the next one take over soon.
    SLUICE_WEBHOOK_TIMEOUT_MS: '1000',
    SLUICE_LOG_LEVEL: 'warn',
  };
}

/** Never the operator's own SLUICE_* settings: a stray SLUICE_S3_ENDPOINT would change what is tested. */
function childEnv(dataDir: string, settings: Settings): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('SLUICE_')));
  return { ...base, ...settings, SLUICE_DATA_DIR: dataDir, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
}


export async function runChaos(o: ChaosOptions): Promise<ChaosReport> {
  const began = performance.now();
  const log = (line: string): void => o.log?.(`${((performance.now() - began) / 1000).toFixed(1).padStart(6)} s  ${line}`);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-chaos-'));
  // One seal key for the reference and the run under kills: it keys the billing cache, whose
  // names `chargedKeys` compares between the two.
  const settings: Settings = { ...chaosSettings(o.rows, o.chunks ?? 50), SLUICE_SEAL_KEY: sharedSealKey() };
  const rng = seededRandom(o.seed);
  try {
    const inputs = [path.join(work, 'big.csv'), ...Array.from({ length: o.sideJobs ?? 3 }, (_, i) => path.join(work, `side-${i + 1}.csv`))];
    for (const [i, file] of inputs.entries()) {
      const rows = i === 0 ? o.rows : 300 + Math.floor(rng() * 700);
      const csv = generateGenderCsv({ rows, seed: o.seed + i, duplicateShare: 0.15, invalidShare: 0.05 });
      // Side jobs get domains of their own. The result cache serves every account, so an address
      // in two jobs would make `cached` depend on which job looked it up first, in either run.
      await pipeline(i === 0 ? csv : csv.map((text) => String(text).replace(/example\./gi, `side${i}-$&`)), fs.createWriteStream(file));
    }
    log(`seed ${o.seed}: ${o.rows} rows, chunks of ${settings.SLUICE_CHUNK_ROWS}, batches of ${settings.SLUICE_BATCH_ROWS}, in ${work}`);
    const cleanDir = path.join(work, 'clean');
    const t0 = performance.now();
    const clean = await cleanRun(cleanDir, settings, inputs, o.workers ?? 2);
    const cleanMs = performance.now() - t0;
    log(`clean run: ${(cleanMs / 1000).toFixed(1)} s (split ${clean.timing.split} ms, assemble ${clean.timing.assemble} ms)`);
    const expected = await collect(childEnv(cleanDir, settings), clean.jobs);
    const site = o.machines === undefined ? oneDataDir(path.join(work, 'chaos'), settings, o.workers ?? 2) : await manyMachines(path.join(work, 'chaos'), settings, o);
    try {
      log(`run under kills: ${site.setup}`);
      const t1 = performance.now();
      const chaos = await chaosRun(site, inputs, o, rng, clean.timing, log);
      const chaosMs = performance.now() - t1;
      const actual = await collect(site.env, chaos.jobs);
      const report = { seed: o.seed, rows: o.rows, setup: site.setup, machines: o.machines, chunkRows: Number(settings.SLUICE_CHUNK_ROWS), batchRows: Number(settings.SLUICE_BATCH_ROWS), cleanMs, chaosMs };
      return { ...report, ...chaos.stats, ...(await compare(inputs, expected, actual, chaos.stats.problems)) };
    } finally {
      await site.close();
    }
  } finally {
    await killAll();
    await killMachines();
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** Where the run under fire runs: the store its workers share, and how a worker of machine `i` starts. */
interface Site {
  setup: string;
  /** Of the engines this process opens on that store: to queue the jobs, and to read the outcome. */
  env: NodeJS.ProcessEnv;
  machines: number;
  /** How the kill log names machine `i`: its host name, or nothing when the workers share one. */
  label(machine: number): string;
  start(machine: number): Proc;
  peek(): Promise<Peek>;
  close(): Promise<void>;
}

/** Today's set-up: `workers` processes on one data dir, its SQLite file and its embedded S3. */
function oneDataDir(dataDir: string, settings: Settings, workers: number): Site {
  return {
    setup: `${workers} worker processes on one data dir (SQLite, embedded S3)`,
    env: childEnv(dataDir, settings),
    machines: workers,
    label: () => '',
    start: (machine) => startWorker(dataDir, settings, machine),
    peek: async () => Peek.sqlite(dataDir),
    close: async () => undefined,
  };
}

/**
 * Machines that share only PostgreSQL and one S3 endpoint: machine i is host `chaos-m<i>` with data
 * dir `machine-<i>`, which its restarts reuse, as a rebooted machine finds its own disk again.
 */
async function manyMachines(dir: string, settings: Settings, o: ChaosOptions): Promise<Site> {
  if (o.databaseUrl === undefined) throw new Error('machines need a PostgreSQL database (databaseUrl)');
  const s3 = await startSharedS3(path.join(dir, 's3'));
  const shared: Settings = { ...settings, ...s3.settings, SLUICE_DATABASE_URL: o.databaseUrl, SLUICE_DATABASE_POOL_SIZE: String(o.poolSize ?? 5) };
  const n = o.machines!;
  const hosts = hostIsolation();
  return {
    setup: `${n} worker machines, each its own process, data dir and host name (${hosts ?? 'NOT isolated: unshare unavailable, one host name for all'}), sharing only PostgreSQL and S3 at ${s3.endpoint}`,
    env: childEnv(path.join(dir, 'submit'), shared),
    machines: n,
    label: (machine) => `chaos-m${machine + 1}, `,
    start(machine) {
      const c = startMachine(`chaos-m${machine + 1}`, CLI, ['worker'], childEnv(path.join(dir, `machine-${machine + 1}`), shared), ROOT);
      return { c, pid: c.child.pid ?? -1, machine };
    },
    peek: () => Peek.postgres(o.databaseUrl!),
    close: () => s3.close(),
  };
}

/** Accounts, webhooks and queued jobs, made by an engine that is closed before any worker starts. */
async function queue(env: NodeJS.ProcessEnv, inputs: string[], receiver?: Receiver): Promise<JobRef[]> {
  const engine = await openEngine(loadConfig(env), silentLogger());
  try {
    const jobs: JobRef[] = [];
    for (const [i, input] of inputs.entries()) {
      const accountId = i === 0 ? 'chaos' : `side-${i}`;
      await engine.deps.billing.createAccount({ id: accountId, credits: 10_000_000, now: Date.now() });
      if (receiver) {
        const hook = `/hook/${accountId}`;
        const { secret } = await engine.webhooks.store.create({ accountId, kind: WEBHOOK_KINDS.generic, url: receiver.url + hook, events: ['bulk.completed'], description: 'chaos', isActive: true, now: Date.now() });
        receiver.secrets.set(hook, secret!);
      }
      const job = await engine.jobService.submit({ accountId, type: 'gender', body: fs.createReadStream(input), inputName: path.basename(input), options: {} });
      jobs.push({ id: job.id, accountId });
    }
    return jobs;
  } finally {
    await engine.close();
  }
}

function startWorker(dataDir: string, settings: Settings, machine = 0): Proc {
  const c = startNode(CLI, ['worker'], childEnv(dataDir, settings), { cwd: ROOT });
  return { c, pid: c.child.pid ?? -1, machine };
}

/** The worker's id (the lease owner it writes), from its start-up line. */
function workerId(p: Proc): string | undefined {
  p.id ??= /worker (\S+) running/.exec(p.c.stderr())?.[1];
  return p.id;
}

/** The reference: the same jobs, workers never killed. Times the big job's phases for the kill schedule. */
async function cleanRun(dataDir: string, settings: Settings, inputs: string[], n: number): Promise<{ jobs: JobRef[]; timing: Timing }> {
  const jobs = await queue(childEnv(dataDir, settings), inputs);
  const peek = Peek.sqlite(dataDir);
  const procs = Array.from({ length: n }, () => startWorker(dataDir, { ...settings, SLUICE_WEBHOOK_SENDER: 'false' }));
  const seen: Record<string, number> = {};
  try {
    const deadline = Date.now() + 30 * 60_000;
    for (;;) {
      const job = await peek.job(jobs[0]!.id);
      const at = performance.now();
      seen[job.status === 'running' ? job.phase : job.status] ??= at;
      const statuses = await peek.statuses();
      if ((statuses.completed ?? 0) === jobs.length) break;
      const dead = procs.find((p) => p.c.child.exitCode !== null || p.c.child.signalCode !== null);
      if (dead || Date.now() > deadline || job.status === 'failed' || job.status === 'paused') {
        throw new Error(`the clean run did not complete: ${JSON.stringify(statuses)}\n${tail(procs.map((p) => p.c.stderr()).join('\n'))}`);
      }
      await sleep(10);
    }
  } finally {
    await peek.close();
    await Promise.all(procs.map((p) => stopChild(p.c)));
  }
  const span = (from: string, to: string) => Math.round((seen[to] ?? 0) - (seen[from] ?? 0));
  return { jobs, timing: { split: span('split', 'process'), assemble: span('assemble', 'completed'), total: span('split', 'completed') } };
}

type Stats = Pick<ChaosReport, 'kills' | 'phases' | 'killsSent' | 'missedKills' | 'deliveryKills' | 'restarts' | 'restartsByMachine' | 'events' | 'deliveries' | 'distinctIds' | 'statuses' | 'problems'>;

/** The worker processes of the run under fire: one per machine, killed, restarted, and what each kill hit. */
class Fleet {
  private readonly procs = new Set<Proc>();
  private stopping = false;

  constructor(
    private readonly site: Site,
    private readonly peek: Peek,
    private readonly bigId: string,
    private readonly stats: Stats,
    private readonly log: (line: string) => void,
  ) {
    stats.restartsByMachine = Array<number>(this.size).fill(0);
    for (let i = 0; i < this.size; i++) this.add(i);
  }

  private get size(): number {
    return this.site.machines;
  }

  /** Starts again every machine whose worker is gone; each is a restart. */
  keepUp(): void {
    const up = new Set([...this.procs].map((p) => p.machine));
    for (let machine = 0; machine < this.size; machine++) {
      if (up.has(machine)) continue;
      this.add(machine);
      this.stats.restarts++;
      this.stats.restartsByMachine[machine]!++;
    }
  }

  live(): Proc[] {
    return [...this.procs].filter((p) => !p.killed && workerId(p) !== undefined);
  }

  async chunkHolders(): Promise<Proc[]> {
    const live = this.live();
    const held = await Promise.all(live.map((p) => this.peek.held(p.id!)));
    return live.filter((_, i) => held[i]!.includes('chunk'));
  }

  /** SIGKILL. It counts when the worker held a lease and the big job had not completed yet. */
  async kill(p: Proc, why?: string): Promise<void> {
    if (p.killed) return;
    const job = await this.peek.job(this.bigId);
    const held = p.id ? await this.peek.held(p.id) : [];
    p.killed = true;
    this.stats.killsSent++;
    p.c.child.kill('SIGKILL');
    await p.c.exited;
    const phase = job.status === 'running' ? job.phase : job.status;
    if (job.status !== 'completed' && held.length > 0) {
      this.stats.kills++;
      this.stats.phases[phase] = (this.stats.phases[phase] ?? 0) + 1;
    } else if (why === undefined) this.stats.missedKills++;
    this.log(`kill: ${this.site.label(p.machine)}pid ${p.pid} ${why ?? `in ${phase}`}, holding ${held.join(' ') || 'no lease'}; big job at ${job.processed}/${job.total ?? '?'} rows; ${this.stats.kills} counted`);
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.procs].map((p) => stopChild(p.c)));
  }

  private add(machine: number): void {
    const p = this.site.start(machine);
    this.procs.add(p);
    void p.c.exited.then(({ code, signal }) => {
      this.procs.delete(p);
      if (!p.killed && !this.stopping) this.stats.problems.push(`worker ${p.pid} exited on its own (${code ?? signal}): ${tail(p.c.stderr(), 2000)}`);
    });
  }
}

/**
 * When to kill whom: a few times during split, then each time processing has moved on by a random
 * share of what is left (now and then every chunk holder at once), and the rest during assembly.
 * Split and assembly kills come at a random moment within that phase's duration in the clean run.
 */
class Schedule {
  private readonly reserve;
  private splitKills = 0;
  private mark: { from: number; step: number } | undefined;

  constructor(
    private readonly kills: number,
    private readonly rng: () => number,
    private readonly timing: Timing,
  ) {
    this.reserve = { split: kills >= 10 ? 3 : 1, assemble: kills >= 10 ? 2 : 1 };
  }

  async next(job: JobView, fleet: Fleet, stats: Stats): Promise<{ at: number; victims: Proc[] } | undefined> {
    if (job.status !== 'running') return undefined;
    const { rng } = this;
    const holder = fleet.live().find((p) => p.id === job.owner);
    if (job.phase === 'split' && holder && this.splitKills < this.reserve.split && stats.kills < this.kills) {
      this.splitKills++;
      return { at: Date.now() + rng() * 0.6 * this.timing.split, victims: [holder] };
    }
    if (job.phase === 'assemble' && holder && (stats.kills < this.kills || (stats.phases.assemble ?? 0) < this.reserve.assemble)) {
      return { at: Date.now() + rng() * 0.5 * this.timing.assemble, victims: [holder] };
    }
    const left = this.kills - this.reserve.assemble - stats.kills;
    if (job.phase !== 'process' || job.total === null || left <= 0) return undefined;
    this.mark ??= { from: job.processed, step: ((job.total - job.processed) / (left + 1)) * (0.3 + rng()) };
    if (job.processed < this.mark.from + this.mark.step) return undefined;
    this.mark = undefined;
    const holders = await fleet.chunkHolders();
    const one = holders[Math.floor(rng() * holders.length)];
    return one && { at: Date.now() + rng() * 300, victims: rng() < 0.2 ? holders : [one] };
  }
}

/** The run under fire; the first `deliveryKills` events also kill their sender mid-attempt. */
async function chaosRun(site: Site, inputs: string[], o: ChaosOptions, rng: () => number, timing: Timing, log: (line: string) => void) {
  const stats: Stats = { kills: 0, phases: {}, killsSent: 0, missedKills: 0, deliveryKills: 0, restarts: 0, restartsByMachine: [], events: 0, deliveries: 0, distinctIds: 0, statuses: {}, problems: [] };
  let peek: Peek | undefined;
  let fleet: Fleet | undefined;
  let deliveryKillsLeft = o.deliveryKills ?? 2;
  // The sender is waiting for this answer, so the next sender must deliver the event again.
  const receiver = await startReceiver(async (messageId) => {
    const pid = Number(/-(\d+)-[0-9a-f]+$/.exec((await peek?.claimant(messageId)) ?? '')?.[1]);
    const sender = fleet?.live().find((p) => p.pid === pid);
    if (deliveryKillsLeft <= 0 || !sender) return;
    deliveryKillsLeft--;
    stats.deliveryKills++;
    await fleet!.kill(sender, 'during a webhook attempt');
  });
  try {
    const jobs = await queue(site.env, inputs, receiver);
    const bigId = jobs[0]!.id;
    peek = await site.peek();
    fleet = new Fleet(site, peek, bigId, stats, log);
    const schedule = new Schedule(o.kills, rng, timing);
    const limitMs = 10 * timing.total + 10_000 * o.kills;
    const until = Date.now() + limitMs;
    let plan: { at: number; victims: Proc[] } | undefined;
    for (let job = await peek.job(bigId); job.status === 'running' || job.status === 'queued'; job = await peek.job(bigId)) {
      if (Date.now() > until) {
        stats.problems.push(`the big job is still ${job.status} in ${job.phase} after ${Math.round(limitMs / 1000)} s`);
        break;
      }
      fleet.keepUp();
      if (plan && Date.now() >= plan.at) {
        for (const victim of plan.victims) await fleet.kill(victim);
        plan = undefined;
      } else plan ??= await schedule.next(job, fleet, stats);
      await sleep(10);
    }
    // No more kills on jobs: the workers left finish every job and deliver every event.
    const settled = async (): Promise<boolean> => {
      const s = await peek!.statuses();
      return !s.running && !s.queued && (await peek!.undelivered()) === 0 && (await peek!.events()).every((id) => receiver.seen.has(id));
    };
    // Every killed worker is started again, the last one too, though the rest may need no help.
    fleet.keepUp();
    for (const end = Date.now() + 120_000; Date.now() < end && !(await settled()); await sleep(50)) fleet.keepUp();
    await fleet.stop();
    const events = await peek.events();
    Object.assign(stats, { statuses: await peek.statuses(), events: events.length, deliveries: receiver.requests, distinctIds: receiver.seen.size });
    stats.problems.push(...receiver.problems);
    const missing = events.filter((id) => !receiver.seen.has(id));
    const unknown = [...receiver.seen.keys()].filter((id) => !events.includes(id));
    if (missing.length > 0) stats.problems.push(`events never delivered: ${missing.join(', ')}`);
    if (unknown.length > 0) stats.problems.push(`deliveries with unknown webhook-ids: ${unknown.join(', ')}`);
    const undelivered = await peek.undelivered();
    if (undelivered > 0) stats.problems.push(`${undelivered} events or deliveries not successful at the end`);
    if (stats.kills < o.kills) stats.problems.push(`only ${stats.kills} of ${o.kills} kills landed on a lease holder before the big job ended (${stats.missedKills} missed)`);
    return { jobs, stats };
  } finally {
    await fleet?.stop();
    await peek?.close();
    receiver.close();
  }
}
