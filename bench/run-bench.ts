/**
 * Sluice's benchmark: `npm run bench`, or
 *
 *   node dist/bench/run-bench.js [--rows N] [--runs K] [--scenarios engine,floor,...] [--out bench/RESULTS.md]
 *                                [--env SLUICE_X=V ...] [--node-arg=--flag ...] [--keep]
 *
 * Scenarios: engine, floor, repeat, memory, resume, upload, remote, profile (all by default).
 * Every engine job runs in a child process of its own (dist/bench/engine-run.js) on a fresh temp
 * data dir with the embedded S3 server, so that its RSS and CPU are its own. Inputs come from
 * generateGenderCsv (seed 42, 10% duplicates, 3% invalid) in a temp dir that is removed at the end,
 * with every child, also on failure or Ctrl-C. The table goes to --out; the process exits non-zero
 * only when a scenario could not be measured (missed targets are results, not failures).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { generateGenderCsv } from '../fixtures/generate-gender-csv.js';
import { childEnv, cpuMsOf, ENGINE_RUN, FLOOR_RUN, killAll, lastEvent, REPO_ROOT, runNode, startNode } from './children.js';
import { summariseProfile, type ProfileSummary } from './cpu-profile.js';
import type { EngineResult, EngineStaged, EngineStart } from './engine-run.js';
import type { FloorResult } from './floor-run.js';
import { fmt, markdownTable, MiB, renderReport, verdict, type Row } from './report.js';
import { measureUpload, type UploadResult } from './upload.js';

const SCENARIOS = ['engine', 'floor', 'repeat', 'memory', 'resume', 'upload', 'remote', 'profile'] as const;
type Scenario = (typeof SCENARIOS)[number];

const USAGE = `usage: node dist/bench/run-bench.js [options]
  --rows N           rows of the generated input (default 1000000)
  --runs K           runs of the short scenarios (default: 3 for floor, 1 for the engine ones)
  --scenarios LIST   comma-separated, of ${SCENARIOS.join(', ')}
  --out FILE         where the report goes (default bench/RESULTS.md)
  --env SLUICE_X=V   a setting for the engine children (repeatable)
  --node-arg=ARG     a Node flag for the engine children (repeatable)
  --keep             keep the temp dir with inputs, data dirs and profiles
`;

const TARGETS = {
  engineFloor: 3.0,
  engineFloorAim: 2.0,
  repeat: 2.0,
  remote: 0.9,
  rss1m: 300 * MiB,
  rssRatio: 1.5,
  resume: 0.15,
  uploadGrowth: 100 * MiB,
};

interface Options {
  rows: number;
  engineRuns: number;
  floorRuns: number;
  uploadRuns: number;
  scenarios: Set<Scenario>;
  out: string;
  env: Record<string, string>;
  /** Extra node flags for the engine children (e.g. --max-old-space-size=96). */
  nodeArgs: string[];
  keep: boolean;
  argv: string[];
}

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      rows: { type: 'string', default: '1000000' },
      runs: { type: 'string' },
      scenarios: { type: 'string', default: SCENARIOS.join(',') },
      out: { type: 'string', default: path.join(REPO_ROOT, 'bench/RESULTS.md') },
      env: { type: 'string', multiple: true, default: [] },
      'node-arg': { type: 'string', multiple: true, default: [] },
      keep: { type: 'boolean', default: false },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE);
    process.exit(0);
  }
  const rows = Number(values.rows);
  if (!Number.isInteger(rows) || rows < 100 || rows > 100_000_000) throw new Error(`--rows must be a whole number from 100 to 100000000, got "${values.rows}"`);
  const runs = values.runs === undefined ? undefined : Number(values.runs);
  if (runs !== undefined && !(Number.isInteger(runs) && runs >= 1 && runs <= 50)) throw new Error(`--runs must be a whole number from 1 to 50, got "${values.runs}"`);
  const scenarios = new Set<Scenario>();
  for (const name of values.scenarios.split(',').map((s) => s.trim()).filter(Boolean)) {
    if (!(SCENARIOS as readonly string[]).includes(name)) throw new Error(`unknown scenario "${name}"; known: ${SCENARIOS.join(', ')}`);
    scenarios.add(name as Scenario);
  }
  const env: Record<string, string> = {};
  for (const pair of values.env) {
    const eq = pair.indexOf('=');
    if (eq <= 0 || !pair.startsWith('SLUICE_')) throw new Error(`--env takes SLUICE_NAME=value, got "${pair}"`);
    env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  if ('SLUICE_DATA_DIR' in env) throw new Error('the bench chooses its own data dirs; do not set SLUICE_DATA_DIR');
  // Sluice refuses files over SLUICE_MAX_ROWS (1,000,000 by default); a bigger bench raises it, and says so.
  if (rows > 1_000_000 && env.SLUICE_MAX_ROWS === undefined && process.env.SLUICE_MAX_ROWS === undefined) env.SLUICE_MAX_ROWS = String(rows);
  const nodeArgs = values['node-arg'];
  if (nodeArgs.some((a) => !a.startsWith('--'))) throw new Error(`--node-arg takes a node flag such as --node-arg=--max-old-space-size=96, got "${nodeArgs.join(' ')}"`);
  return {
    rows,
    engineRuns: runs ?? 1,
    floorRuns: runs ?? 3,
    uploadRuns: runs ?? 1,
    scenarios,
    out: path.resolve(values.out),
    env,
    nodeArgs,
    keep: values.keep,
    argv,
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The run whose time is the (lower) median, for the details that come with it. */
function medianRun<T>(runs: T[], time: (r: T) => number): T {
  const sorted = [...runs].sort((a, b) => time(a) - time(b));
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

const rate = (rows: number, ms: number): number => rows / (ms / 1000);
const rowsText = (n: number): string => n.toLocaleString('en-US');

function phases(r: EngineResult): { split: number; process: number; assemble: number } {
  const p = r.phaseStartMs;
  const processAt = p.process ?? r.workerMs;
  const assembleAt = p.assemble ?? r.workerMs;
  const doneAt = p.done ?? r.workerMs;
  return { split: processAt - (p.split ?? 0), process: assembleAt - processAt, assemble: doneAt - assembleAt };
}

function phaseText(r: EngineResult): string {
  const ph = phases(r);
  return `split ${fmt.s(ph.split)}, process ${fmt.s(ph.process)}, assemble ${fmt.s(ph.assemble)}`;
}

const cpuMs = (r: { cpuUserMs: number; cpuSystemMs: number }): number => r.cpuUserMs + r.cpuSystemMs;
const cores = (r: { cpuUserMs: number; cpuSystemMs: number }, wallMs: number): number => cpuMs(r) / wallMs;

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

function gitCommit(): string {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: REPO_ROOT, encoding: 'utf8' }).trim() !== '';
    return dirty ? `${head} (with uncommitted changes)` : head;
  } catch {
    return 'unknown';
  }
}

/** SLUICE_* settings in force for the children, secrets masked. */
function settingsInForce(env: Record<string, string>): string[] {
  const merged: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (name.startsWith('SLUICE_') && name !== 'SLUICE_DATA_DIR' && name !== 'SLUICE_LOG_LEVEL' && value !== undefined && value !== '') merged[name] = value;
  }
  Object.assign(merged, env);
  return Object.entries(merged)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => `${name}=${/SECRET|KEY_ID|PASSWORD/.test(name) ? '(set)' : value}`);
}

function firstLine(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  const line = text.split('\n').find((l) => l.trim() !== '') ?? text;
  return line.length > 200 ? `${line.slice(0, 200)}...` : line;
}

class Bench {
  private counter = 0;
  private readonly inputs = new Map<number, Promise<string>>();

  constructor(
    readonly tmp: string,
    readonly options: Options,
  ) {}

  /** The generated input of `rows` rows, made once and shared (inputs are only read). */
  input(rows: number): Promise<string> {
    let made = this.inputs.get(rows);
    if (!made) {
      const file = path.join(this.tmp, 'inputs', `gender-${rows}.csv`);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      made = pipeline(generateGenderCsv({ rows, seed: 42, duplicateShare: 0.1, invalidShare: 0.03 }), fs.createWriteStream(file)).then(() => file);
      this.inputs.set(rows, made);
    }
    return made;
  }

  freshDir(label: string): string {
    return path.join(this.tmp, `${String(++this.counter).padStart(2, '0')}-${label}`);
  }

  remove(dir: string): void {
    if (!this.options.keep) fs.rmSync(dir, { recursive: true, force: true });
  }

  env(dataDir: string | undefined): NodeJS.ProcessEnv {
    return childEnv(dataDir, this.options.env);
  }

  async stage(dataDir: string, rows: number): Promise<EngineStaged> {
    const input = await this.input(rows);
    const out = await runNode(ENGINE_RUN, ['--data-dir', dataDir, '--input', input, '--stage-only', '--rows', String(rows)], this.env(dataDir));
    return lastEvent<EngineStaged>(out, 'staged');
  }

  /** Runs a worker child on a staged job; rejects unless the job completed with `rows` rows. */
  async run(dataDir: string, jobId: string, rows: number, nodeArgs: string[] = []): Promise<EngineResult> {
    const out = await runNode(ENGINE_RUN, ['--data-dir', dataDir, '--job-id', jobId, '--rows', String(rows)], this.env(dataDir), {
      nodeArgs: [...this.options.nodeArgs, ...nodeArgs],
    });
    return lastEvent<EngineResult>(out, 'result');
  }

  /** A job in a fresh data dir: staged by one child, run by another. */
  async freshRun(rows: number, label: string, nodeArgs: string[] = []): Promise<{ dir: string; result: EngineResult }> {
    const dir = this.freshDir(label);
    const staged = await this.stage(dir, rows);
    const result = await this.run(dir, staged.jobId, rows, nodeArgs);
    return { dir, result };
  }

  async floor(): Promise<FloorResult> {
    const input = await this.input(this.options.rows);
    const out = path.join(this.tmp, 'floor-out.csv');
    try {
      const text = await runNode(FLOOR_RUN, ['--input', input, '--out', out], this.env(undefined));
      const result = lastEvent<FloorResult>(text, 'result');
      if (result.rows !== this.options.rows) throw new Error(`floor read ${result.rows} rows, expected ${this.options.rows}`);
      return result;
    } finally {
      fs.rmSync(out, { force: true });
    }
  }

  /**
   * The resume scenario: a worker child is killed (SIGKILL) once the job's processed_rows (read
   * from the SQLite file, read-only) reaches half the rows, and a new worker child finishes it.
   */
  async resume(rows: number): Promise<{ firstMs: number; firstCpuMs: number | undefined; processedAtKill: number; second: EngineResult }> {
    const dir = this.freshDir('resume');
    const staged = await this.stage(dir, rows);
    let startedAt: number | undefined;
    let startCpuMs = 0;
    let firstCpuMs: number | undefined;
    const first = startNode(ENGINE_RUN, ['--data-dir', dir, '--job-id', staged.jobId, '--rows', String(rows)], this.env(dir), {
      nodeArgs: this.options.nodeArgs,
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
    const second = await this.run(dir, staged.jobId, rows);
    this.remove(dir);
    return { firstMs: killedAt - startedAt, firstCpuMs, processedAtKill, second };
  }
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  const { rows, scenarios } = options;
  const wants = (s: Scenario): boolean => scenarios.has(s);
  const started = new Date();
  const t0 = performance.now();
  const loadStart = os.loadavg();
  const commit = gitCommit(); // what is measured: read before the run, since others may commit meanwhile
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-'));
  const bench = new Bench(tmp, options);
  const log = (text: string): void => {
    process.stderr.write(`[bench ${((performance.now() - t0) / 1000).toFixed(0).padStart(4)} s] ${text}\n`);
  };

  const cleanup = async (): Promise<void> => {
    await killAll();
    if (options.keep) log(`kept ${tmp}`);
    else fs.rmSync(tmp, { recursive: true, force: true });
  };
  const onSignal = (signal: NodeJS.Signals): void => {
    log(`${signal}: stopping children and removing ${tmp}`);
    void cleanup().finally(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  const table: Row[] = [];
  const sections: string[] = [];
  const findings: string[] = [];
  let failures = 0;
  const failed = (scenario: string, target: string, e: unknown): void => {
    failures++;
    log(`${scenario} failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    table.push({ scenario, figure: 'no figure', target, met: 'failed', detail: firstLine(e) });
  };

  try {
    log(`temp dir ${tmp}; generating ${rowsText(rows)} rows`);
    await bench.input(rows);

    // ---- engine and floor, alternated (F E F E ...) so that drift in the machine hits both ----
    const engineRuns: EngineResult[] = [];
    const floorRuns: FloorResult[] = [];
    let engineError: unknown;
    let floorError: unknown;
    let lastEngineDir: string | undefined;
    const nEngine = wants('engine') ? options.engineRuns : 0;
    const nFloor = wants('floor') ? options.floorRuns : 0;
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
    if (wants('engine')) {
      if (engineError !== undefined || !engineMid || engineMs === undefined) failed('engine', engineTarget, engineError ?? 'no run');
      else {
        const ratio = floorMs === undefined ? undefined : engineMs / floorMs;
        table.push({
          scenario: 'engine',
          figure: ratio === undefined ? `${fmt.int(rate(rows, engineMs))} rows/s (no floor run to compare)` : `engine/floor ${fmt.x(ratio)}`,
          target: engineTarget,
          met: ratio === undefined ? 'n/a' : ratio <= TARGETS.engineFloorAim ? 'met (and the aim)' : verdict(ratio <= TARGETS.engineFloor),
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
    if (wants('floor')) {
      if (floorError !== undefined || floorMs === undefined) failed('floor', 'reference for engine/floor', floorError ?? 'no run');
      else {
        table.push({
          scenario: 'floor',
          figure: `${fmt.s(floorMs)}, ${fmt.int(rate(rows, floorMs))} rows/s`,
          target: 'reference for engine/floor',
          met: 'n/a',
          detail: `${floorRuns.length === 1 ? '1 run' : `median of ${floorRuns.length} runs (${floorRuns.map((f) => fmt.s(f.wallMs)).join(', ')})`}; papaparse stream of the same file, per-row result, CSV to local disk; peak RSS ${fmt.mb(median(floorRuns.map((f) => f.maxRssKiB)) * 1024)}`,
        });
      }
    }

    // ---- repeat: the same file again for the same account, in the first run's data dir ----
    let repeatResult: { first: EngineResult; second: EngineResult } | undefined;
    if (wants('repeat')) {
      const target = '≥ 2× the first run\'s rows/s';
      try {
        let dir = lastEngineDir;
        let first = engineRuns.at(-1);
        if (!dir || !first) {
          log(`repeat: first run (${rowsText(rows)} rows)`);
          const fresh = await bench.freshRun(rows, 'repeat');
          dir = fresh.dir;
          first = fresh.result;
        }
        lastEngineDir = undefined;
        log('repeat: second run, same account, same file');
        const staged = await bench.stage(dir, rows);
        const second = await bench.run(dir, staged.jobId, rows);
        bench.remove(dir);
        repeatResult = { first, second };
        const speedup = first.workerMs / second.workerMs;
        log(`  repeat ${fmt.s(second.workerMs)} (${fmt.x(speedup)})`);
        table.push({
          scenario: 'repeat',
          figure: `${fmt.x(speedup)} the first run's rows/s`,
          target,
          met: verdict(speedup >= TARGETS.repeat),
          detail:
            `${fmt.int(rate(rows, second.workerMs))} rows/s (${fmt.s(second.workerMs)}) against ${fmt.int(rate(rows, first.workerMs))} rows/s (${fmt.s(first.workerMs)}); ` +
            `${fmt.int(second.counters.creditsUsed)} credits charged on the repeat (first run: ${fmt.int(first.counters.creditsUsed)}); ${phaseText(second)}`,
        });
      } catch (e: unknown) {
        failed('repeat', target, e);
      }
    }
    if (lastEngineDir) bench.remove(lastEngineDir);

    // ---- memory: peak RSS at rows/10 and at rows ----
    let memory: { small: EngineResult; smallRows: number; bigRss: number; bigSource: string } | undefined;
    if (wants('memory')) {
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
        memory = { small: small.result, smallRows, bigRss, bigSource };
        table.push({
          scenario: 'memory',
          figure: `peak RSS ${fmt.mb(bigRss)} at ${rowsText(rows)} rows`,
          target: `≤ ${fmt.mb(TARGETS.rss1m)}`,
          met: verdict(bigRss <= TARGETS.rss1m),
          detail: `engine child's process.resourceUsage().maxRSS, from ${bigSource}${engineMid ? `; ${memoryText(engineMid)}` : ''}`,
        });
        table.push({
          scenario: 'memory growth',
          figure: `${fmt.x(bigRss / smallRss)} (${fmt.mb(bigRss)} / ${fmt.mb(smallRss)})`,
          target: `≤ ${TARGETS.rssRatio.toFixed(1)}× the ${rowsText(smallRows)}-row figure`,
          met: verdict(bigRss / smallRss <= TARGETS.rssRatio),
          detail: `${rowsText(smallRows)} rows: peak RSS ${fmt.mb(smallRss)}, ${fmt.s(small.result.workerMs)}, ${fmt.int(rate(smallRows, small.result.workerMs))} rows/s; ${memoryText(small.result)}`,
        });
      } catch (e: unknown) {
        failed('memory', `≤ ${fmt.mb(TARGETS.rss1m)}, and ≤ ${TARGETS.rssRatio}× the ${rowsText(smallRows)}-row figure`, e);
      }
    }

    // ---- resume: killed at half way, finished by a new worker ----
    if (wants('resume')) {
      const target = `≤ ${fmt.pct(TARGETS.resume).replace('.0', '')} more worker time`;
      try {
        let baseline: EngineResult;
        let baselineSource: string;
        if (engineMid) {
          baseline = engineMid;
          baselineSource = 'the engine run';
        } else {
          log(`resume: uninterrupted run (${rowsText(rows)} rows)`);
          const fresh = await bench.freshRun(rows, 'resume-baseline');
          bench.remove(fresh.dir);
          baseline = fresh.result;
          baselineSource = 'its own uninterrupted run';
        }
        log('resume: worker killed at half way, then a new worker');
        const r = await bench.resume(rows);
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
        table.push({
          scenario: 'resume',
          figure: `${overhead >= 0 ? '+' : ''}${fmt.pct(overhead)} worker time`,
          target,
          met: verdict(overhead <= TARGETS.resume),
          detail:
            `killed (SIGKILL) after ${fmt.s(r.firstMs)} with ${rowsText(r.processedAtKill)} of ${rowsText(rows)} rows committed, ` +
            `new worker ${fmt.s(r.second.workerMs)} (${phaseText(r.second)}; its loops idled ${fmt.s(r.second.idleLoopMs)}: ` +
            `the chunks the killed worker held come free only when their leases run out, ${r.second.settings.leaseSeconds} s after its last renewal); ` +
            `total ${fmt.s(total)} against ${fmt.s(baseline.workerMs)} for ${baselineSource}${cpuCompare}; ${same}`,
        });
      } catch (e: unknown) {
        failed('resume', target, e);
      }
    }

    // ---- upload: the file through POST /api/jobs/bulk to `sluice serve --no-worker` ----
    let uploads: UploadResult[] = [];
    if (wants('upload')) {
      const target = `server RSS growth < ${fmt.mb(TARGETS.uploadGrowth)}`;
      try {
        for (let i = 0; i < options.uploadRuns; i++) {
          log(`upload run ${i + 1}/${options.uploadRuns}`);
          const dir = bench.freshDir('upload');
          const u = await measureUpload(dir, await bench.input(rows), rows, options.env);
          bench.remove(dir);
          uploads.push(u);
          log(`  upload ${fmt.s(u.seconds * 1000)}, ${u.mbPerSecond.toFixed(1)} MB/s, RSS +${fmt.mb(u.rssGrowth)}`);
        }
        const mid = medianRun(uploads, (u) => u.seconds);
        const growth = Math.max(...uploads.map((u) => u.rssGrowth));
        table.push({
          scenario: 'upload',
          figure: `server RSS +${fmt.mb(growth)}; ${median(uploads.map((u) => u.mbPerSecond)).toFixed(1)} MB/s`,
          target,
          met: verdict(growth < TARGETS.uploadGrowth),
          detail:
            `${fmt.mb(mid.bytes)} (${rowsText(rows)} rows) streamed as multipart over loopback in ${fmt.s(mid.seconds * 1000)}` +
            `${uploads.length > 1 ? ` (median of ${uploads.length}; growth is the highest)` : ''}; ` +
            `VmRSS ${fmt.mb(mid.rssBefore)} before, ${fmt.mb(mid.rssPeak)} at peak (${mid.samples} samples every 100 ms, after one 64 KiB warm-up upload)`,
        });
      } catch (e: unknown) {
        failed('upload', target, e);
        uploads = [];
      }
    }

    // ---- remote: nothing to run against yet ----
    table.push({
      scenario: 'remote',
      figure: 'not measurable yet',
      target: `≥ ${fmt.pct(TARGETS.remote).replace('.0', '')} efficiency (provider simulator at 20 ms latency, 64 in flight)`,
      met: 'n/a',
      detail: 'remote providers arrive with a later issue; until then there is no remote provider to measure, so there is no number',
    });

    // ---- profile: where the time goes ----
    let profile: ProfileSummary | undefined;
    let profileRun: EngineResult | undefined;
    if (wants('profile')) {
      const profRows = Math.min(100_000, rows);
      try {
        log(`profile: ${rowsText(profRows)}-row engine child under --cpu-prof`);
        const profDir = path.join(tmp, 'cpu-profile');
        fs.mkdirSync(profDir, { recursive: true });
        const { dir, result } = await bench.freshRun(profRows, 'profile', ['--cpu-prof', '--cpu-prof-dir', profDir, '--cpu-prof-name', 'engine.cpuprofile']);
        bench.remove(dir);
        profileRun = result;
        profile = summariseProfile(path.join(profDir, 'engine.cpuprofile'), { fromUs: result.startHrtimeUs, toUs: result.endHrtimeUs });
        sections.push(
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
      } catch (e: unknown) {
        failures++;
        log(`profile failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
        sections.push(`## Where the time goes\n\nThe profiled run failed: ${firstLine(e)}`);
      }
    }

    // ---- details and findings ----
    if (engineRuns.length > 0 || floorRuns.length > 0) {
      const lines: string[][] = [];
      for (const [i, r] of engineRuns.entries()) {
        lines.push([
          `engine ${i + 1}`,
          fmt.s(r.workerMs),
          fmt.int(rate(rows, r.workerMs)),
          fmt.mb(r.maxRssKiB * 1024),
          phaseText(r),
          `${((r.cpuUserMs + r.cpuSystemMs) / 1000).toFixed(1)} s (${cores(r, r.workerMs).toFixed(2)} cores)`,
        ]);
      }
      for (const [i, f] of floorRuns.entries()) {
        lines.push([`floor ${i + 1}`, fmt.s(f.wallMs), fmt.int(rate(rows, f.wallMs)), fmt.mb(f.maxRssKiB * 1024), '', `${((f.cpuUserMs + f.cpuSystemMs) / 1000).toFixed(1)} s (${cores(f, f.wallMs).toFixed(2)} cores)`]);
      }
      if (repeatResult) {
        const r = repeatResult.second;
        lines.push(['repeat', fmt.s(r.workerMs), fmt.int(rate(rows, r.workerMs)), fmt.mb(r.maxRssKiB * 1024), phaseText(r), `${((r.cpuUserMs + r.cpuSystemMs) / 1000).toFixed(1)} s (${cores(r, r.workerMs).toFixed(2)} cores)`]);
      }
      sections.push(
        [
          `## Runs at ${rowsText(rows)} rows`,
          '',
          `In run order: floor and engine alternate. Engine time is \`Worker.run\` only (the input was staged by another process beforehand); phases are polled every 20 ms. CPU is user + system time of the whole child, which also hosts the embedded S3 server.`,
          '',
          markdownTable(['run', 'wall', 'rows/s', 'peak RSS', 'phases', 'CPU'], lines),
        ].join('\n'),
      );
    }

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
    if (repeatResult) {
      const a = phases(repeatResult.first);
      const b = phases(repeatResult.second);
      findings.push(
        `The repeat took ${fmt.s(repeatResult.second.workerMs)} against ${fmt.s(repeatResult.first.workerMs)}: split ${fmt.s(a.split)} → ${fmt.s(b.split)}, process ${fmt.s(a.process)} → ${fmt.s(b.process)}, assemble ${fmt.s(a.assemble)} → ${fmt.s(b.assemble)}. ` +
          'A repeat skips the lookups, the charges and the result-cache writes, but every row is still parsed, chunked, checked against the billing cache, rendered and written.',
      );
    }
    if (memory) {
      findings.push(
        `Peak RSS was ${fmt.mb(memory.small.maxRssKiB * 1024)} at ${rowsText(memory.smallRows)} rows and ${fmt.mb(memory.bigRss)} at ${rowsText(rows)}: the growth with file size is ${fmt.mb(memory.bigRss - memory.small.maxRssKiB * 1024)} for ${rowsText(rows - memory.smallRows)} more rows.`,
      );
    }
    if (profile && profileRun) {
      const top = profile.top.slice(0, 5).map((e) => `\`${e.name}\` ${fmt.pct(e.share)}`);
      const areas = profile.byArea.slice(0, 4).map((e) => `${e.name} ${fmt.pct(e.share)}`);
      findings.push(`CPU profile (${rowsText(profileRun.rows)} rows): by area, ${areas.join('; ')}. Heaviest functions by self time: ${top.join('; ')}.`);
    }
    if (uploads.length > 0) {
      const u = medianRun(uploads, (x) => x.seconds);
      findings.push(
        `The upload streamed ${fmt.mb(u.bytes)} at ${u.mbPerSecond.toFixed(1)} MB/s while the server grew by ${fmt.mb(u.rssGrowth)}` +
          (u.rssGrowth < TARGETS.uploadGrowth ? `, well under the file's size: the upload is streamed, not buffered.` : `: more than the ${fmt.mb(TARGETS.uploadGrowth)} target.`),
      );
    }
    findings.push('Remote lookups cannot be measured until the remote providers exist (a later issue).');
  } finally {
    await cleanup();
  }

  const durationMs = performance.now() - t0;
  const extraArgs = options.argv.filter((a) => a !== '--keep');
  // SLUICE_* settings exported in the shell are part of the command; --env ones are in its arguments.
  const envPrefix = settingsInForce({}).map((s) => `${s} `).join('');
  const args = extraArgs.map((a) => (/[\s"'$]/.test(a) ? `'${a}'` : a)).join(' ');
  const command =
    extraArgs.length === 0 && envPrefix === ''
      ? 'npm run bench   # = npm run build && node dist/bench/run-bench.js'
      : `npm run build && ${envPrefix}node dist/bench/run-bench.js${args === '' ? '' : ` ${args}`}`;
  const text = renderReport({
    title: `Sluice benchmark: ${rowsText(rows)}-row gender job`,
    started,
    durationMs,
    rows,
    commit,
    loadStart,
    loadEnd: os.loadavg(),
    settings: [...settingsInForce(options.env), ...options.nodeArgs.map((a) => `engine children run with node ${a}`)],
    command,
    table,
    sections,
    findings,
  });
  fs.mkdirSync(path.dirname(options.out), { recursive: true });
  fs.writeFileSync(options.out, text);
  log(`wrote ${options.out} in ${(durationMs / 60_000).toFixed(1)} min${failures > 0 ? `; ${failures} scenario(s) failed` : ''}`);
  process.stdout.write(text);
  return failures > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`run-bench: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    void killAll().finally(() => process.exit(2));
  },
);
