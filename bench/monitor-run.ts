/**
 * One email monitor run, measured from inside its own process, so that peak RSS is the run's own.
 *
 *   node dist/bench/monitor-run.js --data-dir D --setup --input FILE [--account ID] [--credits N] [--breached-every K]
 *       creates the account and an email monitor whose targets are FILE's `email` cells, added
 *       through MonitorService.addTargets in batches (so invalid cells are refused and repeats
 *       counted, as the API does); every K-th row's address gets a breach (default 10), so that
 *       profiles and last_data are not all empty; prints {"event":"setup",...}
 *   node dist/bench/monitor-run.js --data-dir D --monitor-id M [--account ID] [--concurrency C]
 *       queues a manual run and drives it to its end as `sluice worker` does (the run driver and a
 *       job Worker side by side); prints one {"event":"result",...} line
 *
 * The clock runs from the queued run until the driver has completed it: its input written from the
 * targets, its job (split, process, assemble), and the comparison with last_data. Peak RSS is
 * `process.resourceUsage().maxRSS`, read as soon as the run has ended.
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import Papa from 'papaparse';
import { loadConfig } from '../src/config/load-config.js';
import { Worker } from '../src/jobs/worker.js';
import { openEngine, type Engine } from '../src/main/open-engine.js';
import { monitorServiceOf, type MonitorService } from '../src/monitors/monitor-service.js';
import { MONITOR_TYPE_SPECS } from '../src/monitors/monitor-types.js';
import { driveMonitorRuns } from '../src/monitors/run-driver.js';
import { runJobId } from '../src/monitors/run-starter.js';
import { JOB_STATUSES } from '../src/storage/job-states.js';
import type { EmailBreachRow } from '../src/storage/records.js';
import { createLogger } from '../src/shared/logger.js';

/** Targets per addTargets call: one store transaction each, as an API client adding a big list would send them. */
const TARGET_BATCH = 10_000;

export interface MonitorSetup {
  event: 'setup';
  accountId: string;
  monitorId: string;
  /** Input rows read (the `email` cells). */
  rows: number;
  targets: number;
  /** Cells that repeated a target already added (in this batch or an earlier one). */
  repeats: number;
  invalid: number;
  breachedAddresses: number;
  setupMs: number;
}

export interface MonitorResult {
  event: 'result';
  runId: string;
  status: string;
  reason: string | null;
  targets: number;
  totalRecords: number;
  changesDetected: number;
  creditsUsed: number;
  /** Wall time from the queued run to its end, in milliseconds. */
  runMs: number;
  /**
   * Milliseconds from the clock's start until each step was first seen (polled every 20 ms):
   * `split`, `process`, `assemble` are the job's phases, `compare` the job's completion, `done` the run's end.
   */
  phaseStartMs: Record<string, number>;
  cpuUserMs: number;
  cpuSystemMs: number;
  /** process.resourceUsage().maxRSS right after the run ended, in KiB. */
  maxRssKiB: number;
  /** The highest sampled RSS of each step, in bytes. */
  rssByPhase: Record<string, number>;
  settings: { workerConcurrency: number; pollMs: number; chunkRows: number; batchRows: number };
}

function print(value: object): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

async function setup(engine: Engine, service: MonitorService, input: string, accountId: string, credits: number, breachedEvery: number): Promise<MonitorSetup> {
  const { deps } = engine;
  const t0 = performance.now();
  if (!(await deps.billing.account(accountId))) await deps.billing.createAccount({ id: accountId, credits, now: deps.clock.now() });
  // Its first scheduled run a year away: the only run is the one this bench queues.
  const { monitor } = await service.create(accountId, { name: 'bench', type: 'email', frequency: 'monthly', startAt: deps.clock.now() + 365 * 86_400_000 });
  const reading = MONITOR_TYPE_SPECS.email.reading;
  const totals = { rows: 0, targets: 0, repeats: 0, invalid: 0, breached: 0 };
  let batch: string[] = [];
  let breaches: EmailBreachRow[] = [];
  const flush = async (): Promise<void> => {
    if (breaches.length > 0) totals.breached += await deps.store.emailBreaches.add(breaches);
    if (batch.length > 0) {
      const added = await service.addTargets(accountId, monitor.id, { targets: batch });
      totals.targets += added.added;
      totals.repeats += added.present + added.duplicates;
      totals.invalid += added.invalid.count;
    }
    batch = [];
    breaches = [];
  };
  const parser = fs.createReadStream(input, { encoding: 'utf8' }).pipe(Papa.parse(Papa.NODE_STREAM_INPUT, { header: true, skipEmptyLines: true }));
  for await (const record of parser as AsyncIterable<Record<string, string>>) {
    const cell = record.email ?? '';
    batch.push(cell);
    if (totals.rows++ % breachedEvery === 0) {
      const read = reading.normalise(cell);
      if (read.ok) breaches.push({ email: read.key, breach: 'BenchLeak', breachedAt: '2021-04-01', dataClasses: ['Email addresses', 'Passwords'] });
    }
    if (batch.length === TARGET_BATCH) await flush();
  }
  await flush();
  const held = await service.get(accountId, monitor.id);
  if (held.targetCount !== totals.targets) throw new Error(`the monitor holds ${held.targetCount} targets, ${totals.targets} were added`);
  const { rows, targets, repeats, invalid, breached } = totals;
  return { event: 'setup', accountId, monitorId: monitor.id, rows, targets, repeats, invalid, breachedAddresses: breached, setupMs: Math.round(performance.now() - t0) };
}

const ENDED = new Set(['completed', 'failed', 'cancelled']);

async function run(engine: Engine, service: MonitorService, accountId: string, monitorId: string, concurrency: number): Promise<MonitorResult> {
  const { deps, config } = engine;
  const monitor = await service.get(accountId, monitorId);
  const queued = await service.run(accountId, monitorId);
  const jobId = runJobId(queued.id);
  const phaseStartMs: Record<string, number> = {};
  const rssByPhase: Record<string, number> = {};
  let ended = false;
  const worker = new Worker(deps);

  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let step = 'input';
  phaseStartMs.input = 0;
  let seeing = false;
  const see = async (): Promise<void> => {
    // One look at a time: a slow store must not pile them up.
    if (seeing) return;
    seeing = true;
    try {
      const [job, runRow] = await Promise.all([deps.jobs.get(jobId), deps.store.monitorResults.run(accountId, queued.id)]);
      const atMs = Math.round(performance.now() - t0);
      if (runRow && ENDED.has(runRow.status)) step = 'done';
      else if (job?.status === JOB_STATUSES.completed) step = 'compare';
      else if (job) step = job.phase;
      phaseStartMs[step] ??= atMs;
      rssByPhase[step] = Math.max(rssByPhase[step] ?? 0, process.memoryUsage().rss);
      // Ends the loops' poll sleeps as soon as the run is over, so that the clock stops with it.
      if (step === 'done') {
        ended = true;
        worker.stop();
      }
    } finally {
      seeing = false;
    }
  };
  const stopRuns = driveMonitorRuns({ engine: deps, jobService: engine.jobService }, 'bench-monitor-run', config.jobs.pollMs);
  const poller = setInterval(() => void see().catch(() => undefined), 20);
  try {
    await worker.run({ concurrency, until: () => ended });
  } finally {
    clearInterval(poller);
    await stopRuns();
  }
  const runMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const maxRssKiB = process.resourceUsage().maxRSS;
  const ran = await deps.store.monitorResults.run(accountId, queued.id);
  if (!ran) throw new Error(`run ${queued.id} is gone`);
  return {
    event: 'result',
    runId: ran.id,
    status: ran.status,
    reason: ran.reason,
    targets: monitor.targetCount,
    totalRecords: ran.totalRecords ?? 0,
    changesDetected: ran.changesDetected ?? 0,
    creditsUsed: ran.creditsUsed ?? 0,
    runMs: Math.round(runMs * 10) / 10,
    phaseStartMs,
    cpuUserMs: Math.round(cpu.user / 1000),
    cpuSystemMs: Math.round(cpu.system / 1000),
    maxRssKiB,
    rssByPhase,
    settings: { workerConcurrency: concurrency, pollMs: config.jobs.pollMs, chunkRows: config.jobs.chunkRows, batchRows: config.jobs.batchRows },
  };
}

async function main(): Promise<number> {
  // As in the sluice command: the SDK's notice about its future Node 22 floor is noise here.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const { values } = parseArgs({
    options: {
      'data-dir': { type: 'string' },
      setup: { type: 'boolean', default: false },
      input: { type: 'string' },
      account: { type: 'string', default: 'bench' },
      credits: { type: 'string' },
      'breached-every': { type: 'string', default: '10' },
      'monitor-id': { type: 'string' },
      concurrency: { type: 'string' },
    },
  });
  const dataDir = values['data-dir'];
  if (!dataDir) throw new Error('--data-dir is required');
  if (values.setup ? !values.input : !values['monitor-id']) throw new Error('--setup --input FILE or --monitor-id ID is required');
  const config = loadConfig({ ...process.env, SLUICE_DATA_DIR: dataDir });
  const log = createLogger(config.logLevel);
  const engine = await openEngine(config, log);
  try {
    const { deps } = engine;
    const service = monitorServiceOf({ store: deps.store, objects: deps.objects, clock: deps.clock, limits: deps.limits });
    if (values.setup) {
      const credits = values.credits === undefined ? 10_000_000 : Number(values.credits);
      print(await setup(engine, service, values.input!, values.account, credits, Number(values['breached-every'])));
      return 0;
    }
    const concurrency = values.concurrency === undefined ? config.jobs.workerConcurrency : Number(values.concurrency);
    const result = await run(engine, service, values.account, values['monitor-id']!, concurrency);
    print(result);
    return result.status === 'completed' && result.totalRecords === result.targets ? 0 : 1;
  } finally {
    await engine.close();
    log.flush();
  }
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`monitor-run: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
