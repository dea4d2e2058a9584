/**
 * The remote scenario: the job against the provider simulator at 20 ms latency with a per-account
 * limit of 64 in flight; efficiency = achieved rows per second / (64 / 0.020 s).
 *
 * The formula counts one key per request, so the job sends one key per request
 * (SLUICE_PROVIDER_MAX_BATCH=1) on a file of distinct valid addresses in a fresh data dir: no
 * duplicates, no invalid rows, no cache hits, every row one request. The simulator runs in a
 * process of its own, as a remote service would. A transport run (the engine's HTTP client alone,
 * 64 one-key lookups at a time, no engine) says what this machine allows at that moment.
 */
import { SETTINGS } from '../src/config/load-config.js';
import { lastEvent, REMOTE_TRANSPORT, runNode, stopChild } from './children.js';
import type { EngineResult } from './engine-run.js';
import type { SimulatorReport } from './remote-simulator.js';
import { meanRequestMs, windowStats, type WindowStats } from './remote-timeline.js';
import type { TransportResult } from './remote-transport.js';
import { fmt, verdict } from './report.js';
import { cores, cpuMs, median, medianRun, phases, rate, rowsText, TARGETS, type BenchContext } from './scenario-context.js';
import { startSimulator, stopSimulator } from './scale-out-services.js';

export const REMOTE = {
  latencyMs: 20,
  inFlight: 64,
  /** About 30 s at the ideal rate; a smaller --rows makes it smaller. */
  rows: 100_000,
  transportKeys: 20_000,
};
const IDEAL_ROWS_PER_S = REMOTE.inFlight / (REMOTE.latencyMs / 1000);

/**
 * The formula's own terms, set whatever --env says. The rest (SLUICE_WORKER_CONCURRENCY,
 * SLUICE_BATCH_ROWS, SLUICE_CHUNK_ROWS) stays at Sluice's defaults unless the operator sets it:
 * with them, the engine keeps its 64 limiter slots taken ~97% of the process phase, and neither
 * 4 chunks at once nor batches of 250 or 5,000 rows did measurably better.
 */
const FORMULA_ENV: Record<string, string> = {
  SLUICE_PROVIDER_MAX_BATCH: '1',
  SLUICE_ACCOUNT_CONCURRENCY: String(REMOTE.inFlight),
  SLUICE_PROVIDER_CONNECTIONS: String(REMOTE.inFlight),
};

export interface RemoteRun {
  rows: number;
  result: EngineResult;
  simulator: SimulatorReport;
}

export interface TransportRun {
  result: TransportResult;
  simulator: SimulatorReport;
}

export interface RemoteResult {
  runs: RemoteRun[];
  mid: RemoteRun;
  transports: TransportRun[];
}

const efficiency = (rowsPerS: number): number => rowsPerS / IDEAL_ROWS_PER_S;

async function transportRun(ctx: BenchContext, keys: number): Promise<TransportRun> {
  const { child, url } = await startSimulator(REMOTE.latencyMs, REMOTE.inFlight, ctx.bench.env(undefined));
  try {
    const out = await runNode(REMOTE_TRANSPORT, ['--url', url, '--keys', String(keys), '--in-flight', String(REMOTE.inFlight)], ctx.bench.env(undefined));
    return { result: lastEvent<TransportResult>(out, 'result'), simulator: await stopSimulator(child) };
  } finally {
    await stopChild(child);
  }
}

async function engineRun(ctx: BenchContext, rows: number): Promise<RemoteRun> {
  const { bench } = ctx;
  const dir = bench.freshDir('remote');
  const staged = await bench.stage(dir, rows, 'distinct');
  const { child, url } = await startSimulator(REMOTE.latencyMs, REMOTE.inFlight, ctx.bench.env(undefined));
  try {
    const result = await bench.run(dir, staged.jobId, rows, [], { ...FORMULA_ENV, SLUICE_GENDER_PROVIDER_URL: url });
    const simulator = await stopSimulator(child);
    bench.remove(dir);
    return { rows, result, simulator };
  } finally {
    await stopChild(child);
  }
}

/** The process phase, on the hrtime clock both children share. */
function processWindow(r: EngineResult): { fromUs: number; toUs: number } {
  const p = r.phaseStartMs;
  return { fromUs: r.startHrtimeUs + (p.process ?? 0) * 1000, toUs: r.startHrtimeUs + (p.assemble ?? r.workerMs) * 1000 };
}

function settingsText(run: RemoteRun): string {
  const s = run.result.settings;
  const defaults = s.workerConcurrency === SETTINGS.workerConcurrency.fallback && s.batchRows === SETTINGS.batchRows.fallback && s.chunkRows === SETTINGS.chunkRows.fallback;
  return (
    `SLUICE_PROVIDER_MAX_BATCH=${s.providerMaxBatch}, SLUICE_ACCOUNT_CONCURRENCY=${s.accountConcurrency}, SLUICE_PROVIDER_CONNECTIONS=${s.providerConnections} ` +
    `(the formula's terms, set by the scenario); SLUICE_WORKER_CONCURRENCY=${s.workerConcurrency}, SLUICE_BATCH_ROWS=${s.batchRows}, SLUICE_CHUNK_ROWS=${s.chunkRows}` +
    (defaults ? ' (Sluice\'s defaults)' : '')
  );
}

/** Rows that were not one successful lookup each, or requests beyond one per row: the figure then means less. */
function caveats(run: RemoteRun): string {
  const c = run.result.counters;
  const notes: string[] = [];
  if (c.invalid + c.duplicate > 0) notes.push(`${rowsText(c.invalid)} invalid and ${rowsText(c.duplicate)} duplicate rows`);
  if (c.error > 0) notes.push(`${rowsText(c.error)} error rows`);
  if (run.simulator.stats.requests !== run.rows) notes.push(`${rowsText(run.simulator.stats.requests)} requests for ${rowsText(run.rows)} rows`);
  const other = Object.entries(run.simulator.stats.byStatus).filter(([status]) => status !== '200');
  if (other.length > 0) notes.push(`answers other than 200: ${other.map(([status, n]) => `${n}× ${status}`).join(', ')}`);
  return notes.length === 0 ? '' : `; CAUTION: ${notes.join('; ')}`;
}

export async function remoteScenario(ctx: BenchContext): Promise<RemoteResult | undefined> {
  const { options, log } = ctx;
  const rows = Math.min(REMOTE.rows, options.rows);
  const transportKeys = Math.min(REMOTE.transportKeys, rows);
  const target = `≥ ${fmt.pct(TARGETS.remote).replace('.0', '')} efficiency (provider simulator at ${REMOTE.latencyMs} ms latency, ${REMOTE.inFlight} in flight)`;
  try {
    const runs: RemoteRun[] = [];
    const transports: TransportRun[] = [];
    // Transport and engine alternate, so that the machine's load at the time hits both.
    for (let i = 0; i < options.engineRuns; i++) {
      log(`remote transport run ${i + 1}/${options.engineRuns} (${rowsText(transportKeys)} one-key requests)`);
      const t = await transportRun(ctx, transportKeys);
      transports.push(t);
      log(`  transport ${fmt.s(t.result.wallMs)}, ${fmt.int(rate(t.result.keys, t.result.wallMs))} rows/s`);
      log(`remote run ${i + 1}/${options.engineRuns} (${rowsText(rows)} rows, one request each)`);
      const run = await engineRun(ctx, rows);
      runs.push(run);
      const rowsPerS = rate(rows, run.result.workerMs);
      log(`  remote ${fmt.s(run.result.workerMs)}, ${fmt.int(rowsPerS)} rows/s, ${fmt.pct(efficiency(rowsPerS))}, max in flight ${run.simulator.stats.maxInFlight}`);
    }
    const mid = medianRun(runs, (r) => r.result.workerMs);
    const r = mid.result;
    const rowsPerS = rate(rows, r.workerMs);
    const processMs = phases(r).process;
    const transportRate = median(transports.map((t) => rate(t.result.keys, t.result.wallMs)));
    const sim = mid.simulator.stats;
    ctx.table.push({
      scenario: 'remote',
      figure: `${fmt.pct(efficiency(rowsPerS))} efficiency (${fmt.int(rowsPerS)} rows/s)`,
      target,
      met: verdict(efficiency(rowsPerS) >= TARGETS.remote),
      detail:
        `${rowsText(rows)} rows of distinct valid addresses, one one-key request each, in ${fmt.s(r.workerMs)} of worker time (Worker.run, from the job's split to its assembled results; staged beforehand by another process; ` +
        `${runs.length === 1 ? '1 run' : `median of ${runs.length} runs: ${runs.map((x) => fmt.pct(efficiency(rate(rows, x.result.workerMs)))).join(', ')}`}), ` +
        `against the ideal ${fmt.int(IDEAL_ROWS_PER_S)} rows/s (${REMOTE.inFlight} / ${(REMOTE.latencyMs / 1000).toFixed(3)} s); the process phase alone ${fmt.s(processMs)}, ${fmt.int(rate(rows, processMs))} rows/s, ${fmt.pct(efficiency(rate(rows, processMs)))}; ` +
        `simulator in its own process: max ${sim.maxInFlight} in flight, ${rowsText(sim.requests)} requests, ${rowsText(sim.keys)} keys, ${sim.connections} connections; ` +
        `the HTTP client alone on the same machine meanwhile: ${fmt.int(transportRate)} rows/s, ${fmt.pct(efficiency(transportRate))} (${rowsText(transportKeys)} keys, 64 at a time, no engine); ` +
        `settings: ${settingsText(mid)}${caveats(mid)}`,
    });
    return { runs, mid, transports };
  } catch (e: unknown) {
    ctx.failed('remote', target, e);
    return undefined;
  }
}

/** The simulator's CPU time per request it answered, over its whole life (start-up and connections included). */
const perRequestUs = (s: SimulatorReport): string => ((1000 * cpuMs(s)) / Math.max(1, s.stats.requests)).toFixed(0);

/** Where the remote scenario's rate went, by Little's law: rows/s = requests in flight / time per request. */
export function remoteFindings(remote: RemoteResult): string[] {
  const { mid, transports } = remote;
  const r = mid.result;
  const window = processWindow(r);
  const atSimulator: WindowStats = windowStats(mid.simulator.timeline, window.fromUs, window.toUs);
  const simRequestMs = meanRequestMs(mid.simulator.timeline);
  const ph = phases(r);
  const processEfficiency = efficiency(rate(mid.rows, ph.process));
  const findings = [
    `Remote: ${fmt.pct(efficiency(rate(mid.rows, r.workerMs)))} of the ideal over the worker time, ${fmt.pct(processEfficiency)} over the process phase (${fmt.s(ph.process)} of ${fmt.s(r.workerMs)}; split and assembly make no lookups). ` +
      `By Little's law the process phase's share is (requests in flight / ${REMOTE.inFlight}) × (${REMOTE.latencyMs} ms / time per request): the simulator had ${atSimulator.mean.toFixed(1)} in flight on average ` +
      `(${REMOTE.inFlight} for ${fmt.pct(atSimulator.fullShare)} of the time, none for ${fmt.pct(atSimulator.zeroShare)}), and a request spent ${simRequestMs.toFixed(1)} ms there ` +
      `(${(atSimulator.mean / REMOTE.inFlight).toFixed(2)} × ${(REMOTE.latencyMs / simRequestMs).toFixed(2)} = ${fmt.pct((atSimulator.mean / REMOTE.inFlight) * (REMOTE.latencyMs / simRequestMs))}).`,
  ];
  if (r.lookups) {
    const atEngine = windowStats(r.lookups, window.fromUs, window.toUs);
    const engineRequestMs = meanRequestMs(r.lookups);
    findings.push(
      `On the engine's side, provider calls in flight averaged ${atEngine.mean.toFixed(1)} (all ${REMOTE.inFlight} limiter slots taken for ${fmt.pct(atEngine.fullShare)} of the process phase, none for ${fmt.pct(atEngine.zeroShare)}), ` +
        `and a call took ${engineRequestMs.toFixed(1)} ms: ${(engineRequestMs - simRequestMs).toFixed(1)} ms more than the simulator held the request, spent waiting for the engine's event loop ` +
        `(the HTTP client's own work, and whatever else holds the loop: checkpoint transactions, batch preparation, the embedded S3 server), on the loopback and in the simulator's event loop. ` +
        `Slots left empty are lost to the engine's batching (a batch waits for its last lookups before it commits, and the next batch's lookups do not start meanwhile); ` +
        `slots taken while the simulator has fewer are lost to the event loops and the CPU. ` +
        `The engine child used ${((1000 * cpuMs(r)) / mid.rows).toFixed(0)} µs of CPU per row (${cores(r, r.workerMs).toFixed(2)} cores on average), the simulator ${perRequestUs(mid.simulator)} µs per request; ` +
        `the engine's event loop was blocked for up to ${fmt.s(r.loopDelay.max)} at a time (p99 ${fmt.s(r.loopDelay.p99)}, mean ${fmt.s(r.loopDelay.mean)}).`,
    );
  }
  const t = medianRun(transports, (x) => x.result.wallMs);
  const transportRate = rate(t.result.keys, t.result.wallMs);
  findings.push(
    `The HTTP client alone (RemoteLookupProvider, ${REMOTE.inFlight} one-key lookups always outstanding, no engine) reached ${fmt.int(transportRate)} rows/s, ${fmt.pct(efficiency(transportRate))} of the ideal, ` +
      `with a request ${meanRequestMs(t.simulator.timeline).toFixed(1)} ms in the simulator and ${fmt.s(t.result.cpuUserMs + t.result.cpuSystemMs)} of CPU for ${rowsText(t.result.keys)} requests ` +
      `(${((1000 * cpuMs(t.result)) / t.result.keys).toFixed(0)} µs each, the simulator ${perRequestUs(t.simulator)} µs): ` +
      `the engine got ${fmt.pct(rate(mid.rows, ph.process) / transportRate)} of that in its process phase.`,
  );
  return findings;
}
