/**
 * Sluice's benchmark: `npm run bench`, or
 *
 *   node dist/bench/run-bench.js [--rows N] [--runs K] [--scenarios engine,floor,...] [--out bench/RESULTS.md]
 *                                [--env SLUICE_X=V ...] [--node-arg=--flag ...] [--keep]
 *
 * Scenarios: engine, floor, e2e, narrow, repeat, memory, resume, upload, remote, profile, postgres, scale-out, monitor
 * (all by default; e2e times `sluice run` through the CLI, input not staged; narrow runs the engine and
 * the floor on a one-column file of addresses; postgres runs the engine and repeat scenarios again on
 * a PostgreSQL server the bench starts; scale-out runs one remote-bound job on 1, 2, 4 and 8 worker processes sharing one PostgreSQL and S3;
 * monitor runs an email monitor of the input's distinct valid addresses twice, as `sluice worker` does, beside the engine job).
 * Every engine job runs in a child process of its own (dist/bench/engine-run.js) on a fresh temp
 * data dir with the embedded S3 server, so that its RSS and CPU are its own. Inputs come from
 * generateGenderCsv (seed 42, 10% duplicates, 3% invalid; the remote scenario's: all distinct and
 * valid) in a temp dir that is removed at the end, with every child, also on failure or Ctrl-C.
 * Each scenario lives in bench/scenario-*.ts. The table goes to --out; the process exits non-zero
 * only when a scenario could not be measured (missed targets are results, not failures).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { killAll, REPO_ROOT } from './children.js';
import { renderReport } from './report.js';
import { Bench, firstLine, rowsText, SCENARIOS, type BenchContext, type Options, type Scenario } from './scenario-context.js';
import { e2eFinding, e2eScenario } from './scenario-e2e.js';
import { engineAndFloor, engineFindings, runsSection } from './scenario-engine.js';
import { memoryFinding, memoryScenario } from './scenario-memory.js';
import { monitorScenario } from './scenario-monitor.js';
import { narrowFinding, narrowScenario } from './scenario-narrow.js';
import { postgresFinding, postgresScenario } from './scenario-postgres.js';
import { profileFinding, profileScenario } from './scenario-profile.js';
import { remoteFindings, remoteScenario } from './scenario-remote.js';
import { repeatFinding, repeatScenario } from './scenario-repeat.js';
import { resumeScenario } from './scenario-resume.js';
import { scaleOutFinding, scaleOutScenario } from './scenario-scale-out.js';
import { uploadFinding, uploadScenario } from './scenario-upload.js';

const USAGE = `usage: node dist/bench/run-bench.js [options]
  --rows N           rows of the generated input (default 1000000; remote uses at most 100000, scale-out 24000)
  --profile-rows N   rows of the profiled run (default 100000, at most --rows)
  --runs K           runs of the short scenarios (default: 3 for floor and e2e, 1 for the engine ones)
  --scenarios LIST   comma-separated, of ${SCENARIOS.join(', ')}
  --out FILE         where the report goes (default bench/RESULTS.md)
  --env SLUICE_X=V   a setting for the engine children (repeatable)
  --node-arg=ARG     a Node flag for the engine children (repeatable)
  --keep             keep the temp dir with inputs, data dirs and profiles
`;

function parseOptions(argv: string[]): Options {
  const { values } = parseArgs({
    args: argv,
    options: {
      rows: { type: 'string', default: '1000000' },
      'profile-rows': { type: 'string', default: '100000' },
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
  const profileRows = Number(values['profile-rows']);
  if (!Number.isInteger(profileRows) || profileRows < 100) throw new Error(`--profile-rows must be a whole number of at least 100, got "${values['profile-rows']}"`);
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
    profileRows: Math.min(profileRows, rows),
    engineRuns: runs ?? 1,
    floorRuns: runs ?? 3,
    e2eRuns: runs ?? 3,
    uploadRuns: runs ?? 1,
    scenarios,
    out: path.resolve(values.out),
    env,
    nodeArgs,
    keep: values.keep,
    argv,
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

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  const { rows, scenarios } = options;
  const wants = (s: Scenario): boolean => scenarios.has(s);
  const started = new Date();
  const t0 = performance.now();
  const loadStart = os.loadavg();
  const commit = gitCommit(); // what is measured: read before the run, since others may commit meanwhile
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-'));
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

  const ctx: BenchContext = {
    bench: new Bench(tmp, options),
    options,
    tmp,
    log,
    table: [],
    sections: [],
    failures: 0,
    failed: (scenario, target, e) => {
      ctx.failures++;
      log(`${scenario} failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
      ctx.table.push({ scenario, figure: 'no figure', target, met: 'failed', detail: firstLine(e) });
    },
  };
  const findings: string[] = [];

  try {
    // The remote and scale-out scenarios make their own input (distinct addresses); the others share this one.
    if ([...scenarios].some((s) => s !== 'remote' && s !== 'scale-out')) {
      log(`temp dir ${tmp}; generating ${rowsText(rows)} rows`);
      await ctx.bench.input(rows);
    } else log(`temp dir ${tmp}`);

    const ef = await engineAndFloor(ctx);
    const repeat = wants('repeat') ? await repeatScenario(ctx, ef) : undefined;
    if (ef.lastEngineDir) ctx.bench.remove(ef.lastEngineDir);
    const e2e = wants('e2e') ? await e2eScenario(ctx, ef) : undefined;
    const narrow = wants('narrow') ? await narrowScenario(ctx) : undefined;
    const memory = wants('memory') ? await memoryScenario(ctx, ef) : undefined;
    if (wants('resume')) await resumeScenario(ctx, ef);
    const uploads = wants('upload') ? await uploadScenario(ctx) : [];
    if (wants('monitor')) await monitorScenario(ctx, ef);
    const remote = wants('remote') ? await remoteScenario(ctx) : undefined;
    const profiled = wants('profile') ? await profileScenario(ctx) : undefined;
    const postgres = wants('postgres') ? await postgresScenario(ctx, ef, ef.floorMs, repeat?.second) : undefined;
    const scaleOut = wants('scale-out') ? await scaleOutScenario(ctx) : undefined;

    const runs = runsSection(rows, ef, repeat?.second);
    if (runs) ctx.sections.push(runs);
    findings.push(...engineFindings(ef));
    if (e2e) findings.push(e2eFinding(e2e, ef));
    if (narrow) findings.push(narrowFinding(narrow, ef.engineMs, ef.floorMs));
    if (repeat) findings.push(repeatFinding(repeat));
    if (memory) findings.push(memoryFinding(memory, rows));
    if (profiled) findings.push(profileFinding(profiled));
    if (uploads.length > 0) findings.push(uploadFinding(uploads));
    if (remote) findings.push(...remoteFindings(remote));
    if (postgres) findings.push(postgresFinding(postgres, ef.engineMid));
    if (scaleOut) findings.push(scaleOutFinding(scaleOut));
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
    table: ctx.table,
    sections: ctx.sections,
    findings,
  });
  fs.mkdirSync(path.dirname(options.out), { recursive: true });
  fs.writeFileSync(options.out, text);
  log(`wrote ${options.out} in ${(durationMs / 60_000).toFixed(1)} min${ctx.failures > 0 ? `; ${ctx.failures} scenario(s) failed` : ''}`);
  process.stdout.write(text);
  return ctx.failures > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`run-bench: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    void killAll().finally(() => process.exit(2));
  },
);
