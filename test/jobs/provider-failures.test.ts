import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runJob } from '../../src/cli/run-command.js';
import { Worker } from '../../src/jobs/worker.js';
import type { LookupProvider } from '../../src/lookups/lookup-provider.js';
import { DAY_MS, type Clock } from '../../src/shared/clock.js';
import { resultRecords } from '../support/csv-fixture.js';
import { failingProvider, openTestEngine, resultText, type TestEngine } from '../support/test-engine.js';

const engines: TestEngine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

describe('when the gender provider fails for some addresses', () => {
  it('the rows become error rows with a code, are never charged, and the job still completes', async () => {
    const e = await openTestEngine();
    engines.push(e);
    // 502 for every address at example.org, however often it is asked: a transient failure that outlives its retries.
    const flaky = failingProvider(e.deps.providers.get('gender')!, { test: (key) => key.endsWith('@example.org') });
    (e.deps.providers as Map<string, LookupProvider>).set('gender', flaky);
    const file = path.join(e.dataDir, 'in.csv');
    fs.writeFileSync(file, 'email\njohn@example.com\nmary@example.org\nsusan@example.com\nmary@example.org\n');
    const account = await e.deps.billing.createAccount({ credits: 10, now: Date.now() });

    // Half the rows fail: a budget of 1 lets the job complete with them (failure-budget.test.ts holds the budget).
    const run = await runJob(e, { file, type: 'gender', accountId: account.id, maxErrorRate: '1', outDir: path.join(e.dataDir, 'out') });

    expect(run.summary).toMatchObject({ status: 'completed', credits_used: 2 });
    expect(run.summary.rows).toMatchObject({ error: 2, processed: 4 });
    const rows = await resultRecords(fs.readFileSync(run.files.all!));
    expect(rows.map((r) => [r.status, r.credits, r.error])).toEqual([
      ['ok', '1', ''],
      ['error', '0', 'provider_502'],
      ['ok', '1', ''],
      ['error', '0', 'provider_502'],
    ]);
    expect((await e.deps.billing.requireAccount(account.id)).credits).toBe(8);
    // A failure is not an answer: nothing about it may be cached.
    expect((await e.deps.results.getMany('gender', ['mary@example.org'], 0)).size).toBe(0);
  });
});

describe('when the provider is down', () => {
  it('the job pauses with provider_unavailable instead of failing rows, goes on by itself once the provider is back, and its files equal a run without the outage', async () => {
    // Real time, moved on by hand: the worker's leases and the outage's retry delay need a clock that runs.
    let skipped = 0;
    const clock: Clock = { now: () => Date.now() + skipped };
    const e = await openTestEngine({ SLUICE_PROVIDER_RETRY_SECONDS: '1' }, clock);
    engines.push(e);
    const real = e.deps.providers.get('gender')!;
    let down = false;
    let askedWhileDown = 0;
    const outage: LookupProvider = {
      kind: 'gender',
      name: 'outage-gender',
      maxBatch: 100,
      async lookup(keys, signal) {
        if (down) {
          askedWhileDown++;
          return keys.map(() => ({ ok: false, retryable: true, code: 'provider_unavailable', message: 'down' }));
        }
        return real.lookup(keys, signal);
      },
    };
    const file = path.join(e.dataDir, 'in.csv');
    fs.writeFileSync(file, 'email\n' + Array.from({ length: 1_200 }, (_, i) => `person${i}.name${i % 7}@example.com`).join('\n') + '\n');
    const account = await e.deps.billing.createAccount({ credits: 5_000, now: Date.now() });
    const clean = await runJob(e, { file, type: 'gender', accountId: account.id, outDir: path.join(e.dataDir, 'clean') });
    expect(clean.summary.status).toBe('completed');

    (e.deps.providers as Map<string, LookupProvider>).set('gender', outage);
    const other = await e.deps.billing.createAccount({ credits: 5_000, now: Date.now() });
    // Were the clean run's answers in the result cache, the outage run would never ask the provider;
    // past the repeat-free window they no longer count, whatever the cache holds.
    skipped = (e.config.billing.repeatFreeDays + 1) * DAY_MS;
    let batches = 0;
    const original = outage.lookup.bind(outage);
    outage.lookup = async (keys, signal) => {
      if (++batches === 3) down = true; // the provider goes down in the middle of the job
      return original(keys, signal);
    };
    const run = runJob(e, { file, type: 'gender', accountId: other.id, outDir: path.join(e.dataDir, 'outage') });
    const paused = await waitForStatus(e, other.id, 'paused');
    expect(paused).toMatchObject({ status: 'paused', reason: 'provider_unavailable' });
    expect(askedWhileDown).toBeGreaterThan(0);
    const creditsWhilePaused = (await e.deps.billing.requireAccount(other.id)).credits;
    expect(5_000 - creditsWhilePaused).toBe(paused.processedRows); // every committed row paid once, nothing else
    down = false;
    const first = await run; // runJob stops at the pause; a worker takes it from there
    expect(first.summary.status).toBe('paused');
    const deadline = Date.now() + 20_000;
    await new Worker(e.deps).run({ concurrency: 1, until: async () => (await e.deps.jobs.status(first.summary.id)) === 'completed' || Date.now() > deadline });
    expect(await e.deps.jobs.status(first.summary.id)).toBe('completed');
    const all = await resultText(e, first.summary.id, 'all');
    expect(all).toBe(fs.readFileSync(clean.files.all!, 'utf8'));
    expect(await resultText(e, first.summary.id, 'found')).toBe(fs.readFileSync(clean.files.found!, 'utf8'));
    expect((await e.deps.billing.requireAccount(other.id)).credits).toBe((await e.deps.billing.requireAccount(account.id)).credits);
  });
});

async function waitForStatus(e: TestEngine, accountId: string, status: string) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const job = (await e.deps.jobs.list({ accountId, limit: 1, offset: 0 })).jobs[0];
    if (job?.status === status) return job;
    if (Date.now() > deadline) throw new Error(`job not ${status}: ${job?.status}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
