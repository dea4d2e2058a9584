import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { startServe } from '../support/api-serve.js';
import { waitFor } from '../support/child-worker.js';
import { cliEnv, DbPeek, exitWithin, killChildren, queueJob, removeScratchDirs, scratchDir, spawnCli, type CliChild } from '../support/cli-process.js';
import { writeGenderCsv } from '../support/csv-fixture.js';
import { openTestEngine, TEST_SEAL_KEY, type TestEngine } from '../support/test-engine.js';
import { cleanRunMeanwhile, dbFileOf, expectSameOutcome, jobEnd, jobOutcome, type JobOutcome } from './reliability-support.js';

/**
 * Issue #7 item 4: graceful stop of the processes that run jobs besides `sluice worker` (which
 * test/cli/graceful-stop.test.ts covers): `sluice serve` with its in-process worker, and
 * `sluice run`. SIGTERM lets the batches in flight finish, releases every lease and exits within
 * STOP_WITHIN_MS; a worker started next goes on from the chunk cursors, and the files and charges
 * equal those of an uninterrupted run.
 */

const peeks: DbPeek[] = [];
const engines: TestEngine[] = [];
afterEach(async () => {
  await killChildren();
  for (const peek of peeks.splice(0)) peek.close();
  await Promise.all(engines.splice(0).map((e) => e.close()));
  removeScratchDirs();
});

/** Chunks much longer than batches, so that a stop lands in the middle of chunks, not between them. */
// One seal key for the clean run and the tested ones: keys paid for are compared by their billing-cache names, keyed by it.
const ENV = { SLUICE_BATCH_ROWS: '200', SLUICE_CHUNK_ROWS: '5000', SLUICE_POLL_MS: '20', SLUICE_WORKER_CONCURRENCY: '2', SLUICE_SEAL_KEY: TEST_SEAL_KEY };
const ROWS = 10_000;
const GRANT = 100_000;
/** Docker's and systemd's usual grace before SIGKILL is 10 s or more. */
const STOP_WITHIN_MS = 10_000;
/** Two slots, each finishing the batch it is in, plus the rows committed between our look and the signal. */
const ROWS_AFTER_SIGNAL = 2 * 2 * 200 + 1_000;

interface Stopped {
  code: number | null;
  ms: number;
  rowsAfterSignal: number;
}

/** SIGTERM once the job is a few thousand rows in; how the process ended and how long it took. */
async function stopMidJob(child: CliChild, db: DbPeek, jobId: () => string | undefined): Promise<Stopped> {
  const midway = await waitFor(() => {
    const id = jobId();
    return (id !== undefined && db.job(id).processed_rows >= 2_000) || child.child.exitCode !== null;
  }, 60_000, 5);
  expect(midway, child.stderr()).toBe(true);
  const before = db.job(jobId()!).processed_rows;
  const signalled = Date.now();
  child.child.kill('SIGTERM');
  const code = await exitWithin(child.child, STOP_WITHIN_MS);
  return { code, ms: Date.now() - signalled, rowsAfterSignal: db.job(jobId()!).processed_rows - before };
}

/** The job is left as a stop should leave it; then a fresh worker ends it like an uninterrupted run. */
async function expectResumable(dataDir: string, jobId: string, db: DbPeek, stopped: Stopped, reference: Promise<JobOutcome>): Promise<void> {
  const left = db.job(jobId);
  expect(left).toMatchObject({ status: 'running', phase: 'process', total_rows: ROWS, lease_owner: null });
  expect(left.processed_rows, 'the job ended before the signal: nothing was interrupted').toBeLessThan(ROWS);
  expect(db.heldChunkLeases(jobId), 'chunk leases still held after the stop').toBe(0);
  expect(stopped.rowsAfterSignal, 'rows done after SIGTERM: more than the batches in flight').toBeLessThanOrEqual(ROWS_AFTER_SIGNAL);
  const cursors = db.chunkCursors(jobId);
  expect(cursors.some((c) => c.cursor > 0 && c.cursor < c.row_count), 'no chunk was left part-way').toBe(true);
  // A batch is committed whole or not at all: every cursor sits on a batch boundary.
  expect(cursors.every((c) => c.cursor % 200 === 0 || c.cursor === c.row_count)).toBe(true);

  const next = spawnCli(['worker'], cliEnv(dataDir, ENV));
  expect(await jobEnd(db, jobId, [next], 60_000), next.stderr()).toBe('completed');
  // Chunks are taken up again where they stopped: none needed more than the stopped take and this one.
  expect(Math.max(...db.chunkLeaseTakes(jobId))).toBeLessThanOrEqual(2);
  next.child.kill('SIGTERM');
  expect(await exitWithin(next.child, STOP_WITHIN_MS)).toBe(0);

  const engine = await openTestEngine({ ...ENV, SLUICE_DATA_DIR: dataDir });
  engines.push(engine);
  expectSameOutcome(await jobOutcome(engine, 'acc', jobId), await reference, 'after SIGTERM and a restart');
}

describe('SIGTERM in the middle of a job', () => {
  it(`sluice serve lets its worker finish the batches in flight, releases its leases and exits 0 within ${STOP_WITHIN_MS / 1000} s; a worker started next ends the job as an uninterrupted run`, async ({ annotate }) => {
    const dir = scratchDir('sluice-serve-stop-');
    const input = await writeGenderCsv(dir, 'in.csv', { rows: ROWS, seed: 101, duplicateShare: 0.1, invalidShare: 0.03 });
    // The uninterrupted run goes on in this process while the child processes do theirs.
    const reference = cleanRunMeanwhile(path.join(dir, 'reference'), input, ENV, GRANT);
    const dataDir = path.join(dir, 'data');
    const { jobId } = await queueJob(dataDir, input, { accountId: 'acc', credits: GRANT, env: ENV });
    const db = new DbPeek(dataDir);
    peeks.push(db);

    const server = await startServe(dataDir, ENV);
    const stopped = await stopMidJob(server, db, () => jobId);
    await annotate(`sluice serve exited ${stopped.ms} ms after SIGTERM, ${stopped.rowsAfterSignal} rows committed meanwhile`);

    expect(stopped.code, server.stderr()).toBe(0);
    expect(stopped.ms).toBeLessThan(STOP_WITHIN_MS);
    expect(server.stderr()).toContain('stopping');
    expect(server.stderr()).not.toMatch(/\n\s+at /);
    await expectResumable(dataDir, jobId, db, stopped, reference);
  });

  it(`sluice run exits 130 within ${STOP_WITHIN_MS / 1000} s, leaving the job running with no lease held; a worker ends it as an uninterrupted run`, async ({ annotate }) => {
    const dir = scratchDir('sluice-run-stop-');
    const input = await writeGenderCsv(dir, 'in.csv', { rows: ROWS, seed: 102, duplicateShare: 0.1, invalidShare: 0.03 });
    const reference = cleanRunMeanwhile(path.join(dir, 'reference'), input, ENV, GRANT);
    const dataDir = path.join(dir, 'data');
    const setup = await openTestEngine({ ...ENV, SLUICE_DATA_DIR: dataDir });
    await setup.deps.billing.createAccount({ id: 'acc', credits: GRANT, now: Date.now() });
    await setup.close();
    const db = new DbPeek(dataDir);
    peeks.push(db);
    const reader = new Database(dbFileOf(dataDir), { readonly: true, timeout: 5_000 });
    const theJob = () => (reader.prepare('SELECT id FROM jobs').get() as { id: string } | undefined)?.id;

    const run = spawnCli(['run', input, '--account', 'acc', '--out', path.join(dir, 'out')], cliEnv(dataDir, ENV));
    let stopped: Stopped;
    let jobId: string;
    try {
      stopped = await stopMidJob(run, db, theJob);
      jobId = theJob()!;
    } finally {
      reader.close();
    }
    await annotate(`sluice run exited ${stopped.ms} ms after SIGTERM, ${stopped.rowsAfterSignal} rows committed meanwhile`);

    expect(stopped.code, run.stderr()).toBe(130);
    expect(stopped.ms).toBeLessThan(STOP_WITHIN_MS);
    expect(fs.existsSync(path.join(dir, 'out')), 'an interrupted run wrote result files').toBe(false);
    await expectResumable(dataDir, jobId, db, stopped, reference);
  });
});
