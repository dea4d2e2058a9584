import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runJob } from '../../src/cli/run-command.js';
import { JobStore } from '../../src/jobs/job-store.js';
import { openDatabase } from '../../src/storage/sqlite/open-database.js';
import { writeGenderCsv } from '../support/csv-fixture.js';
import { exited, startWorker, waitFor } from '../support/child-worker.js';
import { openTestEngine, tempDir, type TestEngine } from '../support/test-engine.js';
import type { ChildProcess } from 'node:child_process';

const children: ChildProcess[] = [];
const engines: TestEngine[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) child.kill('SIGKILL');
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

const ENV = { SLUICE_CHUNK_ROWS: '1000', SLUICE_BATCH_ROWS: '50', SLUICE_LEASE_SECONDS: '2', SLUICE_WORKER_CONCURRENCY: '2' };
const ROWS = 12_000;

/** What the account paid for: which keys, and the ledger's charge lines (one per batch). */
function charges(e: TestEngine, accountId: string, jobId: string) {
  const lines = e.deps.billing.ledger(accountId).filter((l) => l.reason === 'charge');
  return { keys: e.deps.billing.chargedKeys(accountId, jobId), lines: lines.length, deltas: lines.map((l) => l.delta).sort() };
}

describe('a job killed with SIGKILL and resumed', () => {
  it('produces the same result bytes and the same charges as an uninterrupted run', async () => {
    const dir = tempDir();
    const input = await writeGenderCsv(dir, 'in.csv', { rows: ROWS, seed: 11, duplicateShare: 0.2, invalidShare: 0.05 });

    const reference = await openTestEngine(ENV);
    engines.push(reference);
    const refAccount = reference.deps.billing.createAccount({ id: 'acc', credits: 100_000, now: Date.now() });
    const clean = await runJob(reference, { file: input, type: 'gender', accountId: refAccount.id, outDir: path.join(dir, 'clean') });
    expect(clean.summary.status).toBe('completed');

    // Submit the job, then leave all the work to worker processes that we kill at random moments.
    const crashed = await openTestEngine(ENV);
    const account = crashed.deps.billing.createAccount({ id: 'acc', credits: 100_000, now: Date.now() });
    const job = await crashed.jobService.submit({ accountId: account.id, type: 'gender', body: fs.createReadStream(input), inputName: 'in.csv', options: {} });
    await crashed.close();
    const db = openDatabase(path.join(crashed.dataDir, 'sluice.db'), { synchronous: 'NORMAL', busyTimeoutMs: 5000 });
    const jobs = new JobStore(db);

    let killedMidway = 0;
    for (let round = 0; round < 6; round++) {
      const child = startWorker(crashed.env);
      children.push(child);
      const before = jobs.require(job.id).processedRows;
      // Wait for some progress beyond the last kill, a different amount each round.
      const target = before + 300 + Math.floor(Math.random() * 1500);
      await waitFor(() => jobs.require(job.id).processedRows >= target || jobs.require(job.id).status === 'completed', 30_000, 2);
      child.kill('SIGKILL');
      await exited(child);
      if (jobs.require(job.id).status !== 'completed') killedMidway++;
    }
    const last = startWorker(crashed.env);
    children.push(last);
    expect(await waitFor(() => jobs.require(job.id).status === 'completed', 60_000, 20)).toBe(true);
    last.kill('SIGTERM');
    await exited(last);
    db.close();

    expect(killedMidway).toBeGreaterThanOrEqual(3);
    const resumed = await openTestEngine(crashed.env);
    engines.push(resumed);
    for (const filter of ['all', 'found'] as const) {
      const expected = fs.readFileSync(clean.files[filter]!);
      const actual = await streamToBuffer(await resumed.jobService.openResult(job.id, filter));
      expect(actual.equals(expected), `${filter}.csv differs after ${killedMidway} kills`).toBe(true);
    }
    const paid = charges(resumed, account.id, job.id);
    expect(paid.keys.length).toBe(clean.summary.credits_used);
    expect(paid).toEqual(charges(reference, refAccount.id, clean.summary.id));
    const summary = resumed.jobService.get(job.id);
    expect(summary.creditsUsed).toBe(clean.summary.credits_used);
    expect(resumed.deps.billing.requireAccount(account.id).credits).toBe(reference.deps.billing.requireAccount(refAccount.id).credits);
  });
});

async function streamToBuffer(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(part as Buffer);
  return Buffer.concat(parts);
}
