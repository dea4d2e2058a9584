import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runJob } from '../../src/cli/run-command.js';
import { Worker } from '../../src/jobs/worker.js';
import { writeGenderCsv } from '../support/csv-fixture.js';
import { engineScope, TEST_STORES, tempDir } from '../support/test-engine.js';

describe.each(TEST_STORES)('when the balance runs out, on %s', (store) => {
  const engines = engineScope(store);
  afterEach(() => engines.closeAll());

  it('the job pauses with insufficient_credits, and after a top-up and resume its files equal those of a job that never paused', async () => {
    const dir = tempDir();
    const input = await writeGenderCsv(dir, 'in.csv', { rows: 2500, seed: 21 });

    const plenty = await engines.open();
    const rich = await plenty.deps.billing.createAccount({ credits: 100_000, now: Date.now() });
    const never = await runJob(plenty, { file: input, type: 'gender', accountId: rich.id, outDir: path.join(dir, 'never') });
    const needed = never.summary.credits_used;
    expect(needed).toBeGreaterThan(600);

    const tight = await engines.open();
    const poor = await tight.deps.billing.createAccount({ credits: 500, now: Date.now() });
    const paused = await runJob(tight, { file: input, type: 'gender', accountId: poor.id });
    expect(paused.summary).toMatchObject({ status: 'paused', reason: 'insufficient_credits', credits_used: 500 });
    expect((await tight.deps.billing.requireAccount(poor.id)).credits).toBe(0);
    expect(await tight.deps.billing.available(poor.id)).toBe(0);

    // The top-up itself resumes a job paused for credits.
    await tight.deps.billing.addCredits(poor.id, 10_000, 'topup', Date.now());
    expect(await tight.deps.jobs.status(paused.summary.id)).toBe('running');
    const worker = new Worker(tight.deps);
    await worker.run({ concurrency: 2, until: async () => (await tight.deps.jobs.status(paused.summary.id)) !== 'running' });

    const done = await tight.jobService.get(paused.summary.id);
    expect(done.status).toBe('completed');
    expect(done.creditsUsed).toBe(needed);
    for (const filter of ['all', 'found'] as const) {
      const actual = await text(await tight.jobService.openResult(done.id, filter));
      expect(actual).toBe(fs.readFileSync(never.files[filter]!, 'utf8'));
    }
    expect((await tight.deps.billing.requireAccount(poor.id)).credits).toBe(10_500 - needed);
  });

  it('two jobs of one account at once never take the balance below 0 and charge each address once', async () => {
    const dir = tempDir();
    // Two files that share half their addresses, so both jobs compete for the same keys too.
    const a = await writeGenderCsv(dir, 'a.csv', { rows: 1500, seed: 31, pool: 2000, duplicateShare: 0, invalidShare: 0 });
    const b = await writeGenderCsv(dir, 'b.csv', { rows: 1500, seed: 32, pool: 2000, duplicateShare: 0, invalidShare: 0 });
    const e = await engines.open({ SLUICE_WORKER_CONCURRENCY: '4' });
    const account = await e.deps.billing.createAccount({ credits: 900, now: Date.now() });

    const [ra, rb] = await Promise.all([
      runJob(e, { file: a, type: 'gender', accountId: account.id }),
      runJob(e, { file: b, type: 'gender', accountId: account.id }),
    ]);

    expect((await e.deps.billing.requireAccount(account.id)).credits).toBe(0);
    const paidA = await e.deps.billing.chargedKeys(account.id, ra.summary.id);
    const paidB = await e.deps.billing.chargedKeys(account.id, rb.summary.id);
    expect(paidA.length + paidB.length).toBe(900);
    expect(new Set([...paidA, ...paidB]).size).toBe(900);
    expect((await e.deps.billing.chargeCountForJob(ra.summary.id)) + (await e.deps.billing.chargeCountForJob(rb.summary.id))).toBe(900);
    expect(ra.summary.credits_used + rb.summary.credits_used).toBe(900);
    expect([ra.summary.status, rb.summary.status]).toContain('paused');
    expect(await e.deps.billing.available(account.id)).toBe(0);
  });
});

async function text(stream: NodeJS.ReadableStream): Promise<string> {
  let out = '';
  for await (const part of stream) out += part.toString();
  return out;
}
