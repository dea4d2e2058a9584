/**
 * The monitor scenario (issue 20): an email monitor whose targets are the distinct valid addresses
 * of the engine scenario's input, run twice on one data dir by the run driver and a job Worker, as
 * `sluice worker` runs them: a baseline (every target charged, nothing to compare with), then a run
 * after nothing changed, whose comparison reads every target's last_data and finds no change. Each
 * run is a child process of its own (dist/bench/monitor-run.js), so its peak RSS is its own, set
 * beside the bulk job's from the engine scenario of the same bench.
 */
import { lastEvent, MONITOR_RUN, runNode } from './children.js';
import type { MonitorResult, MonitorSetup } from './monitor-run.js';
import { fmt, markdownTable } from './report.js';
import { rate, rowsText, type BenchContext } from './scenario-context.js';
import type { EngineFloor } from './scenario-engine.js';

export interface MonitorRuns {
  setup: MonitorSetup;
  baseline: MonitorResult;
  repeat: MonitorResult;
}

const TARGET = "beside a bulk job's";
/** Every this-many input rows' address gets a breach, so that profiles (and last_data) are not all empty. */
const BREACHED_EVERY = 10;
/** The steps of a run in the order they happen; the child sees each at its first 20 ms poll in it. */
const STEPS = ['input', 'split', 'process', 'assemble', 'compare'] as const;

/** Milliseconds spent in each step seen, up to the next step seen (the last up to the run's end). */
export function stepDurations(r: MonitorResult): Partial<Record<(typeof STEPS)[number], number>> {
  const seen = STEPS.filter((s) => r.phaseStartMs[s] !== undefined);
  const out: Partial<Record<(typeof STEPS)[number], number>> = {};
  seen.forEach((step, i) => {
    const next = seen[i + 1];
    const end = next === undefined ? (r.phaseStartMs.done ?? r.runMs) : r.phaseStartMs[next]!;
    out[step] = end - r.phaseStartMs[step]!;
  });
  return out;
}

function stepText(r: MonitorResult): string {
  const d = stepDurations(r);
  const names: Record<(typeof STEPS)[number], string> = { input: 'input from targets', split: 'job split', process: 'process', assemble: 'assemble', compare: 'comparison' };
  return STEPS.filter((s) => d[s] !== undefined).map((s) => `${names[s]} ${fmt.s(d[s]!)}`).join(', ');
}

export async function monitorScenario(ctx: BenchContext, ef: EngineFloor): Promise<MonitorRuns | undefined> {
  const { bench, options, log } = ctx;
  const { rows } = options;
  const dir = bench.freshDir('monitor');
  let runs: MonitorRuns;
  try {
    const input = await bench.input(rows);
    log(`monitor setup: an email monitor with the distinct valid addresses of ${rowsText(rows)} rows`);
    const env = bench.env(dir);
    const setup = lastEvent<MonitorSetup>(await runNode(MONITOR_RUN, ['--data-dir', dir, '--setup', '--input', input, '--credits', String(2 * rows + 1000), '--breached-every', String(BREACHED_EVERY)], env), 'setup');
    log(`  ${rowsText(setup.targets)} targets (${rowsText(setup.repeats)} repeats, ${rowsText(setup.invalid)} invalid) in ${fmt.s(setup.setupMs)}`);
    const once = async (label: string): Promise<MonitorResult> => {
      log(`monitor ${label} run (${rowsText(setup.targets)} targets)`);
      const out = await runNode(MONITOR_RUN, ['--data-dir', dir, '--monitor-id', setup.monitorId], env, { nodeArgs: options.nodeArgs });
      const r = lastEvent<MonitorResult>(out, 'result');
      log(`  ${fmt.s(r.runMs)}, ${fmt.int(rate(r.targets, r.runMs))} targets/s, peak RSS ${fmt.mb(r.maxRssKiB * 1024)}, ${rowsText(r.changesDetected)} changes`);
      return r;
    };
    const baseline = await once('baseline');
    const repeat = await once('unchanged');
    if (repeat.changesDetected !== 0) throw new Error(`the run after nothing changed found ${repeat.changesDetected} changes`);
    runs = { setup, baseline, repeat };
  } catch (e: unknown) {
    ctx.failed('monitor', TARGET, e);
    return undefined;
  } finally {
    bench.remove(dir);
  }

  const { setup, baseline, repeat } = runs;
  const peakKiB = Math.max(baseline.maxRssKiB, repeat.maxRssKiB);
  const targetsPerS = rate(repeat.targets, repeat.runMs);
  const { engineMid, engineMs } = ef;
  const beside =
    engineMid === undefined || engineMs === undefined
      ? 'no engine run in this bench to set it beside (add `engine` to --scenarios)'
      : `the bulk job (engine scenario, same bench): ${fmt.int(rate(rows, engineMs))} rows/s over ${rowsText(rows)} rows, peak RSS ${fmt.mb(engineMid.maxRssKiB * 1024)}; ` +
        `the monitor run goes at ${fmt.x(targetsPerS / rate(rows, engineMs))} its rate and peaks at ${fmt.x(peakKiB / engineMid.maxRssKiB)} its RSS`;
  ctx.table.push({
    scenario: 'monitor',
    figure: `${fmt.int(targetsPerS)} targets/s, peak RSS ${fmt.mb(peakKiB * 1024)}`,
    target: TARGET,
    met: 'n/a',
    detail:
      `email monitor of the ${rowsText(setup.targets)} distinct valid addresses of the ${rowsText(rows)}-row input, 1 input row in ${BREACHED_EVERY} with a breach; run driver + job Worker as \`sluice worker\`, ` +
      `timed from the queued run to its end; the rate is the second run's (nothing changed, its comparison reads every target's last_data: ${rowsText(repeat.changesDetected)} changes) ` +
      `in ${fmt.s(repeat.runMs)} (${stepText(repeat)}); the baseline run took ${fmt.s(baseline.runMs)} (${stepText(baseline)}), ` +
      `${fmt.int(rate(baseline.targets, baseline.runMs))} targets/s, ${rowsText(baseline.creditsUsed)} credits; peak RSS the higher of the two runs' ` +
      `(${fmt.mb(baseline.maxRssKiB * 1024)}, ${fmt.mb(repeat.maxRssKiB * 1024)}); ${beside}`,
  });
  ctx.sections.push(monitorSection(rows, runs));
  return runs;
}

function monitorSection(rows: number, { setup, baseline, repeat }: MonitorRuns): string {
  const line = (label: string, r: MonitorResult): string[] => [
    label,
    rowsText(r.targets),
    fmt.s(r.runMs),
    fmt.int(rate(r.targets, r.runMs)),
    fmt.mb(r.maxRssKiB * 1024),
    stepText(r),
    rowsText(r.changesDetected),
    rowsText(r.creditsUsed),
    `${((r.cpuUserMs + r.cpuSystemMs) / 1000).toFixed(1)} s (${((r.cpuUserMs + r.cpuSystemMs) / r.runMs).toFixed(2)} cores)`,
  ];
  return [
    `## Monitor runs over the ${rowsText(rows)}-row input`,
    '',
    `One email monitor on one data dir; its ${rowsText(setup.targets)} targets were added through MonitorService.addTargets in batches of 10,000 ` +
      `(${rowsText(setup.repeats)} repeats and ${rowsText(setup.invalid)} invalid cells refused; ${fmt.s(setup.setupMs)}, not timed below), and ${rowsText(setup.breachedAddresses)} of them given a breach. ` +
      `Each run is a child of its own, timed from the queued run to its end; steps are polled every 20 ms, and the driver looks for a run to start or compare every ${baseline.settings.pollMs} ms when idle.`,
    '',
    markdownTable(['run', 'targets', 'wall', 'targets/s', 'peak RSS', 'steps', 'changes', 'credits', 'CPU'], [line('baseline', baseline), line('unchanged', repeat)]),
  ].join('\n');
}
