/**
 * The narrow scenario: the engine and the floor on a one-column file of addresses (the `email` cells
 * of the engine scenario's rows), alternated as there. With one short cell per row, the bytes to
 * parse and copy shrink (the report gives both files' sizes) while the per-row work (charge, lookup,
 * checkpoint) does not, so the floor gains more than the engine and the ratio shows per-row cost.
 */
import fs from 'node:fs';
import type { EngineResult } from './engine-run.js';
import type { FloorResult } from './floor-run.js';
import { fmt, ratioVerdict } from './report.js';
import { cpuMs, median, medianRun, phaseText, rate, rowsText, TARGETS, type BenchContext } from './scenario-context.js';

export interface Narrow {
  engineMs: number;
  floorMs: number;
  engineMid: EngineResult;
}

export async function narrowScenario(ctx: BenchContext): Promise<Narrow | undefined> {
  const { bench, options, log } = ctx;
  const { rows } = options;
  const target = `engine/floor ≤ ${TARGETS.engineFloor.toFixed(1)} (aim ${TARGETS.engineFloorAim.toFixed(1)}), as the wide file's`;
  const engineRuns: EngineResult[] = [];
  const floorRuns: FloorResult[] = [];
  const sizes = { narrow: 0, wide: 0 };
  try {
    const input = await bench.input(rows, 'narrow');
    sizes.narrow = fs.statSync(input).size;
    sizes.wide = fs.statSync(await bench.input(rows)).size;
    log(`narrow file: ${fmt.mb(sizes.narrow)} against the wide file's ${fmt.mb(sizes.wide)}`);
    for (let i = 0; i < Math.max(options.engineRuns, options.floorRuns); i++) {
      if (i < options.floorRuns) {
        log(`narrow floor run ${i + 1}/${options.floorRuns}`);
        const f = await bench.floor('narrow');
        floorRuns.push(f);
        log(`  floor ${fmt.s(f.wallMs)}`);
      }
      if (i < options.engineRuns) {
        log(`narrow engine run ${i + 1}/${options.engineRuns} (${rowsText(rows)} rows)`);
        const dir = bench.freshDir('narrow');
        try {
          const staged = await bench.stage(dir, rows, 'narrow');
          const r = await bench.run(dir, staged.jobId, rows);
          engineRuns.push(r);
          log(`  engine ${fmt.s(r.workerMs)}, ${fmt.int(rate(rows, r.workerMs))} rows/s, peak RSS ${fmt.mb(r.maxRssKiB * 1024)}`);
        } finally {
          bench.remove(dir);
        }
      }
    }
  } catch (e: unknown) {
    ctx.failed('narrow', target, e);
    return undefined;
  }
  const engineMs = median(engineRuns.map((r) => r.workerMs));
  const floorMs = median(floorRuns.map((f) => f.wallMs));
  const engineMid = medianRun(engineRuns, (r) => r.workerMs);
  const ratio = engineMs / floorMs;
  const counted = (n: number, times: number[]): string => (n === 1 ? '1 run' : `median of ${n} runs (${times.map(fmt.s).join(', ')})`);
  ctx.table.push({
    scenario: 'narrow',
    figure: `engine/floor ${fmt.x(ratio)}`,
    target,
    met: ratioVerdict(ratio, TARGETS.engineFloor, TARGETS.engineFloorAim),
    detail:
      `one column (\`email\`), the engine scenario's ${rowsText(rows)} addresses, ${fmt.mb(sizes.narrow)} against ${fmt.mb(sizes.wide)}; engine ${fmt.s(engineMs)} of worker time, staged beforehand ` +
      `(${counted(engineRuns.length, engineRuns.map((r) => r.workerMs))}), ${fmt.int(rate(rows, engineMs))} rows/s, peak RSS ${fmt.mb(engineMid.maxRssKiB * 1024)}; ` +
      `${phaseText(engineMid)}; floor on the same file ${fmt.s(floorMs)} (${counted(floorRuns.length, floorRuns.map((f) => f.wallMs))}); ` +
      `CPU time ${(cpuMs(engineMid) / 1000).toFixed(1)} s, ${fmt.x(cpuMs(engineMid) / median(floorRuns.map(cpuMs)))} the floor's`,
  });
  return { engineMs, floorMs, engineMid };
}

export function narrowFinding(narrow: Narrow, wideEngineMs: number | undefined, wideFloorMs: number | undefined): string {
  const wide =
    wideEngineMs === undefined || wideFloorMs === undefined
      ? ''
      : ` On the wide file the engine took ${fmt.s(wideEngineMs)} and the floor ${fmt.s(wideFloorMs)}: without the other columns the engine ` +
        `took ${fmt.x(narrow.engineMs / wideEngineMs)} its wide-file time and the floor ${fmt.x(narrow.floorMs / wideFloorMs)}` +
        (narrow.engineMs / wideEngineMs > narrow.floorMs / wideFloorMs
          ? ': the engine gains less from the smaller file than the floor, so more of its time is per row (charges, lookups, checkpoints) than per byte.'
          : ': the engine gains at least as much from the smaller file as the floor, so its time follows the bytes it parses and copies.');
  return `On the one-column file the engine took ${fmt.s(narrow.engineMs)} against the floor's ${fmt.s(narrow.floorMs)} (${fmt.x(narrow.engineMs / narrow.floorMs)}).${wide}`;
}
