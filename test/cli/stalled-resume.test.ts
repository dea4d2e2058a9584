import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { cliEnv, DbPeek, exitWithin, killChildren, parseJson, removeScratchDirs, runCli, scratchDir, spawnCli } from '../support/cli-process.js';
import { writeGenderCsv } from '../support/csv-fixture.js';
import { openTestEngine } from '../support/test-engine.js';
import { waitUntil } from '../reliability/reliability-support.js';

/**
 * Issue #18 item 1, its "done when": a `sluice run` killed with SIGKILL leaves its job running with
 * leases held by a dead process. `jobs list` and `jobs show` say it has stalled, and
 * `sluice jobs resume ID --wait` finishes it here with files byte-identical to an uninterrupted run.
 */

/** The peek, with the one job the test's data dir holds. */
class JobPeek extends DbPeek {
  private readonly reader: Database.Database;
  constructor(dataDir: string) {
    super(dataDir);
    this.reader = new Database(path.join(dataDir, 'sluice.db'), { readonly: true, timeout: 5_000 });
  }
  jobId(): string | undefined {
    return (this.reader.prepare('SELECT id FROM jobs').get() as { id: string } | undefined)?.id;
  }
  override close(): void {
    this.reader.close();
    super.close();
  }
}

const peeks: DbPeek[] = [];
afterEach(async () => {
  await killChildren();
  for (const peek of peeks.splice(0)) peek.close();
  removeScratchDirs();
});

/** Chunks much longer than batches, so that the kill lands inside a chunk whose lease is held. */
const ENV = { SLUICE_BATCH_ROWS: '100', SLUICE_CHUNK_ROWS: '3000', SLUICE_POLL_MS: '20', SLUICE_WORKER_CONCURRENCY: '2' };
const ROWS = 8_000;
const GRANT = 100_000;
const FILES = ['all.csv', 'found.csv', 'errors.csv'];

async function withAccount(dataDir: string): Promise<void> {
  const setup = await openTestEngine({ ...ENV, SLUICE_DATA_DIR: dataDir });
  await setup.deps.billing.createAccount({ id: 'acc', credits: GRANT, now: Date.now() });
  await setup.close();
}

describe('a job whose sluice run was killed', () => {
  it('is shown as stalled, and `jobs resume ID --wait` finishes it with the files of an uninterrupted run', async () => {
    const dir = scratchDir('sluice-stalled-');
    const input = await writeGenderCsv(dir, 'in.csv', { rows: ROWS, seed: 181, duplicateShare: 0.1, invalidShare: 0.03 });

    const referenceData = path.join(dir, 'reference-data');
    await withAccount(referenceData);
    const reference = await runCli(['run', input, '--account', 'acc', '--out', path.join(dir, 'reference'), '--json'], cliEnv(referenceData, ENV), 120_000);
    expect(reference.code, reference.stderr).toBe(0);

    const dataDir = path.join(dir, 'data');
    await withAccount(dataDir);
    const env = cliEnv(dataDir, ENV);
    const run = spawnCli(['run', input, '--account', 'acc', '--out', path.join(dir, 'killed')], env);
    const db = new JobPeek(dataDir);
    peeks.push(db);
    let jobId: string | undefined;
    const midJob = await waitUntil(() => {
      jobId ??= db.jobId();
      if (jobId === undefined) return false;
      const row = db.job(jobId);
      return row.total_rows !== null && row.processed_rows > 0 && row.processed_rows < row.total_rows && db.heldChunkLeases(jobId) > 0;
    }, 60_000);
    expect(midJob, run.stderr()).toBe(true);
    run.child.kill('SIGKILL');
    await exitWithin(run.child, 10_000);
    expect(db.job(jobId!).status).toBe('running');

    const listed = await runCli(['jobs', 'list', '--json'], env);
    const row = parseJson<{ jobs: Record<string, unknown>[] }>(listed).jobs.find((j) => j.id === jobId)!;
    expect(row).toMatchObject({ status: 'running', stalled: true, eta_seconds: null });
    expect(typeof row.stalled_since).toBe('string');
    expect(typeof row.last_progress_at).toBe('string');
    const shown = parseJson(await runCli(['jobs', 'show', jobId!, '--json'], env));
    expect(shown).toMatchObject({ id: jobId, status: 'running', stalled: true, stalled_since: row.stalled_since, last_progress_at: row.last_progress_at });
    const human = await runCli(['jobs', 'show', jobId!], env);
    expect(human.stdout).toContain(`continue it with \`sluice jobs resume ${jobId}\``);

    const resumed = await runCli(['jobs', 'resume', jobId!, '--wait', '--out', path.join(dir, 'resumed'), '--json'], env, 120_000);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(parseJson(resumed)).toMatchObject({ id: jobId, status: 'completed', files: { all: path.join(dir, 'resumed', 'all.csv') } });
    for (const file of FILES) {
      expect(fs.readFileSync(path.join(dir, 'resumed', file)).equals(fs.readFileSync(path.join(dir, 'reference', file))), file).toBe(true);
    }

    // A finished job is refused with what to do instead.
    const again = await runCli(['jobs', 'resume', jobId!], env);
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain(`it has completed; download its results with \`sluice jobs download ${jobId} --out FILE\``);
  }, 300_000);
});
