/**
 * The scale-out scenario: one remote-bound job on 1, 2, 4 and 8 `sluice worker` processes that
 * share only a PostgreSQL server, an S3 endpoint and the provider simulator (20 ms latency), each
 * on a data dir of its own, as on separate machines. Figure: rows per second at each count, and
 * the speed-up of 8 workers over 1.
 *
 * Remote-bound on purpose: this machine has 2 cores, so a job that needs CPU would measure the
 * cores, not the workers. Each worker gets few connections and few keys per request, so that one
 * worker waits on the simulator's 20 ms nearly all the time and 8 together stay well under the
 * cores; the account and provider limits are set far above what 8 workers reach, so that they do
 * not bind. Every count gets a fresh database (the result cache is shared by all accounts, so a
 * second job there would skip its lookups) and fresh workers, started and ready before the job is
 * submitted: the clock runs from the job's creation to its completion, both as the database
 * records them, split and assembly included.
 */
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import pg from 'pg';
import { JOB_PHASES, JOB_STATUSES, TERMINAL_STATUSES, type JobStatus } from '../src/storage/job-states.js';
import { stopChild, type Child } from './children.js';
import { createDatabase, startPostgres, type PostgresServer } from './postgres-server.js';
import type { SimulatorReport } from './remote-simulator.js';
import { hrtimeUs, windowStats } from './remote-timeline.js';
import { fmt, markdownTable } from './report.js';
import { rate, rowsText, type BenchContext } from './scenario-context.js';
import {
  cpuMsOf,
  descendantsCpuMs,
  machineTicks,
  peekJob,
  startSharedS3,
  startSimulator,
  startWorkers,
  stopSimulator,
  type JobPeek,
  type SharedS3,
} from './scale-out-services.js';

export const SCALE_OUT = {
  latencyMs: 20,
  workerCounts: [1, 2, 4, 8],
  /** At the ideal 200 rows/s per worker: 120 s on 1 worker, 15 s on 8. */
  rows: 24_000,
  /** A multiple of every count's chunk slots (2 to 16), and at least twice the most (2 × 8 × 2). */
  chunks: 64,
  target: 6,
  aim: 7.5,
  /** A job that moves neither its phase nor its rows for this long has stalled. */
  stallMs: 60_000,
};

/**
 * One worker: 2 chunks at once feeding 1 connection with 4 keys a request, so 4 keys in flight
 * (ideal 4 / 0.020 s = 200 rows/s). A row costs about 1 ms of CPU in all at these settings
 * (worker, PostgreSQL, S3, simulator; most of it per request, for the shared limiter slots and
 * HTTP), so 8 workers at 1,600 rows/s need most of this machine's 2 cores: more keys or
 * connections per worker would make the 8-worker run measure the cores. Two checkpoints per chunk.
 *
 * The limits must not bind. A lookup takes its account slot before it waits for a connection, so
 * every request of a batch holds one while it waits: the account limit covers all of them, for 8
 * workers, with room to spare. The provider slot is taken once a connection is free, so 8 workers
 * hold at most 8; 256 is plenty, and a limit of 10,000 would cost PostgreSQL time on every take
 * (the take scans every slot number: 2.6 ms a take at 10,000 on this machine), which the run
 * would then measure. --env overrides any of these.
 */
function scenarioSettings(rows: number): Record<string, string> {
  const workers = Math.max(...SCALE_OUT.workerCounts);
  const concurrency = 2;
  const maxBatch = 4;
  const chunkRows = Math.max(10, Math.ceil(rows / SCALE_OUT.chunks));
  const batchRows = Math.ceil(chunkRows / 2);
  const waiting = workers * concurrency * Math.ceil(batchRows / maxBatch);
  return {
    SLUICE_WORKER_CONCURRENCY: String(concurrency),
    SLUICE_PROVIDER_CONNECTIONS: '1',
    SLUICE_PROVIDER_MAX_BATCH: String(maxBatch),
    SLUICE_CHUNK_ROWS: String(chunkRows),
    SLUICE_BATCH_ROWS: String(batchRows),
    SLUICE_ACCOUNT_CONCURRENCY: String(Math.max(256, 2 * waiting)),
    SLUICE_PROVIDER_CONCURRENCY: '256',
  };
}

export interface ScaleOutRun {
  workers: number;
  rows: number;
  /** From the job's creation to its completion, as the database records them. */
  ms: number;
  /** The process phase alone, as the bench saw the phase change (polled every 50 ms). */
  processMs: number;
  /** CPU over the run, in cores: each part's processes together, and the whole machine (others' work too). */
  cores: { workers: number; postgres: number; s3: number; simulator: number; machine: number | undefined };
  /** Mean requests the simulator held during the job, over all the workers' connections. */
  connectionUse: number;
  simulator: SimulatorReport;
  job: JobPeek;
}

export interface ScaleOutResult {
  runs: ScaleOutRun[];
  settings: Record<string, string>;
}

const ended = (job: JobPeek | undefined): boolean => job !== undefined && TERMINAL_STATUSES.has(job.status as JobStatus);

/** Polls the job until it ends; the first time each phase is seen, in Date.now() milliseconds. */
async function watchJob(client: pg.Client): Promise<{ job: JobPeek; phaseSeenAt: Record<string, number> }> {
  const phaseSeenAt: Record<string, number> = {};
  let progress = '';
  let progressAt = Date.now();
  for (;;) {
    const job = await peekJob(client);
    const now = Date.now();
    if (job) phaseSeenAt[job.phase] ??= now;
    if (job && ended(job)) return { job, phaseSeenAt };
    const seen = job ? `${job.status}/${job.phase}/${job.processedRows}` : 'none';
    if (seen !== progress) {
      progress = seen;
      progressAt = now;
    } else if (now - progressAt > SCALE_OUT.stallMs) {
      throw new Error(`the job has not moved for ${SCALE_OUT.stallMs / 1000} s (${seen})`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function runWithWorkers(ctx: BenchContext, n: number, rows: number, server: PostgresServer, s3: SharedS3, settings: Record<string, string>): Promise<ScaleOutRun> {
  const { bench } = ctx;
  const databaseUrl = await createDatabase(server.url, `sluice_scale_${n}`);
  const connections = Number(settings.SLUICE_PROVIDER_CONNECTIONS);
  const simulator = await startSimulator(SCALE_OUT.latencyMs, n * connections);
  const shared = { ...s3.env, SLUICE_DATABASE_URL: databaseUrl, SLUICE_SEAL_KEY: settings.SLUICE_SEAL_KEY!, SLUICE_GENDER_PROVIDER_URL: simulator.url };
  const env = { ...settings, ...shared };
  const dirs = Array.from({ length: n }, (_, i) => bench.freshDir(`scale-out-${n}w-machine-${i + 1}`));
  const stageDir = bench.freshDir(`scale-out-${n}w-submit`);
  let workers: Child[] = [];
  const client = new pg.Client({ connectionString: databaseUrl });
  try {
    workers = await startWorkers(dirs, env);
    await client.connect();
    await bench.stage(stageDir, rows, 'distinct', env);
    // The submitting process has exited: from here on the CPU is the workers', the simulator's,
    // S3's and PostgreSQL's (and whatever else runs on the machine).
    const cpu0 = descendantsCpuMs();
    const machine0 = machineTicks();
    const t0 = performance.now();
    const anchor = { dateMs: Date.now(), hrUs: hrtimeUs() };
    const { job, phaseSeenAt } = await watchJob(client);
    const windowMs = performance.now() - t0;
    const cpu1 = descendantsCpuMs();
    const machine1 = machineTicks();
    const used = (children: Child[]): number => (cpuMsOf(cpu1, children) - cpuMsOf(cpu0, children)) / windowMs;
    const sum = (cpu: Map<number, number>): number => [...cpu.values()].reduce((a, b) => a + b, 0);
    // Everything else below this process is the PostgreSQL server: the submitting child has exited.
    const cores = { workers: used(workers), s3: used([s3.child]), simulator: used([simulator.child]), postgres: 0, machine: undefined as number | undefined };
    cores.postgres = Math.max(0, (sum(cpu1) - sum(cpu0)) / windowMs - cores.workers - cores.s3 - cores.simulator);
    if (machine0 && machine1) cores.machine = ((machine1.busy - machine0.busy) / (machine1.total - machine0.total)) * os.cpus().length;
    await Promise.all(workers.map((w) => stopChild(w)));
    const report = await stopSimulator(simulator.child);

    if (job.status !== JOB_STATUSES.completed) throw new Error(`with ${n} workers the job ended ${job.status}, not completed`);
    if (job.totalRows !== rows || job.processedRows !== rows) throw new Error(`with ${n} workers the job processed ${job.processedRows} of ${job.totalRows} rows, expected ${rows}`);
    const ms = job.finishedAt! - job.createdAt;
    const toUs = (dateMs: number): number => anchor.hrUs + (dateMs - anchor.dateMs) * 1000;
    const use = windowStats(report.timeline, toUs(job.createdAt), toUs(job.finishedAt!));
    const processAt = phaseSeenAt[JOB_PHASES.process] ?? job.createdAt;
    const assembleAt = phaseSeenAt[JOB_PHASES.assemble] ?? job.finishedAt!;
    return {
      workers: n,
      rows,
      ms,
      processMs: Math.max(1, assembleAt - processAt),
      cores,
      connectionUse: use.mean / (n * connections),
      simulator: report,
      job,
    };
  } finally {
    await client.end().catch(() => undefined);
    await Promise.all(workers.map((w) => stopChild(w)));
    await stopChild(simulator.child);
    for (const dir of [...dirs, stageDir]) bench.remove(dir);
  }
}

const speedUp = (runs: ScaleOutRun[], run: ScaleOutRun): number => rate(run.rows, run.ms) / rate(runs[0]!.rows, runs[0]!.ms);

export async function scaleOutScenario(ctx: BenchContext): Promise<ScaleOutResult | undefined> {
  const { bench, log, options } = ctx;
  const rows = Math.min(SCALE_OUT.rows, options.rows);
  const target = `≥ ${SCALE_OUT.target}× the rows/s of 1 worker at 8 (aim ${SCALE_OUT.aim}×); provider simulator at ${SCALE_OUT.latencyMs} ms`;
  let server: PostgresServer | undefined;
  let s3: SharedS3 | undefined;
  try {
    // One seal key for every machine, as a shared database requires.
    const settings = { ...scenarioSettings(rows), SLUICE_SEAL_KEY: randomBytes(32).toString('base64'), ...options.env };
    log('scale-out: starting PostgreSQL and an S3 server on loopback');
    server = await startPostgres();
    s3 = await startSharedS3(bench.freshDir('scale-out-s3'));
    const runs: ScaleOutRun[] = [];
    for (const n of SCALE_OUT.workerCounts) {
      log(`scale-out: ${rowsText(rows)} rows on ${n} worker process${n === 1 ? '' : 'es'}`);
      const run = await runWithWorkers(ctx, n, rows, server, s3, settings);
      runs.push(run);
      log(`  ${fmt.s(run.ms)}, ${fmt.int(rate(rows, run.ms))} rows/s, ${fmt.x(speedUp(runs, run))}; CPU ${coresText(run)}; connections ${fmt.pct(run.connectionUse)} busy`);
    }
    const last = runs.at(-1)!;
    const x = speedUp(runs, last);
    ctx.table.push({
      scenario: 'scale-out',
      figure: `${fmt.x(x)} at ${last.workers} workers (${fmt.int(rate(rows, last.ms))} rows/s)`,
      target,
      met: x >= SCALE_OUT.aim ? 'met (and the aim)' : x >= SCALE_OUT.target ? 'met' : 'NOT met',
      detail:
        `${rowsText(rows)} distinct rows, one job per count, each count on a fresh database and fresh \`sluice worker\` processes (own data dirs) sharing one PostgreSQL, one S3 endpoint and the simulator; ` +
        runs.map((r) => `${r.workers}: ${fmt.s(r.ms)}, ${fmt.int(rate(rows, r.ms))} rows/s, ${fmt.x(speedUp(runs, r))}`).join('; ') +
        `; every run completed with ${rowsText(rows)} rows processed${caveats(runs)}; settings: ${settingsText(settings)}`,
    });
    ctx.sections.push(scaleOutSection(runs, settings));
    return { runs, settings };
  } catch (e: unknown) {
    ctx.failed('scale-out', target, e);
    return undefined;
  } finally {
    if (s3) await stopChild(s3.child);
    await server?.stop();
  }
}

/** Keys looked up more than once (retried requests, redone batches) or answers other than 200 make the figure mean less. */
function caveats(runs: ScaleOutRun[]): string {
  const notes = runs.flatMap((r) => {
    const s = r.simulator.stats;
    const other = Object.entries(s.byStatus).filter(([status]) => status !== '200');
    return [
      ...(s.keys !== r.rows ? [`${r.workers} workers: ${rowsText(s.keys)} keys at the simulator for ${rowsText(r.rows)} rows`] : []),
      ...(other.length > 0 ? [`${r.workers} workers: answers ${other.map(([status, k]) => `${k}× ${status}`).join(', ')}`] : []),
    ];
  });
  return notes.length === 0 ? '' : `; CAUTION: ${notes.join('; ')}`;
}

function coresText(r: ScaleOutRun): string {
  return `workers ${r.cores.workers.toFixed(2)} cores, PostgreSQL ${r.cores.postgres.toFixed(2)}, S3 ${r.cores.s3.toFixed(2)}, simulator ${r.cores.simulator.toFixed(2)}`;
}

function settingsText(settings: Record<string, string>): string {
  return Object.entries(settings)
    .filter(([name]) => name !== 'SLUICE_SEAL_KEY')
    .map(([name, value]) => `${name}=${value}`)
    .join(', ');
}

function scaleOutSection(runs: ScaleOutRun[], settings: Record<string, string>): string {
  const connections = Number(settings.SLUICE_PROVIDER_CONNECTIONS);
  const keys = Number(settings.SLUICE_PROVIDER_MAX_BATCH);
  const ideal = (connections * keys) / (SCALE_OUT.latencyMs / 1000);
  const lines = runs.map((r) => {
    const s = r.simulator.stats;
    return [
      String(r.workers),
      rowsText(r.rows),
      fmt.s(r.ms),
      fmt.int(rate(r.rows, r.ms)),
      fmt.x(speedUp(runs, r)),
      `${fmt.int(rate(r.rows, r.processMs))} (${fmt.x(rate(r.rows, r.processMs) / rate(runs[0]!.rows, runs[0]!.processMs))})`,
      fmt.pct(rate(r.rows, r.ms) / (ideal * r.workers)),
      fmt.pct(r.connectionUse),
      `${r.cores.workers.toFixed(2)} (${(r.cores.workers / r.workers).toFixed(2)} each)`,
      r.cores.postgres.toFixed(2),
      `${r.cores.s3.toFixed(2)} / ${r.cores.simulator.toFixed(2)}`,
      r.cores.machine === undefined ? 'n/a' : r.cores.machine.toFixed(2),
      `${rowsText(s.requests)} / ${rowsText(s.keys)}, max ${s.maxInFlight} in flight`,
    ];
  });
  return [
    '## Scale-out: one job on 1 to 8 worker processes',
    '',
    `Each worker: SLUICE_PROVIDER_CONNECTIONS=${connections} × SLUICE_PROVIDER_MAX_BATCH=${keys} keys in flight at most, so its ideal is ${fmt.int(ideal)} rows/s at ${SCALE_OUT.latencyMs} ms. ` +
      'Seconds run from the job\'s creation (after the input is in S3, with the workers already running) to its completion, as the database stamps them; ' +
      'the process phase leaves out split and assembly, which one worker does alone. CPU is over the same span, from /proc: each part\'s processes, and the whole machine\'s busy time (which counts anything else running on it too).',
    '',
    markdownTable(
      ['workers', 'rows', 'seconds', 'rows/s', 'speed-up', 'process phase rows/s (speed-up)', 'of the ideal', 'connections busy', 'CPU, cores: workers', 'PostgreSQL', 'S3 / simulator', 'machine', 'requests / keys at the simulator'],
      lines,
    ),
  ].join('\n');
}

export function scaleOutFinding(r: ScaleOutResult): string {
  const first = r.runs[0]!;
  const last = r.runs.at(-1)!;
  const x = speedUp(r.runs, last);
  const lost = 1 - x / last.workers;
  return (
    `Scale-out: ${last.workers} worker processes did the job ${fmt.x(x)} as fast as one (${fmt.int(rate(last.rows, last.ms))} against ${fmt.int(rate(first.rows, first.ms))} rows/s; target ≥ ${SCALE_OUT.target}×, aim ${SCALE_OUT.aim}×), ` +
    `${fmt.pct(lost)} short of linear. Their connections were busy ${fmt.pct(last.connectionUse)} of the time against ${fmt.pct(first.connectionUse)} for one worker, ` +
    `with ${coresText(last)} (the machine at ${last.cores.machine === undefined ? 'an unknown' : last.cores.machine.toFixed(2)} of its ${os.cpus().length} cores); ` +
    `split and assembly, done by one worker whatever the count, and the hand-overs between phases took ${fmt.s(last.ms - last.processMs)} of the ${fmt.s(last.ms)}.`
  );
}
