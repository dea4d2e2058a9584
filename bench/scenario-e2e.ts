/**
 * The end-to-end scenario: `sluice run FILE --out DIR` as a user types it, through the built CLI on
 * a fresh data dir, timed from spawn to exit, against the floor measured in the same bench run.
 * Nothing is staged: the time holds the process start, opening the engine (database, embedded S3),
 * the upload of the input, the job, and writing the result files to DIR.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import Papa from 'papaparse';
import { BENCH_DIR, CLI, startNode, tail } from './children.js';
import type { ExitUsage } from './exit-usage.js';
import { fmt, ratioVerdict } from './report.js';
import { cores, cpuMs, median, medianRun, rate, rowsText, TARGETS, type BenchContext } from './scenario-context.js';
import type { EngineFloor } from './scenario-engine.js';

const EXIT_USAGE = pathToFileURL(path.join(BENCH_DIR, 'exit-usage.js')).href;

export interface E2eRun {
  wallMs: number;
  /** The CLI process's own CPU time and peak RSS; undefined if it died before writing them. */
  usage: ExitUsage | undefined;
}

export interface E2e {
  runs: E2eRun[];
  wallMs: number;
  mid: E2eRun;
}

export async function e2eScenario(ctx: BenchContext, ef: EngineFloor): Promise<E2e | undefined> {
  const { options, log } = ctx;
  const { rows } = options;
  const target = `sluice run/floor ≤ ${TARGETS.e2eFloor.toFixed(1)} (aim ${TARGETS.e2eFloorAim.toFixed(1)})`;
  const runs: E2eRun[] = [];
  try {
    for (let i = 0; i < options.e2eRuns; i++) {
      log(`e2e run ${i + 1}/${options.e2eRuns}: sluice run (${rowsText(rows)} rows)`);
      const run = await cliRun(ctx, rows);
      runs.push(run);
      log(`  sluice run ${fmt.s(run.wallMs)}${run.usage ? `, peak RSS ${fmt.mb(run.usage.maxRssKiB * 1024)}` : ''}`);
    }
  } catch (e: unknown) {
    ctx.failed('e2e', target, e);
    return undefined;
  }
  const wallMs = median(runs.map((r) => r.wallMs));
  const mid = medianRun(runs, (r) => r.wallMs);
  const ratio = ef.floorMs === undefined ? undefined : wallMs / ef.floorMs;
  const counted = runs.length === 1 ? '1 run' : `median of ${runs.length} runs (${runs.map((r) => fmt.s(r.wallMs)).join(', ')})`;
  ctx.table.push({
    scenario: 'e2e',
    figure: ratio === undefined ? `${fmt.int(rate(rows, wallMs))} rows/s (no floor run to compare)` : `sluice run/floor ${fmt.x(ratio)}`,
    target,
    met: ratio === undefined ? 'n/a' : ratioVerdict(ratio, TARGETS.e2eFloor, TARGETS.e2eFloorAim),
    detail:
      `\`node dist/src/main/cli.js run FILE --out DIR\` on a fresh data dir, the same ${rowsText(rows)}-row file as the engine scenario, not staged; ` +
      `${fmt.s(wallMs)} from spawn to exit (${counted}), ${fmt.int(rate(rows, wallMs))} rows/s` +
      (ef.floorMs === undefined ? '' : `, against the floor's ${fmt.s(ef.floorMs)}`) +
      (mid.usage
        ? `; peak RSS ${fmt.mb(mid.usage.maxRssKiB * 1024)}; CPU time ${(cpuMs(mid.usage) / 1000).toFixed(1)} s (${cores(mid.usage, mid.wallMs).toFixed(2)} cores)`
        : '') +
      `; exit 0 and all.csv holds every row`,
  });
  return { runs, wallMs, mid };
}

/** One `sluice run` on a fresh data dir; rejects unless it exits 0 with every row in all.csv. */
async function cliRun(ctx: BenchContext, rows: number): Promise<E2eRun> {
  const { bench, options } = ctx;
  const input = await bench.input(rows);
  const dataDir = bench.freshDir('e2e');
  const outDir = `${dataDir}-results`;
  const usageFile = `${dataDir}-usage.json`;
  try {
    const t0 = performance.now();
    const child = startNode(CLI, ['run', input, '--out', outDir], bench.env(dataDir, { BENCH_EXIT_USAGE_FILE: usageFile }), {
      nodeArgs: [`--import=${EXIT_USAGE}`, ...options.nodeArgs],
    });
    const { code, signal } = await child.exited;
    const wallMs = performance.now() - t0;
    if (code !== 0) throw new Error(`sluice run exited with ${code ?? signal}\n${tail(child.stderr() || child.stdout())}`);
    const written = await dataRows(path.join(outDir, 'all.csv'));
    if (written !== rows) throw new Error(`sluice run wrote ${written} rows to all.csv, expected ${rows}`);
    const usage = fs.existsSync(usageFile) ? (JSON.parse(fs.readFileSync(usageFile, 'utf8')) as ExitUsage) : undefined;
    return { wallMs, usage };
  } finally {
    bench.remove(dataDir);
    bench.remove(outDir);
    fs.rmSync(usageFile, { force: true });
  }
}

/** Records after the header, counted by a CSV parser (cells may hold line breaks). */
async function dataRows(file: string): Promise<number> {
  let records = 0;
  await pipeline(
    fs.createReadStream(file, { encoding: 'utf8' }),
    Papa.parse(Papa.NODE_STREAM_INPUT),
    new Writable({
      objectMode: true,
      write(_row, _encoding, done) {
        records++;
        done();
      },
    }),
  );
  return Math.max(0, records - 1);
}

export function e2eFinding(e2e: E2e, ef: EngineFloor): string {
  const staged = ef.engineMs;
  return (
    `\`sluice run\` took ${fmt.s(e2e.wallMs)} from spawn to exit` +
    (staged === undefined
      ? '.'
      : ` against ${fmt.s(staged)} of worker time for the staged engine run: ${fmt.s(e2e.wallMs - staged)} (${fmt.pct((e2e.wallMs - staged) / e2e.wallMs)}) ` +
        'went to what the engine scenario leaves out: starting Node and the CLI, opening the database and the embedded S3 server, ' +
        'storing the input in the object store, and writing the result files to --out.') +
    (e2e.mid.usage ? ` Its peak RSS was ${fmt.mb(e2e.mid.usage.maxRssKiB * 1024)}.` : '')
  );
}
