import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runJob } from '../../src/cli/run-command.js';
import { jobEndEvent } from '../../src/jobs/job-events.js';
import { openStore } from '../../src/storage/open-store.js';
import type { Store } from '../../src/storage/store.js';
import { writeGenderCsv } from '../support/csv-fixture.js';
import { exited, startWorker, waitFor } from '../support/child-worker.js';
import { engineScope, openTestEngine, TEST_SEAL_KEY, TEST_STORES, tempDir, type TestEngine } from '../support/test-engine.js';
import type { ChildProcess } from 'node:child_process';

// One seal key for the reference and the crashed run: the keys paid for are compared by their
// billing-cache names, which are keyed by it (src/storage/billing-key.ts).
const ENV = { SLUICE_CHUNK_ROWS: '1000', SLUICE_BATCH_ROWS: '50', SLUICE_LEASE_SECONDS: '2', SLUICE_WORKER_CONCURRENCY: '2', SLUICE_SEAL_KEY: TEST_SEAL_KEY };
const ROWS = 12_000;

/** What the account paid for: which keys, and the ledger's charge lines (one per batch). */
async function charges(e: TestEngine, accountId: string, jobId: string) {
  const lines = (await e.deps.billing.ledger(accountId)).filter((l) => l.reason === 'charge');
  return { keys: await e.deps.billing.chargedKeys(accountId, jobId), lines: lines.length, deltas: lines.map((l) => l.delta).sort() };
}

describe.each(TEST_STORES)('a job killed with SIGKILL and resumed, on %s', (store) => {
  const engines = engineScope(store);
  const children: ChildProcess[] = [];
  const watchers: Store[] = [];
  afterEach(async () => {
    const left = children.splice(0);
    for (const child of left) child.kill('SIGKILL');
    await Promise.all(left.map(exited));
    await Promise.all(watchers.splice(0).map((s) => s.close()));
    await engines.closeAll();
  });

  // Seven worker processes start one after another, each opening the store and the object store:
  // 20 to 30 s alone, near twice that on a busy machine, past the default 60 s on PostgreSQL.
  it('produces the same result bytes and the same charges as an uninterrupted run', async () => {
    const dir = tempDir();
    const input = await writeGenderCsv(dir, 'in.csv', { rows: ROWS, seed: 11, duplicateShare: 0.2, invalidShare: 0.05 });

    const reference = await engines.open(ENV);
    const refAccount = await reference.deps.billing.createAccount({ id: 'acc', credits: 100_000, now: Date.now() });
    const clean = await runJob(reference, { file: input, type: 'gender', accountId: refAccount.id, outDir: path.join(dir, 'clean') });
    expect(clean.summary.status).toBe('completed');

    // Submit the job, then leave all the work to worker processes that we kill at random moments;
    // they get the store's env, so on PostgreSQL they share this test's database.
    const crashed = await openTestEngine({ ...(await engines.env()), ...ENV });
    const account = await crashed.deps.billing.createAccount({ id: 'acc', credits: 100_000, now: Date.now() });
    const job = await crashed.jobService.submit({ accountId: account.id, type: 'gender', body: fs.createReadStream(input), inputName: 'in.csv', options: {} });
    await crashed.close();
    const { config } = crashed;
    const sealKey = config.sealKey === undefined ? undefined : Buffer.from(config.sealKey, 'base64');
    const watch = await openStore({ dataDir: config.dataDir, sqlite: config.sqlite, databaseUrl: config.database.url, poolSize: 1, sealKey }, { jobEnded: jobEndEvent });
    watchers.push(watch);
    const progress = () => watch.jobs.require(job.id);

    let killedMidway = 0;
    for (let round = 0; round < 6; round++) {
      const child = startWorker(crashed.env);
      children.push(child);
      const before = (await progress()).processedRows;
      // Wait for some progress beyond the last kill, a different amount each round.
      const target = before + 300 + Math.floor(Math.random() * 1500);
      await waitFor(
        async () => {
          const now = await progress();
          return now.processedRows >= target || now.status === 'completed';
        },
        30_000,
        2,
      );
      child.kill('SIGKILL');
      await exited(child);
      if ((await progress()).status !== 'completed') killedMidway++;
    }
    const last = startWorker(crashed.env);
    children.push(last);
    expect(await waitFor(async () => (await progress()).status === 'completed', 60_000, 20)).toBe(true);
    last.kill('SIGTERM');
    await exited(last);

    expect(killedMidway).toBeGreaterThanOrEqual(3);
    const resumed = await engines.open(crashed.env);
    for (const filter of ['all', 'found'] as const) {
      const expected = fs.readFileSync(clean.files[filter]!);
      const actual = await streamToBuffer(await resumed.jobService.openResult(job.id, filter));
      expect(actual.equals(expected), `${filter}.csv differs after ${killedMidway} kills`).toBe(true);
    }
    const paid = await charges(resumed, account.id, job.id);
    expect(paid.keys.length).toBe(clean.summary.credits_used);
    expect(paid).toEqual(await charges(reference, refAccount.id, clean.summary.id));
    const summary = await resumed.jobService.get(job.id);
    expect(summary.creditsUsed).toBe(clean.summary.credits_used);
    expect((await resumed.deps.billing.requireAccount(account.id)).credits).toBe((await reference.deps.billing.requireAccount(refAccount.id)).credits);
  }, 180_000);
});

async function streamToBuffer(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(part as Buffer);
  return Buffer.concat(parts);
}
