/**
 * One engine job, measured from inside its own process, so that peak RSS is the job's own.
 *
 *   node dist/bench/engine-run.js --data-dir D --input FILE --stage-only [--account ID] [--credits N]
 *       stages FILE into the object store and queues a job; prints {"event":"staged","jobId":...}
 *   node dist/bench/engine-run.js --data-dir D --job-id ID [--rows N] [--concurrency C] [--no-verify]
 *       runs a worker until that job has settled; prints {"event":"start",...} when the clock starts
 *       and one {"event":"result",...} line at the end
 *   node dist/bench/engine-run.js --data-dir D --input FILE [--rows N] ...
 *       both in one process (handy by hand; the harness stages in a separate process)
 *
 * The clock runs around `Worker.run` only: split, process and assemble, with the results written
 * to the object store. Peak RSS is `process.resourceUsage().maxRSS`, read as soon as the worker
 * has finished (before the optional read-back of the results, which would add its own buffers).
 * Settings come from the SLUICE_* environment, as for every Sluice command.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config/load-config.js';
import { JOB_STATUSES, TERMINAL_STATUSES, type JobStatus } from '../src/storage/job-states.js';
import { Worker } from '../src/jobs/worker.js';
import { openEngine, type Engine } from '../src/main/open-engine.js';
import { createLogger } from '../src/shared/logger.js';
import { InFlightRecorder, type InFlightTimeline } from './remote-timeline.js';

export interface EngineStaged {
  event: 'staged';
  jobId: string;
  accountId: string;
  inputBytes: number;
}

export interface EngineStart {
  event: 'start';
  jobId: string;
  /** process.hrtime in microseconds at the start of Worker.run (the same clock as V8's profiler). */
  hrtimeUs: number;
  /** CPU time (user + system) the process had used before the clock started, in microseconds. */
  cpuUs: number;
}

/** process.memoryUsage() at the highest RSS the 20 ms poller saw, and in which phase. */
export interface MemoryPeak {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
  arrayBuffers: number;
  phase: string;
  atMs: number;
}

export interface EngineResult {
  event: 'result';
  jobId: string;
  status: string;
  reason: string | null;
  errorMessage: string | null;
  rows: number;
  /** Wall time of Worker.run, in milliseconds. */
  workerMs: number;
  /** Milliseconds from the clock's start until the job entered each phase (polled every 20 ms). */
  phaseStartMs: Record<string, number>;
  /** Sum over the worker's loops of the time they spent finding no work (split and assemble leave one loop idle). */
  idleLoopMs: number;
  cpuUserMs: number;
  cpuSystemMs: number;
  /** process.resourceUsage().maxRSS right after the worker finished, in KiB. */
  maxRssKiB: number;
  /** The sampled peak and what it was made of; the highest sampled RSS of each phase. */
  memory: { peak: MemoryPeak; byPhase: Record<string, number> };
  /** For each chunk, in the order they were completed: milliseconds from the clock's start, and its rows. */
  chunksDone: { atMs: number; rows: number }[];
  /** Event-loop delay during the run (perf_hooks.monitorEventLoopDelay), in milliseconds: timers and I/O wait this long. */
  loopDelay: { max: number; p99: number; mean: number };
  startHrtimeUs: number;
  endHrtimeUs: number;
  counters: { processed: number; found: number; invalid: number; duplicate: number; error: number; creditsUsed: number };
  settings: {
    chunkRows: number;
    batchRows: number;
    workerConcurrency: number;
    concurrency: number;
    leaseSeconds: number;
    synchronous: string;
    /** Whether gender lookups went to SLUICE_GENDER_PROVIDER_URL rather than the embedded engine. */
    remoteProvider: boolean;
    providerMaxBatch: number;
    providerConnections: number;
    accountConcurrency: number;
    providerConcurrency: number;
  };
  /** With a remote provider: the engine's provider calls in flight over time (each call is one request, retries aside). */
  lookups?: InFlightTimeline;
  results?: { allBytes: number; foundBytes: number; allSha256: string; foundSha256: string };
}

const hrtimeUs = (): number => Number(process.hrtime.bigint() / 1000n);

function print(value: object): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

async function stage(engine: Engine, input: string, accountId: string, credits: number): Promise<EngineStaged> {
  const { deps, jobService } = engine;
  if (!(await deps.billing.account(accountId))) await deps.billing.createAccount({ id: accountId, credits, now: deps.clock.now() });
  const staged = await jobService.stageInput(fs.createReadStream(input));
  const job = await jobService.create({ ...staged, accountId, type: 'gender', inputName: path.basename(input), options: {} });
  return { event: 'staged', jobId: job.id, accountId, inputBytes: staged.size };
}

/** A Worker that adds up how long its loops found nothing to do (each such tick is followed by a poll sleep). */
class TimedWorker extends Worker {
  idleMs = 0;
  override async tick(): Promise<boolean> {
    const worked = await super.tick();
    if (!worked) this.idleMs += this.pollMs;
    return worked;
  }
  constructor(
    deps: Engine['deps'],
    private readonly pollMs: number,
  ) {
    super(deps);
  }
}

/**
 * Counts the gender provider's calls in flight, as the engine sees them: a call holds a limiter
 * slot from before its request is written until after its answer is parsed, so this against the
 * simulator's own count shows how much of the round trip the client side adds.
 */
function countInFlight(deps: Engine['deps'], full: number): InFlightRecorder {
  const recorder = new InFlightRecorder(full);
  const provider = deps.providers.get('gender');
  if (!provider) throw new Error('no gender provider');
  const lookup = provider.lookup.bind(provider);
  provider.lookup = async (keys, signal) => {
    recorder.inFlight++;
    try {
      return await lookup(keys, signal);
    } finally {
      recorder.inFlight--;
    }
  };
  return recorder;
}

async function run(engine: Engine, jobId: string, concurrency: number, verify: boolean): Promise<EngineResult> {
  const { deps, config } = engine;
  const settled = async (): Promise<boolean> => {
    const status = await deps.jobs.status(jobId);
    return status === undefined || status === JOB_STATUSES.paused || TERMINAL_STATUSES.has(status as JobStatus);
  };
  const worker = new TimedWorker(deps, config.jobs.pollMs);
  const phaseStartMs: Record<string, number> = {};
  const byPhase: Record<string, number> = {};
  const chunksDone: { atMs: number; rows: number }[] = [];
  // Chunk completions, timed where they happen: the poller below only runs when the event loop
  // gets a turn, which a chunk's batches (all promise continuations) do not give it.
  const jobs = deps.jobs;
  const completeChunk = jobs.completeChunk.bind(jobs);
  jobs.completeChunk = async (id, chunkIndex, lease, flags, now) => {
    await completeChunk(id, chunkIndex, lease, flags, now);
    if (id === jobId) chunksDone.push({ atMs: Math.round(performance.now() - t0), rows: (await jobs.chunk(id, chunkIndex))?.rowCount ?? 0 });
  };
  const lookups = config.providers.gender.url === undefined ? undefined : countInFlight(deps, config.providers.connections);
  const delay = monitorEventLoopDelay({ resolution: 10 });
  let peak: MemoryPeak = { rss: 0, heapUsed: 0, heapTotal: 0, external: 0, arrayBuffers: 0, phase: '', atMs: 0 };

  const startUs = hrtimeUs();
  const cpu0 = process.cpuUsage();
  print({ event: 'start', jobId, hrtimeUs: startUs, cpuUs: cpu0.user + cpu0.system } satisfies EngineStart);
  const t0 = performance.now();
  delay.enable();
  let seeing = false;
  const seePhase = async (): Promise<void> => {
    // One look at a time: a slow store must not pile them up.
    if (seeing) return;
    seeing = true;
    const row = await deps.jobs.get(jobId).finally(() => {
      seeing = false;
    });
    const atMs = Math.round(performance.now() - t0);
    if (row) {
      if (phaseStartMs[row.phase] === undefined) phaseStartMs[row.phase] = atMs;
      const mem = process.memoryUsage();
      byPhase[row.phase] = Math.max(byPhase[row.phase] ?? 0, mem.rss);
      if (mem.rss > peak.rss) peak = { rss: mem.rss, heapUsed: mem.heapUsed, heapTotal: mem.heapTotal, external: mem.external, arrayBuffers: mem.arrayBuffers, phase: row.phase, atMs };
    }
    // Ends the loops' poll sleeps as soon as the job is over, so that the clock stops with the job.
    if (row === undefined || row.status === JOB_STATUSES.paused || TERMINAL_STATUSES.has(row.status)) worker.stop();
  };
  await seePhase();
  const poller = setInterval(() => void seePhase(), 20);
  try {
    await worker.run({ concurrency, until: settled });
  } finally {
    clearInterval(poller);
  }
  const workerMs = performance.now() - t0;
  delay.disable();
  const endUs = hrtimeUs();
  const cpu = process.cpuUsage(cpu0);
  const maxRssKiB = process.resourceUsage().maxRSS;
  await seePhase();

  const job = await deps.jobs.require(jobId);
  const result: EngineResult = {
    event: 'result',
    jobId,
    status: job.status,
    reason: job.reason ?? null,
    errorMessage: job.errorMessage ?? null,
    rows: job.totalRows ?? 0,
    workerMs: Math.round(workerMs * 10) / 10,
    phaseStartMs,
    idleLoopMs: worker.idleMs,
    cpuUserMs: Math.round(cpu.user / 1000),
    cpuSystemMs: Math.round(cpu.system / 1000),
    maxRssKiB,
    memory: { peak, byPhase },
    chunksDone,
    loopDelay: { max: Math.round(delay.max / 1e6), p99: Math.round(delay.percentile(99) / 1e6), mean: Math.round(delay.mean / 1e6) },
    startHrtimeUs: startUs,
    endHrtimeUs: endUs,
    counters: {
      processed: job.processedRows,
      found: job.foundRows,
      invalid: job.invalidRows,
      duplicate: job.duplicateRows,
      error: job.errorRows,
      creditsUsed: job.creditsUsed,
    },
    settings: {
      chunkRows: config.jobs.chunkRows,
      batchRows: config.jobs.batchRows,
      workerConcurrency: config.jobs.workerConcurrency,
      concurrency,
      leaseSeconds: config.jobs.leaseSeconds,
      synchronous: config.sqlite.synchronous,
      remoteProvider: config.providers.gender.url !== undefined,
      providerMaxBatch: config.providers.maxBatch,
      providerConnections: config.providers.connections,
      accountConcurrency: config.jobs.accountConcurrency,
      providerConcurrency: config.jobs.providerConcurrency,
    },
  };
  if (lookups) {
    lookups.advance();
    result.lookups = lookups.timeline;
  }
  if (verify && job.status === JOB_STATUSES.completed) {
    // Outside the clock: the results really are in the object store, and their digests let the
    // harness compare a resumed job with an uninterrupted one.
    const digest = async (filter: 'all' | 'found'): Promise<{ bytes: number; sha256: string }> => {
      const hash = createHash('sha256');
      let bytes = 0;
      for await (const piece of await engine.jobService.openResult(jobId, filter)) {
        const buffer = piece as Buffer;
        bytes += buffer.length;
        hash.update(buffer);
      }
      return { bytes, sha256: hash.digest('hex') };
    };
    const all = await digest('all');
    const found = await digest('found');
    result.results = { allBytes: all.bytes, foundBytes: found.bytes, allSha256: all.sha256, foundSha256: found.sha256 };
  }
  return result;
}

async function main(): Promise<number> {
  // As in the sluice command: the SDK's notice about its future Node 22 floor is noise here.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const { values } = parseArgs({
    options: {
      'data-dir': { type: 'string' },
      input: { type: 'string' },
      'job-id': { type: 'string' },
      'stage-only': { type: 'boolean', default: false },
      rows: { type: 'string' },
      account: { type: 'string', default: 'bench' },
      credits: { type: 'string' },
      concurrency: { type: 'string' },
      'no-verify': { type: 'boolean', default: false },
    },
  });
  const dataDir = values['data-dir'];
  if (!dataDir) throw new Error('--data-dir is required');
  if (!values['job-id'] && !values.input) throw new Error('--input FILE or --job-id ID is required');
  const config = loadConfig({ ...process.env, SLUICE_DATA_DIR: dataDir });
  const log = createLogger(config.logLevel);
  const engine = await openEngine(config, log);
  try {
    let jobId = values['job-id'];
    if (!jobId) {
      const rows = Number(values.rows ?? 1_000_000);
      const credits = values.credits === undefined ? 2 * rows + 1000 : Number(values.credits);
      const staged = await stage(engine, values.input!, values.account, credits);
      print(staged);
      jobId = staged.jobId;
      if (values['stage-only']) return 0;
    }
    const concurrency = values.concurrency === undefined ? config.jobs.workerConcurrency : Number(values.concurrency);
    const result = await run(engine, jobId, concurrency, !values['no-verify']);
    if (values.rows !== undefined && result.rows !== Number(values.rows)) {
      result.errorMessage = `expected ${values.rows} rows, the job has ${result.rows}`;
      print(result);
      return 1;
    }
    print(result);
    return result.status === JOB_STATUSES.completed ? 0 : 1;
  } finally {
    await engine.close();
    log.flush();
  }
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`engine-run: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
