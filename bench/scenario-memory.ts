/** The memory and memory growth scenarios: peak RSS at rows/10 and at rows. */
import type { EngineResult } from './engine-run.js';
import { fmt, verdict } from './report.js';
import { rate, rowsText, TARGETS, type BenchContext } from './scenario-context.js';
import type { EngineFloor } from './scenario-engine.js';

export interface MemoryResult {
  small: EngineResult;
  smallRows: number;
  bigRss: number;
  bigSource: string;
}

/** What the engine child's memory was made of at the highest RSS its poller saw. */
function memoryText(r: EngineResult): string {
  const p = r.memory.peak;
  const byPhase = ['split', 'process', 'assemble']
    .filter((ph) => r.memory.byPhase[ph] !== undefined)
    .map((ph) => `${ph} ${fmt.mb(r.memory.byPhase[ph]!)}`)
    .join(', ');
  return (
    `highest sampled RSS ${fmt.mb(p.rss)}, in ${p.phase} at ${fmt.s(p.atMs)}: V8 heap ${fmt.mb(p.heapUsed)} used of ${fmt.mb(p.heapTotal)}, ` +
    `Buffers and other external memory ${fmt.mb(p.external)}, the rest (SQLite page cache, native allocations, code) ${fmt.mb(Math.max(0, p.rss - p.heapTotal - p.external))}; ` +
    `highest RSS by phase: ${byPhase}`
  );
}

/** The big figure comes from the engine runs when there are any, else from a run of its own. */
export async function memoryScenario(ctx: BenchContext, ef: EngineFloor): Promise<MemoryResult | undefined> {
  const { bench, log } = ctx;
  const { rows } = ctx.options;
  const { engineRuns, engineMid } = ef;
  const smallRows = Math.max(10, Math.round(rows / 10));
  try {
    let bigRss: number;
    let bigSource: string;
    if (engineRuns.length > 0) {
      bigRss = Math.max(...engineRuns.map((r) => r.maxRssKiB)) * 1024;
      bigSource = `the engine run${engineRuns.length > 1 ? 's (highest)' : ''}`;
    } else {
      log(`memory: ${rowsText(rows)} rows`);
      const big = await bench.freshRun(rows, 'memory-big');
      bench.remove(big.dir);
      bigRss = big.result.maxRssKiB * 1024;
      bigSource = 'its own run';
    }
    log(`memory: ${rowsText(smallRows)} rows`);
    const small = await bench.freshRun(smallRows, 'memory-small');
    bench.remove(small.dir);
    const smallRss = small.result.maxRssKiB * 1024;
    ctx.table.push({
      scenario: 'memory',
      figure: `peak RSS ${fmt.mb(bigRss)} at ${rowsText(rows)} rows`,
      target: `≤ ${fmt.mb(TARGETS.rss1m)}`,
      met: verdict(bigRss <= TARGETS.rss1m),
      detail: `engine child's process.resourceUsage().maxRSS, from ${bigSource}${engineMid ? `; ${memoryText(engineMid)}` : ''}`,
    });
    ctx.table.push({
      scenario: 'memory growth',
      figure: `${fmt.x(bigRss / smallRss)} (${fmt.mb(bigRss)} / ${fmt.mb(smallRss)})`,
      target: `≤ ${TARGETS.rssRatio.toFixed(1)}× the ${rowsText(smallRows)}-row figure`,
      met: verdict(bigRss / smallRss <= TARGETS.rssRatio),
      detail: `${rowsText(smallRows)} rows: peak RSS ${fmt.mb(smallRss)}, ${fmt.s(small.result.workerMs)}, ${fmt.int(rate(smallRows, small.result.workerMs))} rows/s; ${memoryText(small.result)}`,
    });
    return { small: small.result, smallRows, bigRss, bigSource };
  } catch (e: unknown) {
    ctx.failed('memory', `≤ ${fmt.mb(TARGETS.rss1m)}, and ≤ ${TARGETS.rssRatio}× the ${rowsText(smallRows)}-row figure`, e);
    return undefined;
  }
}

export function memoryFinding(m: MemoryResult, rows: number): string {
  return `Peak RSS was ${fmt.mb(m.small.maxRssKiB * 1024)} at ${rowsText(m.smallRows)} rows and ${fmt.mb(m.bigRss)} at ${rowsText(rows)}: the growth with file size is ${fmt.mb(m.bigRss - m.small.maxRssKiB * 1024)} for ${rowsText(rows - m.smallRows)} more rows.`;
}
