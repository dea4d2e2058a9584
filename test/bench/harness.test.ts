import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

/**
 * A smoke test of the benchmark harness (dist/bench/run-bench.js, built by `npm test`): a small run
 * must produce a results file with one row per scenario, each with a figure. Nothing here checks
 * speed: the targets live in the benchmark, and a slow machine must not fail the tests.
 */
const REPO_ROOT = path.resolve(import.meta.dirname, '../..');
const RUN_BENCH = path.join(REPO_ROOT, 'dist/bench/run-bench.js');
const MEASURED = ['engine', 'floor', 'e2e', 'narrow', 'repeat', 'resume', 'upload', 'remote', 'monitor'];

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function runBench(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  // The developer's own SLUICE_* settings must not change what the smoke run does.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('SLUICE_')));
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [RUN_BENCH, ...args],
      { cwd: REPO_ROOT, env, timeout: 170_000, killSignal: 'SIGTERM', maxBuffer: 16 * 1024 * 1024, encoding: 'utf8' },
      (_error, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr }),
    );
  });
}

/** The results table as rows of cells (a `|` inside a cell is written `\|`). */
function tableRows(markdown: string): Map<string, { figure: string; target: string; met: string; detail: string }> {
  const rows = new Map<string, { figure: string; target: string; met: string; detail: string }>();
  for (const line of markdown.split('\n')) {
    if (!line.startsWith('| ') || line.startsWith('| scenario ')) continue;
    const cells = line
      .slice(1, -1)
      .split(/(?<!\\)\|/)
      .map((c) => c.trim());
    if (cells.length !== 5) continue;
    const [scenario, figure, target, met, detail] = cells as [string, string, string, string, string];
    if (!rows.has(scenario)) rows.set(scenario, { figure, target, met, detail });
  }
  return rows;
}

describe('the benchmark harness', () => {
  it('runs engine, floor, e2e, narrow, repeat, resume, upload, remote and monitor at 10,000 rows and writes a row with figures for each', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-smoke-'));
    dirs.push(dir);
    const out = path.join(dir, 'RESULTS.md');
    // A short lease, so that the resumed worker does not wait 30 s for the killed one's chunk.
    const result = await runBench([
      '--rows', '10000',
      '--runs', '1',
      '--scenarios', MEASURED.join(','),
      '--out', out,
      '--env', 'SLUICE_LEASE_SECONDS=2',
    ]);
    expect(result.code, result.stderr.slice(-3000)).toBe(0);

    const text = fs.readFileSync(out, 'utf8');
    expect(text).toMatch(/^- Machine: .+, \d+ cores, [\d.]+ GiB memory/m);
    expect(text).toContain(`Node ${process.version}`);
    expect(text).toMatch(/^- Date: \d{4}-\d{2}-\d{2}T/m);
    expect(text).toContain('node dist/bench/run-bench.js --rows 10000');

    const rows = tableRows(text);
    for (const scenario of MEASURED) {
      const row = rows.get(scenario);
      expect(row, `no row for ${scenario} in:\n${text}`).toBeDefined();
      expect(row!.met, `${scenario}: ${row!.detail}`).not.toBe('failed');
      expect(row!.figure, scenario).toMatch(/\d/);
      expect(row!.detail, scenario).toMatch(/\d/);
      expect(['met', 'met (and the aim)', 'NOT met', 'n/a']).toContain(row!.met);
    }
    expect(rows.get('engine')!.figure).toMatch(/^engine\/floor \d+\.\d+×$/);
    expect(rows.get('e2e')!.figure).toMatch(/^sluice run\/floor \d+\.\d+×$/);
    expect(rows.get('e2e')!.target).toBe('sluice run/floor ≤ 3.0 (aim 2.0)');
    expect(rows.get('e2e')!.detail).toContain('all.csv holds every row');
    expect(rows.get('narrow')!.figure).toMatch(/^engine\/floor \d+\.\d+×$/);
    expect(rows.get('narrow')!.detail).toMatch(/one column \(`email`\), the engine scenario's 10,000 addresses/);
    expect(rows.get('resume')!.detail).toContain('byte-identical');

    expect(rows.get('remote')!.figure).toMatch(/^\d+\.\d% efficiency \([\d,]+ rows\/s\)$/);
    expect(rows.get('remote')!.detail).toContain('max 64 in flight');
    expect(rows.get('monitor')!.figure).toMatch(/^[\d,]+ targets\/s, peak RSS \d+ MB$/);
    expect(rows.get('monitor')!.detail).toMatch(/email monitor of the [\d,]+ distinct valid addresses of the 10,000-row input/);
    expect(rows.get('monitor')!.detail).toMatch(/last_data: 0 changes/);
    expect(rows.get('monitor')!.detail).toMatch(/the bulk job \(engine scenario, same bench\): [\d,]+ rows\/s/);

    // Children and temp dirs are gone: nothing of the run is left in the temp dir.
    const leftovers = fs.readdirSync(os.tmpdir()).filter((name) => name.startsWith('sluice-bench-') && !name.startsWith('sluice-bench-smoke-'));
    const ours = leftovers.filter((name) => result.stderr.includes(path.join(os.tmpdir(), name)));
    expect(ours).toEqual([]);
  }, 180_000);

  it('runs scale-out on 1, 2, 4 and 8 worker processes at 200 rows and writes its row and table', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-smoke-'));
    dirs.push(dir);
    const out = path.join(dir, 'RESULTS.md');
    const result = await runBench(['--rows', '200', '--scenarios', 'scale-out', '--out', out]);
    expect(result.code, result.stderr.slice(-3000)).toBe(0);

    const text = fs.readFileSync(out, 'utf8');
    const row = tableRows(text).get('scale-out');
    expect(row, `no row for scale-out in:\n${text}`).toBeDefined();
    expect(['met', 'met (and the aim)', 'NOT met']).toContain(row!.met);
    expect(row!.figure).toMatch(/^\d+\.\d+× at 8 workers \([\d,]+ rows\/s\)$/);
    expect(row!.detail).toContain('every run completed with 200 rows processed');
    // One line per worker count, each with its own figures.
    for (const workers of [1, 2, 4, 8]) expect(text).toMatch(new RegExp(`^\\| ${workers} \\| 200 \\| [\\d.]+ s \\| [\\d,]+ \\| \\d+\\.\\d+× \\|`, 'm'));

    const leftovers = fs.readdirSync(os.tmpdir()).filter((name) => name.startsWith('sluice-bench-') && !name.startsWith('sluice-bench-smoke-'));
    expect(leftovers.filter((name) => result.stderr.includes(path.join(os.tmpdir(), name)))).toEqual([]);
  }, 120_000);
});
