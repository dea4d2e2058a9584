import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runJob } from '../../src/cli/run-command.js';
import { Worker } from '../../src/jobs/worker.js';
import { writeGenderCsv } from '../support/csv-fixture.js';
import { engineScope, TEST_STORES, tempDir } from '../support/test-engine.js';

describe.each(TEST_STORES)('a job paused with insufficient_credits, on %s', (store) => {
  const engines = engineScope(store);
  afterEach(() => engines.closeAll());

  it('runs again on the top-up alone (no resume call), pauses again while a top-up is too small, and ends with exact charges and files', async () => {
    const dir = tempDir();
    const input = await writeGenderCsv(dir, 'in.csv', { rows: 2000, seed: 57 });

    const plenty = await engines.open();
    const rich = await plenty.deps.billing.createAccount({ credits: 100_000, now: Date.now() });
    const never = await runJob(plenty, { file: input, type: 'gender', accountId: rich.id, outDir: path.join(dir, 'never') });
    const needed = never.summary.credits_used;
    expect(needed).toBeGreaterThan(400);

    const e = await engines.open();
    const poor = await e.deps.billing.createAccount({ credits: 300, now: Date.now() });
    const paused = await runJob(e, { file: input, type: 'gender', accountId: poor.id });
    const id = paused.summary.id;
    expect(paused.summary).toMatchObject({ status: 'paused', reason: 'insufficient_credits', credits_used: 300 });
    const finish = async () => {
      await new Worker(e.deps).run({ concurrency: 2, until: async () => (await e.deps.jobs.status(id)) !== 'running' });
      return e.jobService.get(id);
    };

    // Too small to finish: the job runs, spends it, and pauses again at insufficient_credits.
    await e.deps.billing.addCredits(poor.id, 50, 'topup', Date.now());
    expect(await e.jobService.get(id)).toMatchObject({ status: 'running', reason: null });
    expect(await finish()).toMatchObject({ status: 'paused', reason: 'insufficient_credits', creditsUsed: 350 });
    expect((await e.deps.billing.requireAccount(poor.id)).credits).toBe(0);

    await e.deps.billing.addCredits(poor.id, 10_000, 'topup', Date.now());
    expect(await e.jobService.get(id)).toMatchObject({ status: 'running', reason: null });
    const done = await finish();
    expect(done.status).toBe('completed');
    expect(done.creditsUsed).toBe(needed);
    expect(await e.deps.billing.chargeCountForJob(id)).toBe(needed);
    expect((await e.deps.billing.requireAccount(poor.id)).credits).toBe(10_350 - needed);
    expect(await e.deps.billing.available(poor.id)).toBe(10_350 - needed);
    for (const filter of ['all', 'found'] as const) {
      expect(await text(await e.jobService.openResult(id, filter))).toBe(fs.readFileSync(never.files[filter]!, 'utf8'));
    }
  });
});

async function text(stream: NodeJS.ReadableStream): Promise<string> {
  let out = '';
  for await (const part of stream) out += part.toString();
  return out;
}
