/**
 * The engine and floor scenarios: the job through Worker.run against a papaparse pass over the same
 * file, alternated (F E F E ...) so that drift in the machine hits both.
 */
import os from 'node:os';
import type { EngineResult } from './engine-run.js';
import type { FloorResult } from './floor-run.js';
import { fmt, markdownTable, ratioVerdict } from './report.js';
import { cores, cpuMs, median, medianRun, phases, phaseText, rate, rowsText, TARGETS, type BenchContext } from './scenario-context.js';

export interface EngineFloor {
  engineRuns: EngineResult[];
  floorRuns: FloorResult[];
  /** The data dir of the last engine run, kept for the repeat scenario. */
  lastEngineDir: string | undefined;
  engineMs: number | undefined;
  floorMs: number | undefined;
  engineMid: EngineResult | undefined;
}

export async function engineAndFloor(ctx: BenchContext): Promise<EngineFloor> {
  const { bench, options, log } = ctx;
  const { rows, scenarios } = options;
  const engineRuns: EngineResult[] = [];
  const floorRuns: FloorResult[] = [];
  let engineError: unknown;
  let floorError: unknown;
  let lastEngineDir: string | undefined;
  const nEngine = scenarios.has('engine') ? options.engineRuns : 0;
  const nFloor = scenarios.has('floor') ? options.floorRuns : 0;
  for (let i = 0; i < Math.max(nEngine, nFloor); i++) {
    if (i < nFloor && floorError === undefined) {
      try {
        log(`floor run ${i + 1}/${nFloor}`);
        const f = await bench.floor();
        floorRuns.push(f);
        log(`  floor ${fmt.s(f.wallMs)}`);
      } catch (e: unknown) {
        floorError = e;
      }
    }
    if (i < nEngine && engineError === undefined) {
      try {
        log(`engine run ${i + 1}/${nEngine} (${rowsText(rows)} rows)`);
        const { dir, result } = await bench.freshRun(rows, 'engine');
        engineRuns.push(result);
        log(`  engine ${fmt.s(result.workerMs)}, ${fmt.int(rate(rows, result.workerMs))} rows/s, peak RSS ${fmt.mb(result.maxRssKiB * 1024)}`);
        if (lastEngineDir) bench.remove(lastEngineDir);
        lastEngineDir = dir;
      } catch (e: unknown) {
        engineError = e;
      }
    }
  }
  const engineMs = engineRuns.length > 0 ? median(engineRuns.map((r) => r.workerMs)) : undefined;
  const floorMs = floorRuns.length > 0 ? median(floorRuns.map((r) => r.wallMs)) : undefined;
  const engineMid = engineRuns.length > 0 ? medianRun(engineRuns, (r) => r.workerMs) : undefined;

  const engineTarget = `engine/floor ≤ ${TARGETS.engineFloor.toFixed(1)} (aim ${TARGETS.engineFloorAim.toFixed(1)})`;
  if (scenarios.has('engine')) {
    if (engineError !== undefined || !engineMid || engineMs === undefined) ctx.failed('engine', engineTarget, engineError ?? 'no run');
    else {
      const ratio = floorMs === undefined ? undefined : engineMs / floorMs;
      ctx.table.push({
        scenario: 'engine',
        figure: ratio === undefined ? `${fmt.int(rate(rows, engineMs))} rows/s (no floor run to compare)` : `engine/floor ${fmt.x(ratio)}`,
        target: engineTarget,
        met: ratio === undefined ? 'n/a' : ratioVerdict(ratio, TARGETS.engineFloor, TARGETS.engineFloorAim),
        detail:
          `${rowsText(rows)} rows in ${fmt.s(engineMs)} of worker time (${engineRuns.length === 1 ? '1 run' : `median of ${engineRuns.length} runs`}), ` +
          `${fmt.int(rate(rows, engineMs))} rows/s, peak RSS ${fmt.mb(engineMid.maxRssKiB * 1024)}; ${phaseText(engineMid)}; ` +
          `${cores(engineMid, engineMid.workerMs).toFixed(2)} cores busy on average; event loop blocked up to ${fmt.s(engineMid.loopDelay.max)}` +
          (floorRuns.length > 0
            ? `; CPU time ${(cpuMs(engineMid) / 1000).toFixed(1)} s, ${fmt.x(cpuMs(engineMid) / median(floorRuns.map(cpuMs)))} the floor's`
            : ''),
      });
    }
  }
  if (scenarios.has('floor')) {
    if (floorError !== undefined || floorMs === undefined) ctx.failed('floor', 'reference for engine/floor', floorError ?? 'no run');
    else {
      ctx.table.push({
        scenario: 'floor',
        figure: `${fmt.s(floorMs)}, ${fmt.int(rate(rows, floorMs))} rows/s`,
        target: 'reference for engine/floor',
        met: 'n/a',
        detail: `${floorRuns.length === 1 ? '1 run' : `median of ${floorRuns.length} runs (${floorRuns.map((f) => fmt.s(f.wallMs)).join(', ')})`}; papaparse stream of the same file, per-row result, CSV to local disk; peak RSS ${fmt.mb(median(floorRuns.map((f) => f.maxRssKiB)) * 1024)}`,
      });
    }
  }
  return { engineRuns, floorRuns, lastEngineDir, engineMs, floorMs, engineMid };
}

/** Every engine, floor and repeat run in one table, in run order. */
export function runsSection(rows: number, ef: EngineFloor, repeat: EngineResult | undefined): string | undefined {
  if (ef.engineRuns.length === 0 && ef.floorRuns.length === 0) return undefined;
  const lines: string[][] = [];
  for (const [i, r] of ef.engineRuns.entries()) {
    lines.push([
      `engine ${i + 1}`,
      fmt.s(r.workerMs),
      fmt.int(rate(rows, r.workerMs)),
      fmt.mb(r.maxRssKiB * 1024),
      phaseText(r),
      `${((r.cpuUserMs + r.cpuSystemMs) / 1000).toFixed(1)} s (${cores(r, r.workerMs).toFixed(2)} cores)`,
    ]);
  }
  for (const [i, f] of ef.floorRuns.entries()) {
    lines.push([`floor ${i + 1}`, fmt.s(f.wallMs), fmt.int(rate(rows, f.wallMs)), fmt.mb(f.maxRssKiB * 1024), '', `${((f.cpuUserMs + f.cpuSystemMs) / 1000).toFixed(1)} s (${cores(f, f.wallMs).toFixed(2)} cores)`]);
  }
  if (repeat) {
    const r = repeat;
    lines.push(['repeat', fmt.s(r.workerMs), fmt.int(rate(rows, r.workerMs)), fmt.mb(r.maxRssKiB * 1024), phaseText(r), `${((r.cpuUserMs + r.cpuSystemMs) / 1000).toFixed(1)} s (${cores(r, r.workerMs).toFixed(2)} cores)`]);
  }
  return [
    `## Runs at ${rowsText(rows)} rows`,
    '',
    `In run order: floor and engine alternate. Engine time is \`Worker.run\` only (the input was staged by another process beforehand); phases are polled every 20 ms. CPU is user + system time of the whole child, which also hosts the embedded S3 server.`,
    '',
    markdownTable(['run', 'wall', 'rows/s', 'peak RSS', 'phases', 'CPU'], lines),
  ].join('\n');
}

/**
 * Processing rate over the first and the second half of the chunks (in the order they completed),
 * from the start of processing: does the job slow down as the billing and result caches grow?
 */
function halfRates(r: EngineResult): { first: number; second: number } | undefined {
  const start = r.phaseStartMs.process;
  const done = r.chunksDone;
  if (start === undefined || done.length < 10) return undefined; // with few chunks, the loops' overlap blurs the halves
  const mid = Math.floor(done.length / 2);
  const rowsOf = (list: typeof done): number => list.reduce((n, c) => n + c.rows, 0);
  return {
    first: rate(rowsOf(done.slice(0, mid)), done[mid - 1]!.atMs - start),
    second: rate(rowsOf(done.slice(mid)), done.at(-1)!.atMs - done[mid - 1]!.atMs),
  };
}

export function engineFindings(ef: EngineFloor): string[] {
  const { engineMid, engineMs, floorMs } = ef;
  const findings: string[] = [];
  if (engineMid && engineMs !== undefined) {
    const ph = phases(engineMid);
    const sum = ph.split + ph.process + ph.assemble;
    findings.push(
      `Of the engine's ${fmt.s(engineMid.workerMs)}, the split took ${fmt.pct(ph.split / sum)}, processing ${fmt.pct(ph.process / sum)} and assembly ${fmt.pct(ph.assemble / sum)}. ` +
        `${floorMs !== undefined ? `The floor does the whole file in ${fmt.s(floorMs)}, so the split alone (one parse of the file plus the chunk objects) is ${fmt.x(ph.split / floorMs)} the floor. ` : ''}` +
        `The engine kept ${cores(engineMid, engineMid.workerMs).toFixed(2)} of ${os.cpus().length} cores busy on average; its loops spent ${fmt.s(engineMid.idleLoopMs)} finding no work (with ${engineMid.settings.concurrency} loops, one waits while the other splits or assembles).`,
    );
  }
  if (engineMid) {
    const halves = halfRates(engineMid);
    if (halves) {
      findings.push(
        `Processing ran at ${fmt.int(halves.first)} rows/s over the first half of the chunks and ${fmt.int(halves.second)} rows/s over the second half ` +
          `(${engineMid.chunksDone.length} chunks, by completion time), while the billing and result caches grow.`,
      );
    }
    const d = engineMid.loopDelay;
    findings.push(
      `The event loop was blocked for up to ${fmt.s(d.max)} at a time (p99 ${fmt.s(d.p99)}, mean ${fmt.s(d.mean)}): ` +
        'a chunk\'s batches follow each other as promise continuations with no I/O between them (the embedded lookups answer in memory), ' +
        'so timers, the lease heartbeat and the embedded S3 server hosted in the same process wait until the chunk reaches its next object-store call.',
    );
  }
  return findings;
}
