/** The memory and memory growth scenarios: peak RSS at rows/10 and at rows, and of a file of wide rows. */
import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ENGINE_RUN, lastEvent, runNode } from './children.js';
import type { EngineResult, EngineStaged } from './engine-run.js';
import { fmt, verdict } from './report.js';
import { rate, rowsText, TARGETS, type BenchContext } from './scenario-context.js';
import type { EngineFloor } from './scenario-engine.js';

export interface MemoryResult {
  small: EngineResult;
  smallRows: number;
  bigRss: number;
  bigSource: string;
  wide: EngineResult | undefined;
}

/**
 * Issue 16's wide file: 1,200 rows of 21,800 cells, 78 MB, every row invalid and so free. Each
 * record is just under the default SLUICE_MAX_LINE_BYTES, so only the cell limit and the byte
 * budgets of batches and chunks stand between it and memory: in batches of 1,000 rows it took
 * the process to 3.47 GB.
 */
export const WIDE = { rows: 1_200, cells: 21_800 } as const;

async function wideInput(tmp: string): Promise<string> {
  const file = path.join(tmp, 'inputs', `wide-${WIDE.rows}x${WIDE.cells}.csv`);
  if (fs.existsSync(file)) return file;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const row = `not-an-email${',xx'.repeat(WIDE.cells - 1)}\n`;
  function* lines(): Generator<string> {
    yield 'email,note\n';
    for (let i = 0; i < WIDE.rows; i++) yield row;
  }
  await pipeline(Readable.from(lines()), fs.createWriteStream(file));
  return file;
}

/** The wide file staged and run in a fresh data dir, by the same engine children as the other runs. */
async function wideRun(ctx: BenchContext): Promise<EngineResult> {
  const { bench } = ctx;
  const input = await wideInput(ctx.tmp);
  const dir = bench.freshDir('memory-wide');
  const staged = lastEvent<EngineStaged>(
    await runNode(ENGINE_RUN, ['--data-dir', dir, '--input', input, '--stage-only', '--rows', String(WIDE.rows)], bench.env(dir)),
    'staged',
  );
  const result = await bench.run(dir, staged.jobId, WIDE.rows);
  bench.remove(dir);
  return result;
}

async function wideScenario(ctx: BenchContext): Promise<EngineResult | undefined> {
  const what = `${rowsText(WIDE.rows)} rows × ${rowsText(WIDE.cells)} cells`;
  try {
    ctx.log(`memory: wide rows, ${what}`);
    const wide = await wideRun(ctx);
    const rss = wide.maxRssKiB * 1024;
    ctx.table.push({
      scenario: 'memory, wide rows',
      figure: `peak RSS ${fmt.mb(rss)} for ${what}`,
      target: `≤ ${fmt.mb(TARGETS.rss1m)}`,
      met: verdict(rss <= TARGETS.rss1m),
      detail: `every row invalid (row_too_wide); ${fmt.s(wide.workerMs)}; ${memoryText(wide)}`,
    });
    return wide;
  } catch (e: unknown) {
    ctx.failed('memory, wide rows', `≤ ${fmt.mb(TARGETS.rss1m)} for ${what}`, e);
    return undefined;
  }
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
    return { small: small.result, smallRows, bigRss, bigSource, wide: await wideScenario(ctx) };
  } catch (e: unknown) {
    ctx.failed('memory', `≤ ${fmt.mb(TARGETS.rss1m)}, and ≤ ${TARGETS.rssRatio}× the ${rowsText(smallRows)}-row figure`, e);
    return undefined;
  }
}

export function memoryFinding(m: MemoryResult, rows: number): string {
  const wide = m.wide ? ` A file of ${rowsText(WIDE.rows)} rows of ${rowsText(WIDE.cells)} cells peaked at ${fmt.mb(m.wide.maxRssKiB * 1024)}.` : '';
  return `Peak RSS was ${fmt.mb(m.small.maxRssKiB * 1024)} at ${rowsText(m.smallRows)} rows and ${fmt.mb(m.bigRss)} at ${rowsText(rows)}: the growth with file size is ${fmt.mb(m.bigRss - m.small.maxRssKiB * 1024)} for ${rowsText(rows - m.smallRows)} more rows.${wide}`;
}
