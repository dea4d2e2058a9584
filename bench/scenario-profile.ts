/** The profile scenario: where the time goes, from `node --cpu-prof` on one engine child. */
import fs from 'node:fs';
import path from 'node:path';
import { summariseProfile, type ProfileSummary } from './cpu-profile.js';
import type { EngineResult } from './engine-run.js';
import { fmt, markdownTable } from './report.js';
import { firstLine, phaseText, rowsText, type BenchContext } from './scenario-context.js';

export interface Profiled {
  profile: ProfileSummary;
  run: EngineResult;
}

/** Adds its section to the report; a failed run counts as a failure and leaves a section that says so. */
export async function profileScenario(ctx: BenchContext): Promise<Profiled | undefined> {
  const { bench, log, tmp } = ctx;
  const profRows = ctx.options.profileRows;
  try {
    log(`profile: ${rowsText(profRows)}-row engine child under --cpu-prof`);
    const profDir = path.join(tmp, 'cpu-profile');
    fs.mkdirSync(profDir, { recursive: true });
    const { dir, result } = await bench.freshRun(profRows, 'profile', ['--cpu-prof', '--cpu-prof-dir', profDir, '--cpu-prof-name', 'engine.cpuprofile']);
    bench.remove(dir);
    const profile = summariseProfile(path.join(profDir, 'engine.cpuprofile'), { fromUs: result.startHrtimeUs, toUs: result.endHrtimeUs });
    ctx.sections.push(
      [
        `## Where the time goes: CPU profile of one ${rowsText(profRows)}-row engine child`,
        '',
        `\`node --cpu-prof\` on the engine child, ${profile.windowed ? 'samples cut to the worker run' : 'whole process (the samples could not be cut to the worker run)'}: ` +
          `${fmt.s(profile.totalMs)} sampled on the main thread in ${fmt.s(result.workerMs)} of worker time (${phaseText(result)}; profiling slows the run). ` +
          'Self time: time in the function itself, not in what it calls. V8 gives no frame of their own to C++ calls such as better-sqlite3\'s `run`, `get` and `all`, so ' +
          'SQLite\'s time is counted in the JavaScript function that made the call: `sqliteTransaction` (better-sqlite3\'s wrapper) is BEGIN and COMMIT, ' +
          'where the WAL writes and the periodic WAL checkpoints happen; `put`, `chargeBatch`, `freshlyBilled` and `getMany` hold their own statements. ' +
          'Other native functions (fs bindings, RegExp, V8 builtins) are named with their JavaScript caller. The embedded S3 server runs in the same process, so its work is in here too.',
        '',
        markdownTable(
          ['function (self time)', 'ms', 'share'],
          profile.top.map((e) => [`\`${e.name}\``, fmt.int(e.ms), fmt.pct(e.share)]),
        ),
        '',
        markdownTable(
          ['area', 'ms', 'share'],
          profile.byArea.map((e) => [e.name, fmt.int(e.ms), fmt.pct(e.share)]),
        ),
      ].join('\n'),
    );
    return { profile, run: result };
  } catch (e: unknown) {
    ctx.failures++;
    log(`profile failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    ctx.sections.push(`## Where the time goes\n\nThe profiled run failed: ${firstLine(e)}`);
    return undefined;
  }
}

export function profileFinding(p: Profiled): string {
  const top = p.profile.top.slice(0, 5).map((e) => `\`${e.name}\` ${fmt.pct(e.share)}`);
  const areas = p.profile.byArea.slice(0, 4).map((e) => `${e.name} ${fmt.pct(e.share)}`);
  return `CPU profile (${rowsText(p.run.rows)} rows): by area, ${areas.join('; ')}. Heaviest functions by self time: ${top.join('; ')}.`;
}
