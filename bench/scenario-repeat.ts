/** The repeat scenario: the same file again for the same account, in the first run's data dir. */
import type { EngineResult } from './engine-run.js';
import { fmt, ratioVerdict } from './report.js';
import { phases, phaseText, rate, rowsText, TARGETS, type BenchContext } from './scenario-context.js';
import type { EngineFloor } from './scenario-engine.js';

export interface RepeatResult {
  first: EngineResult;
  second: EngineResult;
}

/** Takes over the engine scenario's last data dir (and removes it), or makes a first run of its own. */
export async function repeatScenario(ctx: BenchContext, ef: EngineFloor): Promise<RepeatResult | undefined> {
  const { bench, log } = ctx;
  const { rows } = ctx.options;
  const target = `repeat/floor ≤ ${TARGETS.repeatFloor.toFixed(1)} (aim ${TARGETS.repeatFloorAim.toFixed(1)})`;
  try {
    let dir = ef.lastEngineDir;
    let first = ef.engineRuns.at(-1);
    if (!dir || !first) {
      log(`repeat: first run (${rowsText(rows)} rows)`);
      const fresh = await bench.freshRun(rows, 'repeat');
      dir = fresh.dir;
      first = fresh.result;
    }
    ef.lastEngineDir = undefined;
    log('repeat: second run, same account, same file');
    const staged = await bench.stage(dir, rows);
    const second = await bench.run(dir, staged.jobId, rows);
    bench.remove(dir);
    const speedup = first.workerMs / second.workerMs;
    const ratio = ef.floorMs === undefined ? undefined : second.workerMs / ef.floorMs;
    log(`  repeat ${fmt.s(second.workerMs)} (${fmt.x(speedup)} the first run's rows/s)`);
    ctx.table.push({
      scenario: 'repeat',
      figure: ratio === undefined ? 'no floor run' : `repeat/floor ${fmt.x(ratio)}`,
      target,
      met: ratio === undefined ? 'n/a' : ratioVerdict(ratio, TARGETS.repeatFloor, TARGETS.repeatFloorAim),
      detail:
        `${fmt.int(rate(rows, second.workerMs))} rows/s (${fmt.s(second.workerMs)}), ${fmt.x(speedup)} the first run's ${fmt.int(rate(rows, first.workerMs))} rows/s (${fmt.s(first.workerMs)}); ` +
        `${fmt.int(second.counters.creditsUsed)} credits charged on the repeat (first run: ${fmt.int(first.counters.creditsUsed)}); ${phaseText(second)}`,
    });
    return { first, second };
  } catch (e: unknown) {
    ctx.failed('repeat', target, e);
    return undefined;
  }
}

export function repeatFinding(r: RepeatResult): string {
  const a = phases(r.first);
  const b = phases(r.second);
  return (
    `The repeat took ${fmt.s(r.second.workerMs)} against ${fmt.s(r.first.workerMs)}: split ${fmt.s(a.split)} → ${fmt.s(b.split)}, process ${fmt.s(a.process)} → ${fmt.s(b.process)}, assemble ${fmt.s(a.assemble)} → ${fmt.s(b.assemble)}. ` +
    'A repeat skips the lookups, the charges and the result-cache writes, but every row is still parsed, chunked, checked against the billing cache, rendered and written.'
  );
}
