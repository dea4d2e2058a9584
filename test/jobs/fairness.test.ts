import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { Worker } from '../../src/jobs/worker.js';
import { FAIR_SLICE_MS } from '../../src/jobs/process-chunk.js';
import type { LookupProvider } from '../../src/lookups/lookup-provider.js';
import { writeGenderCsv } from '../support/csv-fixture.js';
import { openTestEngine, tempDir, type TestEngine } from '../support/test-engine.js';

const engines: TestEngine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

/** The embedded answers, 10 keys per request and 50 ms per request: a remote service's pace. */
function slowProvider(e: TestEngine): LookupProvider {
  const real = e.deps.providers.get('gender')!;
  return {
    kind: 'gender',
    name: 'slow-gender',
    maxBatch: 10,
    async lookup(keys, signal) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      return real.lookup(keys, signal);
    },
  };
}

async function engine(env: Record<string, string>): Promise<TestEngine> {
  const e = await openTestEngine({ SLUICE_CHUNK_ROWS: '20000', SLUICE_BATCH_ROWS: '200', SLUICE_WORKER_CONCURRENCY: '2', ...env });
  engines.push(e);
  (e.deps.providers as Map<string, LookupProvider>).set('gender', slowProvider(e));
  return e;
}

async function submit(e: TestEngine, accountId: string, file: string): Promise<string> {
  const job = await e.jobService.submit({ accountId, type: 'gender', body: fs.createReadStream(file), inputName: 'in.csv', options: {} });
  return job.id;
}

async function done(e: TestEngine, id: string): Promise<boolean> {
  return (await e.deps.jobs.status(id)) === 'completed';
}

describe('fair sharing between accounts', () => {
  it('a small job started while another account\'s large job holds every worker slot finishes within one fair slice of its time alone', async () => {
    const dir = tempDir();
    const small = await writeGenderCsv(dir, 'small.csv', { rows: 500, seed: 1 });
    const large = await writeGenderCsv(dir, 'large.csv', { rows: 40_000, seed: 2 });

    const alone = await engine({});
    const soloAccount = await alone.deps.billing.createAccount({ credits: 1_000_000, now: Date.now() });
    const soloJob = await submit(alone, soloAccount.id, small);
    const soloStart = Date.now();
    await new Worker(alone.deps).run({ concurrency: 2, until: () => done(alone, soloJob) });
    const aloneMs = Date.now() - soloStart;

    const e = await engine({});
    const big = await e.deps.billing.createAccount({ credits: 1_000_000, now: Date.now() });
    const little = await e.deps.billing.createAccount({ credits: 1_000_000, now: Date.now() });
    const bigJob = await submit(e, big.id, large);
    const worker = new Worker(e.deps);
    const running = worker.run({ concurrency: 2, until: () => done(e, bigJob) });
    // Both slots are busy with the large job's two 20,000-row chunks before the small job arrives.
    while ((await e.deps.jobs.require(bigJob)).processedRows < 1_000) await new Promise((r) => setTimeout(r, 20));
    const littleJob = await submit(e, little.id, small);
    const sharedStart = Date.now();
    while (!(await done(e, littleJob))) await new Promise((r) => setTimeout(r, 10));
    const sharedMs = Date.now() - sharedStart;
    await running;

    // The bound: the time alone, plus one fair slice, plus a batch and the hand-over (1.5 s here).
    expect(sharedMs, `alone ${aloneMs} ms, beside the large job ${sharedMs} ms`).toBeLessThan(aloneMs + FAIR_SLICE_MS + 1_500);
    expect(await done(e, bigJob)).toBe(true);
    expect(await e.deps.jobs.require(bigJob)).toMatchObject({ processedRows: 40_000 });
    expect(await e.deps.billing.chargeCountForJob(bigJob)).toBe((await e.deps.jobs.require(bigJob)).creditsUsed);
  }, 60_000);

  it('runs at most SLUICE_ACCOUNT_RUNNING_JOBS jobs of one account at once; the others wait in queued', async () => {
    const dir = tempDir();
    const file = await writeGenderCsv(dir, 'in.csv', { rows: 2_000, seed: 3 });
    const e = await engine({ SLUICE_ACCOUNT_RUNNING_JOBS: '1', SLUICE_CHUNK_ROWS: '500' });
    const account = await e.deps.billing.createAccount({ credits: 1_000_000, now: Date.now() });
    const ids = [await submit(e, account.id, file), await submit(e, account.id, file)];
    let mostRunning = 0;
    // One read per sample, so that both jobs' statuses come from the same moment; chained, so that
    // none is still in flight when the engine closes.
    let sampling = Promise.resolve();
    const sampler = setInterval(() => {
      sampling = sampling.then(async () => {
        const { total } = await e.deps.jobs.list({ accountId: account.id, status: 'running', limit: ids.length, offset: 0 });
        mostRunning = Math.max(mostRunning, total);
      });
    }, 5);
    await new Worker(e.deps).run({ concurrency: 2, until: async () => (await Promise.all(ids.map((id) => done(e, id)))).every(Boolean) });
    clearInterval(sampler);
    await sampling;
    expect(mostRunning).toBe(1);
    expect(await Promise.all(ids.map((id) => e.deps.jobs.status(id)))).toEqual(['completed', 'completed']);
  }, 60_000);
});
