import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runJob } from '../../src/cli/run-command.js';
import { writeGenderCsv } from '../support/csv-fixture.js';
import { waitFor } from '../support/child-worker.js';
import { cliEnv, DbPeek, exitWithin, killChildren, queueJob, removeScratchDirs, scratchDir, spawnCli, workerReady } from '../support/cli-process.js';
import { openTestEngine, type TestEngine } from '../support/test-engine.js';

const engines: TestEngine[] = [];
const peeks: DbPeek[] = [];
afterEach(async () => {
  await killChildren();
  for (const peek of peeks.splice(0)) peek.close();
  await Promise.all(engines.splice(0).map((e) => e.close()));
  removeScratchDirs();
});

/**
 * Chunks much longer than batches: a worker that stops after its batch in flight stops in the
 * middle of its chunks, so the next worker has to go on from the chunk cursors, not from chunk
 * starts; and one that only looks at its stop signal between chunks would show it.
 */
const ENV = { SLUICE_BATCH_ROWS: '200', SLUICE_CHUNK_ROWS: '10000', SLUICE_POLL_MS: '20', SLUICE_WORKER_CONCURRENCY: '2' };
const ROWS = 40_000;
const STOP_WITHIN_MS = 10_000;
/** Two slots, each finishing the batch it is in, plus the rows committed between our look and the signal. */
const ROWS_AFTER_SIGNAL = 2 * 2 * 200 + 1_000;

async function streamToBuffer(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(Buffer.from(part as Buffer));
  return Buffer.concat(parts);
}

describe('a worker process stopped with SIGTERM in the middle of a job', () => {
  it(`exits 0 within ${STOP_WITHIN_MS / 1000} s, leaves the job running with no lease held, and the next worker ends it exactly as an uninterrupted run`, async () => {
    const dir = scratchDir('sluice-stop-');
    const input = await writeGenderCsv(dir, 'in.csv', { rows: ROWS, seed: 61, duplicateShare: 0.1, invalidShare: 0.03 });

    const dataDir = path.join(dir, 'data');
    const { jobId } = await queueJob(dataDir, input, { accountId: 'acc', credits: 100_000, env: ENV });

    // The uninterrupted run, in its own data dir, while the worker processes do theirs.
    const reference = (async () => {
      const engine = await openTestEngine({ ...ENV, SLUICE_DATA_DIR: path.join(dir, 'reference-data') });
      engines.push(engine);
      await engine.deps.billing.createAccount({ id: 'acc', credits: 100_000, now: Date.now() });
      const run = await runJob(engine, { file: input, type: 'gender', accountId: 'acc', outDir: path.join(dir, 'reference') });
      return { run, balance: (await engine.deps.billing.requireAccount('acc')).credits };
    })();

    const env = cliEnv(dataDir, ENV);
    const db = new DbPeek(dataDir);
    peeks.push(db);
    const first = spawnCli(['worker'], env);
    await workerReady(first);
    const midway = await waitFor(() => db.job(jobId).processed_rows >= 4_000 || first.child.exitCode !== null, 60_000, 10);
    expect(midway, first.stderr()).toBe(true);

    const before = db.job(jobId).processed_rows;
    const signalled = Date.now();
    first.child.kill('SIGTERM');
    const code = await exitWithin(first.child, STOP_WITHIN_MS);
    const stoppedIn = Date.now() - signalled;

    expect(code, first.stderr()).toBe(0);
    expect(stoppedIn).toBeLessThan(STOP_WITHIN_MS);
    const stopped = db.job(jobId);
    expect(stopped).toMatchObject({ status: 'running', phase: 'process', total_rows: ROWS, lease_owner: null });
    expect(stopped.processed_rows).toBeGreaterThan(0);
    expect(stopped.processed_rows, 'the worker finished before the signal; nothing was interrupted').toBeLessThan(ROWS);
    expect(db.heldChunkLeases(jobId)).toBe(0);
    expect(stopped.processed_rows - before, `rows done after SIGTERM (${before} before): more than the batches in flight`).toBeLessThanOrEqual(ROWS_AFTER_SIGNAL);
    expect(db.chunkCursors(jobId).some((c) => c.cursor > 0 && c.cursor < c.row_count), 'no chunk was left part-way').toBe(true);

    const second = spawnCli(['worker'], env);
    expect(await waitFor(() => db.job(jobId).status === 'completed', 60_000, 25), second.stderr()).toBe(true);
    second.child.kill('SIGTERM');
    expect(await exitWithin(second.child, STOP_WITHIN_MS)).toBe(0);

    const { run: clean, balance } = await reference;
    expect(clean.summary.status).toBe('completed');
    const resumed = await openTestEngine({ ...ENV, SLUICE_DATA_DIR: dataDir });
    engines.push(resumed);
    for (const filter of ['all', 'found'] as const) {
      const actual = await streamToBuffer(await resumed.jobService.openResult(jobId, filter));
      expect(actual.equals(fs.readFileSync(clean.files[filter]!)), `${filter}.csv differs from the uninterrupted run`).toBe(true);
    }
    const finished = await resumed.jobService.get(jobId);
    expect(finished.creditsUsed).toBe(clean.summary.credits_used);
    expect(await resumed.deps.billing.chargeCountForJob(jobId)).toBe(clean.summary.credits_used);
    expect((await resumed.deps.billing.requireAccount('acc')).credits).toBe(balance);
  });
});
