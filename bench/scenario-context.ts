/**
 * What every scenario of run-bench shares: the options, the targets, the Bench (inputs, data dirs,
 * engine children) and the report being built. One file per scenario (scenario-*.ts) uses these.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import Papa from 'papaparse';
import { generateGenderCsv } from '../fixtures/generate-gender-csv.js';
import { childEnv, ENGINE_RUN, FLOOR_RUN, lastEvent, runNode } from './children.js';
import type { EngineResult, EngineStaged } from './engine-run.js';
import type { FloorResult } from './floor-run.js';
import { fmt, MiB, type Row } from './report.js';

export const SCENARIOS = ['engine', 'floor', 'e2e', 'narrow', 'repeat', 'memory', 'resume', 'upload', 'remote', 'profile', 'postgres', 'scale-out', 'monitor'] as const;
export type Scenario = (typeof SCENARIOS)[number];

export const TARGETS = {
  /** Issue 17's targets: the staged engine over the bare script. */
  engineFloor: 2.5,
  engineFloorAim: 1.6,
  /** `sluice run` through the CLI, input not staged, over the floor (issue 17). */
  e2eFloor: 3.0,
  e2eFloorAim: 2.0,
  /** A repeat of the same file for the same account over the bare script (issue 17). */
  repeatFloor: 1.5,
  repeatFloorAim: 1.2,
  /** The engine and the repeat on PostgreSQL over the same bare script (issue 17). */
  postgresFloor: 4.0,
  postgresFloorAim: 3.0,
  /** Issue 32 tightened the PostgreSQL repeat over the bare script. */
  postgresRepeatFloor: 2.0,
  postgresRepeatFloorAim: 1.5,
  remote: 0.9,
  rss1m: 250 * MiB,
  rssRatio: 1.5,
  resume: 0.15,
  uploadGrowth: 100 * MiB,
};

export interface Options {
  rows: number;
  /** Rows of the profiled run (at most `rows`). */
  profileRows: number;
  engineRuns: number;
  floorRuns: number;
  /** Runs of the end-to-end `sluice run` scenario. */
  e2eRuns: number;
  uploadRuns: number;
  scenarios: Set<Scenario>;
  out: string;
  env: Record<string, string>;
  /** Extra node flags for the engine children (e.g. --max-old-space-size=96). */
  nodeArgs: string[];
  keep: boolean;
  argv: string[];
}

/** The report under construction, and how a scenario logs and records its failure. */
export interface BenchContext {
  bench: Bench;
  options: Options;
  tmp: string;
  log: (text: string) => void;
  table: Row[];
  sections: string[];
  /** Scenarios that could not be measured; the process exits non-zero when there are any. */
  failures: number;
  /** Counts the failure and puts a `failed` row in the table. */
  failed: (scenario: string, target: string, e: unknown) => void;
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The run whose time is the (lower) median, for the details that come with it. */
export function medianRun<T>(runs: T[], time: (r: T) => number): T {
  const sorted = [...runs].sort((a, b) => time(a) - time(b));
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

export const rate = (rows: number, ms: number): number => rows / (ms / 1000);
export const rowsText = (n: number): string => n.toLocaleString('en-US');

export function phases(r: EngineResult): { split: number; process: number; assemble: number } {
  const p = r.phaseStartMs;
  const processAt = p.process ?? r.workerMs;
  const assembleAt = p.assemble ?? r.workerMs;
  const doneAt = p.done ?? r.workerMs;
  return { split: processAt - (p.split ?? 0), process: assembleAt - processAt, assemble: doneAt - assembleAt };
}

export function phaseText(r: EngineResult): string {
  const ph = phases(r);
  return `split ${fmt.s(ph.split)}, process ${fmt.s(ph.process)}, assemble ${fmt.s(ph.assemble)}`;
}

export const cpuMs = (r: { cpuUserMs: number; cpuSystemMs: number }): number => r.cpuUserMs + r.cpuSystemMs;
export const cores = (r: { cpuUserMs: number; cpuSystemMs: number }, wallMs: number): number => cpuMs(r) / wallMs;

export function firstLine(e: unknown): string {
  const text = e instanceof Error ? e.message : String(e);
  const line = text.split('\n').find((l) => l.trim() !== '') ?? text;
  return line.length > 200 ? `${line.slice(0, 200)}...` : line;
}

/**
 * `mixed`: generateGenderCsv's defaults (10% duplicates, 3% invalid), as a user's file would be.
 * `distinct`: every row a different valid address, so that every row is one lookup.
 * `narrow`: the `mixed` rows' email column alone, the one-column file of addresses users often send.
 */
export type InputKind = 'mixed' | 'distinct' | 'narrow';

export class Bench {
  private counter = 0;
  private readonly inputs = new Map<string, Promise<string>>();

  constructor(
    readonly tmp: string,
    readonly options: Options,
  ) {}

  /** The generated input of `rows` rows, made once and shared (inputs are only read). */
  input(rows: number, kind: InputKind = 'mixed'): Promise<string> {
    const name = kind === 'mixed' ? `gender-${rows}.csv` : `gender-${kind}-${rows}.csv`;
    let made = this.inputs.get(name);
    if (!made && kind === 'narrow') {
      const file = path.join(this.tmp, 'inputs', name);
      made = this.input(rows, 'mixed').then(async (wide) => {
        await pipeline(fs.createReadStream(wide, { encoding: 'utf8' }), Papa.parse(Papa.NODE_STREAM_INPUT, { skipEmptyLines: true }), emailColumn(), fs.createWriteStream(file));
        return file;
      });
      this.inputs.set(name, made);
    }
    if (!made) {
      const file = path.join(this.tmp, 'inputs', name);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      const shares = kind === 'mixed' ? { duplicateShare: 0.1, invalidShare: 0.03 } : { duplicateShare: 0, invalidShare: 0 };
      made = pipeline(generateGenderCsv({ rows, seed: 42, ...shares }), fs.createWriteStream(file)).then(() => file);
      this.inputs.set(name, made);
    }
    return made;
  }

  freshDir(label: string): string {
    return path.join(this.tmp, `${String(++this.counter).padStart(2, '0')}-${label}`);
  }

  remove(dir: string): void {
    if (!this.options.keep) fs.rmSync(dir, { recursive: true, force: true });
  }

  env(dataDir: string | undefined, overrides: Record<string, string> = {}): NodeJS.ProcessEnv {
    return childEnv(dataDir, { ...this.options.env, ...overrides });
  }

  /** `env` goes over the operator's --env settings for this child only, as for `run`. */
  async stage(dataDir: string, rows: number, kind: InputKind = 'mixed', env: Record<string, string> = {}): Promise<EngineStaged> {
    const input = await this.input(rows, kind);
    const out = await runNode(ENGINE_RUN, ['--data-dir', dataDir, '--input', input, '--stage-only', '--rows', String(rows)], this.env(dataDir, env));
    return lastEvent<EngineStaged>(out, 'staged');
  }

  /**
   * Runs a worker child on a staged job; rejects unless the job completed with `rows` rows.
   * `env` goes over the operator's --env settings for this child only.
   */
  async run(dataDir: string, jobId: string, rows: number, nodeArgs: string[] = [], env: Record<string, string> = {}): Promise<EngineResult> {
    const out = await runNode(ENGINE_RUN, ['--data-dir', dataDir, '--job-id', jobId, '--rows', String(rows)], this.env(dataDir, env), {
      nodeArgs: [...this.options.nodeArgs, ...nodeArgs],
    });
    return lastEvent<EngineResult>(out, 'result');
  }

  /** A job in a fresh data dir: staged by one child, run by another. */
  async freshRun(rows: number, label: string, nodeArgs: string[] = [], env: Record<string, string> = {}): Promise<{ dir: string; result: EngineResult }> {
    const dir = this.freshDir(label);
    const staged = await this.stage(dir, rows, 'mixed', env);
    const result = await this.run(dir, staged.jobId, rows, nodeArgs, env);
    return { dir, result };
  }

  /** The floor script over the input of `kind` (the same file as the engine run it is compared with). */
  async floor(kind: InputKind = 'mixed'): Promise<FloorResult> {
    const input = await this.input(this.options.rows, kind);
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
}

/**
 * The `email` cell of each parsed record, one a line. A blank cell is written quoted (`""`, `"  "`):
 * unquoted, it would be a blank line, which Sluice skips, and the narrow file would hold fewer rows
 * than the wide one it comes from.
 */
function emailColumn(): Transform {
  let index: number | undefined;
  return new Transform({
    writableObjectMode: true,
    transform(cells: string[], _encoding, done) {
      if (index === undefined) {
        index = cells.indexOf('email');
        if (index < 0) return done(new Error('the generated input has no email column'));
        return done(null, 'email\n');
      }
      const value = cells[index] ?? '';
      done(null, `${/[",\r\n]/.test(value) || value.trim() === '' ? `"${value.replace(/"/g, '""')}"` : value}\n`);
    },
  });
}
