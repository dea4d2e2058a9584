import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, killChildren, removeScratchDirs, runCli, scratchDir, type CliResult } from '../support/cli-process.js';

afterEach(async () => {
  await killChildren();
});
afterAll(() => removeScratchDirs());

/** The demo's steps print the job summary twice; this picks the numbers out of one of them. */
function summaries(stdout: string): { status: string; found: number; credits: number }[] {
  const found = [...stdout.matchAll(/^status\s+(\S+)[\s\S]*?^rows\s+\S+ processed, (\d+) found[\s\S]*?^credits\s+(\d+)$/gm)];
  return found.map((m) => ({ status: m[1]!, found: Number(m[2]), credits: Number(m[3]) }));
}

describe('sluice demo', () => {
  let demo: CliResult;
  let elapsedMs: number;
  let unused: string;

  beforeAll(async () => {
    const root = scratchDir('sluice-demo-');
    const started = Date.now();
    // SLUICE_DATA_DIR points elsewhere on purpose: the demo must use the dir it is given.
    unused = path.join(root, 'unused');
    demo = await runCli(['demo', '--data-dir', path.join(root, 'demo')], cliEnv(unused), 120_000);
    elapsedMs = Date.now() - started;
  }, 130_000);

  it('exits 0 within 120 s after a completed job, an HTTP 200 presigned download of the same bytes, and a repeat run of 0 credits', () => {
    expect(demo.code, `${demo.stdout}\n${demo.stderr}`).toBe(0);
    expect(elapsedMs).toBeLessThan(120_000);
    const [first, second] = summaries(demo.stdout);
    expect(first).toMatchObject({ status: 'completed' });
    expect(first!.credits).toBeGreaterThan(0);
    expect(first!.found).toBeGreaterThan(0);
    expect(demo.stdout).toMatch(/GET http:\/\/127\.0\.0\.1:\d+\/\S+\?X-Amz-\.\.\. -> HTTP 200,/);
    expect(demo.stdout).toMatch(/same bytes as .*: yes$/m);
    expect(second).toMatchObject({ status: 'completed', credits: 0, found: first!.found });
    expect(demo.stdout).toMatch(/repeat run: 0 credits, \d+ rows answered from cache/);
    expect(fs.existsSync(unused)).toBe(false);
  });

  it('ends by receiving its own bulk.completed events, each with both signatures valid, and downloads through the first one\'s URL', () => {
    const events = [...demo.stdout.matchAll(/^ {3}bulk\.completed for (job_\S+), webhook-id (evt_\S+)\n {5}.*: (.+)$/gm)];
    expect(events.length, demo.stdout).toBeGreaterThanOrEqual(1);
    for (const [, , , verdict] of events) expect(verdict).toBe('both valid');
    const firstJob = /^job\s+(job_\S+)/m.exec(demo.stdout)![1];
    expect(events.at(-1)![1]).toBe(firstJob);
    expect(demo.stdout).toMatch(new RegExp(`GET http://127\\.0\\.0\\.1:\\d+/sluice/results/${firstJob}/found\\.csv\\?X-Amz-\\.\\.\\. -> HTTP 200`));
  });

  it('counts the downloaded found rows as CSV records, the same number the job reports as found', () => {
    const [first] = summaries(demo.stdout);
    const reported = /-> HTTP 200, (\d+) rows/.exec(demo.stdout);
    expect(reported, demo.stdout).not.toBeNull();
    expect(Number(reported![1])).toBe(first!.found);
  });
});
