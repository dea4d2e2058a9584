import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runJob } from '../../src/cli/run-command.js';
import type { LookupOutcome, LookupProvider } from '../../src/lookups/lookup-provider.js';
import { resultRecords } from '../support/csv-fixture.js';
import { openTestEngine, type TestEngine } from '../support/test-engine.js';

const engines: TestEngine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

describe('when the gender provider fails for some addresses', () => {
  it('the rows become error rows with a code, are never charged, and the job still completes', async () => {
    const e = await openTestEngine();
    engines.push(e);
    const real = e.deps.providers.get('gender')!;
    // 502 for every address at example.org, however often it is asked: a transient failure that outlives its retries.
    const flaky: LookupProvider = {
      kind: 'gender',
      name: 'flaky-gender',
      maxBatch: 100,
      async lookup(keys, signal) {
        const answers = await real.lookup(keys, signal);
        return keys.map((key, i): LookupOutcome<unknown> =>
          key.endsWith('@example.org') ? { ok: false, retryable: true, code: 'provider_502', message: 'bad gateway' } : answers[i]!,
        );
      },
    };
    (e.deps.providers as Map<string, LookupProvider>).set('gender', flaky);
    const file = path.join(e.dataDir, 'in.csv');
    fs.writeFileSync(file, 'email\njohn@example.com\nmary@example.org\nsusan@example.com\nmary@example.org\n');
    const account = e.deps.billing.createAccount({ credits: 10, now: Date.now() });

    const run = await runJob(e, { file, type: 'gender', accountId: account.id, outDir: path.join(e.dataDir, 'out') });

    expect(run.summary).toMatchObject({ status: 'completed', credits_used: 2 });
    expect(run.summary.rows).toMatchObject({ error: 2, processed: 4 });
    const rows = await resultRecords(fs.readFileSync(run.files.all!));
    expect(rows.map((r) => [r.status, r.credits, r.error])).toEqual([
      ['ok', '1', ''],
      ['error', '0', 'provider_502'],
      ['ok', '1', ''],
      ['error', '0', 'provider_502'],
    ]);
    expect(e.deps.billing.requireAccount(account.id).credits).toBe(8);
    // A failure is not an answer: nothing about it may be cached.
    expect(e.deps.results.getMany('gender', ['mary@example.org'], 0).size).toBe(0);
  });
});
