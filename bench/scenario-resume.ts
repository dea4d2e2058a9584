/** The resume scenario: a worker killed at half way, the job finished by a new worker. */
import path from 'node:path';
import Database from 'better-sqlite3';
import { cpuMsOf, ENGINE_RUN, startNode } from './children.js';
import type { EngineResult, EngineStart } from './engine-run.js';
import { fmt, verdict } from './report.js';
import { phaseText, rowsText, TARGETS, type Bench, type BenchContext } from './scenario-context.js';
import type { EngineFloor } from './scenario-engine.js';

interface Resumed {
  firstMs: number;
  firstCpuMs: number | undefined;
  processedAtKill: number;
  second: EngineResult;
}

/**
 * A worker child is killed (SIGKILL) once the job's processed_rows (read from the SQLite file,
 * read-only) reaches half the rows, and a new worker child finishes it.
 */
async function killedAtHalf(bench: Bench, rows: number): Promise<Resumed> {
  const dir = bench.freshDir('resume');
  const staged = await bench.stage(dir, rows);
  let startedAt: number | undefined;
  let startCpuMs = 0;
  let firstCpuMs: number | undefined;
  const first = startNode(ENGINE_RUN, ['--data-dir', dir, '--job-id', staged.jobId, '--rows', String(rows)], bench.env(dir), {
    nodeArgs: bench.options.nodeArgs,
    onJson: (v) => {
      if (v.event === 'start') {
        startedAt = performance.now();
        startCpuMs = (v as unknown as EngineStart).cpuUs / 1000;
      }
    },
  });
  const db = new Database(path.join(dir, 'sluice.db'), { readonly: true, fileMustExist: true });
  let killedAt: number | undefined;
  let processedAtKill = 0;
  try {
    const processed = db.prepare('SELECT processed_rows AS n FROM jobs WHERE id = ?');
    const read = (): number => {
      try {
        return (processed.get(staged.jobId) as { n: number } | undefined)?.n ?? 0;
      } catch {
        return 0; // busy for a moment: look again at the next poll
      }
    };
    while (first.child.exitCode === null && first.child.signalCode === null) {
      if (startedAt !== undefined && read() >= rows / 2) {
        const cpu = cpuMsOf(first.child.pid!);
        first.child.kill('SIGKILL');
        if (cpu !== undefined) firstCpuMs = cpu - startCpuMs;
        killedAt = performance.now();
        break;
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    await first.exited;
    processedAtKill = read();
  } finally {
    db.close();
  }
  if (killedAt === undefined || startedAt === undefined) {
    throw new Error(`the first worker exited before half way (code ${first.child.exitCode}):\n${first.stderr().slice(-2000)}`);
  }
  const second = await bench.run(dir, staged.jobId, rows);
  bench.remove(dir);
  return { firstMs: killedAt - startedAt, firstCpuMs, processedAtKill, second };
}

/** Compares with the engine scenario's median run when there is one, else with an uninterrupted run of its own. */
export async function resumeScenario(ctx: BenchContext, ef: EngineFloor): Promise<void> {
  const { bench, log } = ctx;
  const { rows } = ctx.options;
  const target = `≤ ${fmt.pct(TARGETS.resume).replace('.0', '')} more worker time`;
  try {
    let baseline: EngineResult;
    let baselineSource: string;
    if (ef.engineMid) {
      baseline = ef.engineMid;
      baselineSource = 'the engine run';
    } else {
      log(`resume: uninterrupted run (${rowsText(rows)} rows)`);
      const fresh = await bench.freshRun(rows, 'resume-baseline');
      bench.remove(fresh.dir);
      baseline = fresh.result;
      baselineSource = 'its own uninterrupted run';
    }
    log('resume: worker killed at half way, then a new worker');
    const r = await killedAtHalf(bench, rows);
    const total = r.firstMs + r.second.workerMs;
    const overhead = total / baseline.workerMs - 1;
    const cpuText = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
    const baselineCpu = baseline.cpuUserMs + baseline.cpuSystemMs;
    const secondCpu = r.second.cpuUserMs + r.second.cpuSystemMs;
    const cpuCompare =
      r.firstCpuMs === undefined
        ? ''
        : `; CPU time ${cpuText(r.firstCpuMs)} + ${cpuText(secondCpu)} = ${cpuText(r.firstCpuMs + secondCpu)} against ${cpuText(baselineCpu)} (${fmt.pct((r.firstCpuMs + secondCpu) / baselineCpu - 1)})`;
    log(`  resume ${fmt.s(r.firstMs)} + ${fmt.s(r.second.workerMs)} against ${fmt.s(baseline.workerMs)}`);
    const same =
      baseline.results && r.second.results
        ? baseline.results.allSha256 === r.second.results.allSha256 && baseline.results.foundSha256 === r.second.results.foundSha256
          ? 'result files byte-identical to the uninterrupted run\'s'
          : 'result files DIFFER from the uninterrupted run\'s'
        : 'results not compared';
    ctx.table.push({
      scenario: 'resume',
      figure: `${overhead >= 0 ? '+' : ''}${fmt.pct(overhead)} worker time`,
      target,
      met: verdict(overhead <= TARGETS.resume),
      detail:
        `killed (SIGKILL) after ${fmt.s(r.firstMs)} with ${rowsText(r.processedAtKill)} of ${rowsText(rows)} rows committed, ` +
        `new worker ${fmt.s(r.second.workerMs)} (${phaseText(r.second)}; its loops idled ${fmt.s(r.second.idleLoopMs)}: ` +
        `with 2 loops, one waits while the other assembles; the killed worker's leases are freed when the new worker starts, not ${r.second.settings.leaseSeconds} s after its last renewal); ` +
        `total ${fmt.s(total)} against ${fmt.s(baseline.workerMs)} for ${baselineSource}${cpuCompare}; ${same}`,
    });
  } catch (e: unknown) {
    ctx.failed('resume', target, e);
  }
}
