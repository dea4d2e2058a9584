import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runJob } from '../../src/cli/run-command.js';
import { parseErrorRate } from '../../src/jobs/job-service.js';
import type { LookupProvider } from '../../src/lookups/lookup-provider.js';
import { openDatabase } from '../../src/storage/sqlite/open-database.js';
import { resultRecords } from '../support/csv-fixture.js';
import { engineScope, failingProvider, resultText, runUntilSettled } from '../support/test-engine.js';

const engines = engineScope();
afterEach(() => engines.closeAll());

/**
 * 3,000 rows over 6 chunks, with quoted cells holding commas, quotes and line ends (the retry
 * splices rows back into the chunk's part by cutting CSV records), about 10% repeats of an earlier
 * address (so a failed key's repeats fail too), and a few invalid rows.
 */
function inputCsv(rows = 3_000): string {
  const lines = ['email,note,"multi\nline"'];
  for (let i = 0; i < rows; i++) {
    const email = i % 97 === 5 ? 'not-an-email' : i % 10 === 9 ? `person${i - 9}@example.com` : `person${i}@example.com`;
    lines.push(`${email},"row ${i}, ""quoted""","line one\nline ${i}"`);
  }
  return lines.join('\n') + '\n';
}

/** Keys person{n}@ with n % modulo === 0: each first occurrence fails, and so do its repeats. */
const failEvery = (modulo: number) => ({ test: (key: string) => Number(/^person(\d+)@/.exec(key)?.[1] ?? 1) % modulo === 0 });
const NONE = { test: () => false };

async function setUp(failing: { test: (key: string) => boolean }) {
  const e = await engines.open({ SLUICE_BATCH_ROWS: '100', SLUICE_CHUNK_ROWS: '500' });
  (e.deps.providers as Map<string, LookupProvider>).set('gender', failingProvider(e.deps.providers.get('gender')!, failing));
  const file = path.join(e.dataDir, 'in.csv');
  fs.writeFileSync(file, inputCsv());
  const account = await e.deps.billing.createAccount({ credits: 100_000, now: Date.now() });
  return { e, file, account };
}

/** What the same file gives on a fresh engine whose provider never fails: what every retry must reach. */
async function cleanRun(file: string) {
  const e = await engines.open({ SLUICE_BATCH_ROWS: '100', SLUICE_CHUNK_ROWS: '500' });
  const account = await e.deps.billing.createAccount({ credits: 100_000, now: Date.now() });
  const run = await runJob(e, { file, type: 'gender', accountId: account.id, outDir: path.join(e.dataDir, 'out') });
  expect(run.summary.status).toBe('completed');
  return { all: fs.readFileSync(run.files.all!, 'utf8'), found: fs.readFileSync(run.files.found!, 'utf8'), credits: run.summary.credits_used, rows: run.summary.rows };
}

describe('parseErrorRate', () => {
  it.each([
    ['0', 0],
    ['1', 1],
    ['0.05', 0.05],
    ['.5', 0.5],
    [' 0.2 ', 0.2],
    ['1.0', 1],
  ])('reads %j as %d', (raw, rate) => expect(parseErrorRate(raw)).toBe(rate));

  it.each(['', '-0.1', '1.01', '5%', 'half', '1e-2', 'NaN', '0x1'])('refuses %j', (raw) => expect(parseErrorRate(raw)).toBeUndefined());
});

describe('a job under its failure budget', () => {
  it('completes with error rows, which are free and are exactly the rows of the errors export', async () => {
    // person{n} with n % 50 === 0: 2% of the rows (first occurrences and their repeats), under the 5% default.
    const { e, file, account } = await setUp(failEvery(50));
    const run = await runJob(e, { file, type: 'gender', accountId: account.id, outDir: path.join(e.dataDir, 'out') });

    expect(run.summary.status).toBe('completed');
    expect(run.summary.max_error_rate).toBe(0.05);
    const all = await resultRecords(fs.readFileSync(run.files.all!));
    const failed = all.filter((r) => r.status === 'error');
    expect(failed.length).toBe(run.summary.rows.error);
    expect(failed.length).toBeGreaterThan(40);
    expect(failed.length).toBeLessThanOrEqual(150);
    expect(failed.every((r) => r.credits === '0' && r.error === 'provider_502' && failEvery(50).test(r.email!))).toBe(true);
    // The errors export holds those rows, in input order, with their original cells.
    const errors = await resultRecords(fs.readFileSync(run.files.errors!));
    expect(errors).toEqual(failed);
    const charged = all.filter((r) => r.credits === '1').length;
    expect(run.summary.credits_used).toBe(charged);
    expect((await e.deps.billing.requireAccount(account.id)).credits).toBe(100_000 - charged);
  });
});

describe('a job over its failure budget', () => {
  it('fails with error_budget_exceeded; retry-failed re-runs only the failed rows, completes it, and charges only rows that succeed', async () => {
    const clean = await cleanRun((await setUp(NONE)).file);
    // 1 key in 8 fails: 12.5% of the rows, over a 10% budget.
    const failing = { test: failEvery(8).test };
    const { e, file, account } = await setUp(failing);
    const run = await runJob(e, { file, type: 'gender', accountId: account.id, maxErrorRate: '0.1', outDir: path.join(e.dataDir, 'out') });

    expect(run.summary).toMatchObject({ status: 'failed', reason: 'error_budget_exceeded', max_error_rate: 0.1 });
    expect(run.summary.error_message).toContain('retry-failed');
    // It fails at the checkpoint that crosses the line, not at the end of the file.
    expect(run.summary.rows.error).toBeGreaterThan(300);
    expect(run.summary.rows.processed).toBeLessThan(3_000);
    const spentBefore = 100_000 - (await e.deps.billing.requireAccount(account.id)).credits;
    expect(spentBefore).toBe(run.summary.credits_used);
    // Its end is announced like any other: one bulk.completed, carrying the failed status.
    // The port shows queued events only through a webhook: one subscribed now gets every event not yet relayed.
    const { webhook } = await e.webhooks.store.create({ accountId: account.id, kind: 'generic', url: 'http://127.0.0.1:9/', events: ['bulk.completed'], description: '', isActive: true, now: Date.now() });
    await e.webhooks.deliveries.relayOutbox(Date.now());
    const events = await e.webhooks.deliveries.list(webhook.id, 100);
    expect(events.map((d) => (d.payload as { data: unknown }).data)).toEqual([expect.objectContaining({ id: run.summary.id, status: 'failed', reason: 'error_budget_exceeded' })]);

    // The provider is back for all but 1 key in 40: the retry completes the job with those still failing.
    failing.test = failEvery(40).test;
    const asked: string[] = [];
    const provider = e.deps.providers.get('gender')!;
    (e.deps.providers as Map<string, LookupProvider>).set('gender', {
      ...provider,
      lookup: (keys, signal) => {
        asked.push(...keys);
        return provider.lookup(keys, signal);
      },
    });
    const retried = await e.jobService.retryFailed(run.summary.id);
    expect(retried.status).toBe('running');
    await runUntilSettled(e, run.summary.id);
    const afterFirst = await e.jobService.get(run.summary.id);
    expect(afterFirst.status).toBe('completed');
    // Only the failed rows' keys were asked again, apart from rows the first run never reached.
    const unreached = 3_000 - run.summary.rows.processed;
    expect(asked.filter((k) => failEvery(8).test(k)).length).toBeGreaterThan(0);
    expect(asked.filter((k) => !failEvery(8).test(k)).length).toBeLessThanOrEqual(unreached);
    const stillFailing = (await resultRecords(await resultText(e, run.summary.id, 'errors'))).map((r) => r.email);
    expect(stillFailing.length).toBe(afterFirst.errorRows);
    expect(stillFailing.length).toBeGreaterThan(0);
    expect(stillFailing.every((email) => failEvery(40).test(email!))).toBe(true);

    // A second retry with the provider healthy: the files and the charges equal a run that never failed.
    failing.test = NONE.test;
    asked.length = 0;
    await e.jobService.retryFailed(run.summary.id);
    await runUntilSettled(e, run.summary.id);
    const done = await e.jobService.get(run.summary.id);
    expect(done.status).toBe('completed');
    expect(new Set(asked)).toEqual(new Set(stillFailing.filter((email, i) => stillFailing.indexOf(email) === i)));
    expect(await resultText(e, run.summary.id, 'all')).toBe(clean.all);
    expect(await resultText(e, run.summary.id, 'found')).toBe(clean.found);
    expect((await resultRecords(await resultText(e, run.summary.id, 'errors'))).length).toBe(0);
    expect(done.creditsUsed).toBe(clean.credits);
    expect(await e.deps.billing.chargeCountForJob(done.id)).toBe(clean.credits);
    expect(100_000 - (await e.deps.billing.requireAccount(account.id)).credits).toBe(clean.credits);
    expect(done).toMatchObject({
      processedRows: clean.rows.processed,
      foundRows: clean.rows.found,
      invalidRows: clean.rows.invalid,
      duplicateRows: clean.rows.duplicate,
      errorRows: 0,
    });
    // With nothing left to retry, asking again is refused with a stable code.
    await expect(() => e.jobService.retryFailed(done.id)).rejects.toThrow(expect.objectContaining({ code: 'nothing_to_retry' }));
  });

  it('a budget of 0 fails the job at its first failed row; a budget of 1 never fails it', async () => {
    const strict = await setUp(failEvery(500));
    const zero = await runJob(strict.e, { file: strict.file, type: 'gender', accountId: strict.account.id, maxErrorRate: '0', outDir: path.join(strict.e.dataDir, 'out') });
    expect(zero.summary).toMatchObject({ status: 'failed', reason: 'error_budget_exceeded' });
    // The checkpoint that met the first failure is kept: its rows are committed, nothing after it.
    expect(zero.summary.rows.error).toBeGreaterThanOrEqual(1);
    expect(zero.summary.rows.processed).toBeLessThanOrEqual(200);

    const lax = await setUp({ test: () => true });
    const one = await runJob(lax.e, { file: lax.file, type: 'gender', accountId: lax.account.id, maxErrorRate: '1', outDir: path.join(lax.e.dataDir, 'out') });
    expect(one.summary.status).toBe('completed');
    expect(one.summary.rows.error).toBe(3_000 - one.summary.rows.invalid);
    expect(one.summary.credits_used).toBe(0);
  });

  it('a job that kept no record of its failed rows (finished before they were kept) is refused, and stays completed', async () => {
    const { e, file, account } = await setUp(failEvery(50));
    const run = await runJob(e, { file, type: 'gender', accountId: account.id, outDir: path.join(e.dataDir, 'out') });
    expect(run.summary.status).toBe('completed');
    expect(run.summary.rows.error).toBeGreaterThan(0);
    // SQLite only: no store operation forgets a chunk's row flags, so the test reaches into the file.
    const db = openDatabase(path.join(e.dataDir, 'sluice.db'), { synchronous: 'NORMAL', busyTimeoutMs: 5000 });
    try {
      db.prepare('UPDATE job_chunks SET row_flags = NULL WHERE job_id = ?').run(run.summary.id);
    } finally {
      db.close();
    }
    await expect(() => e.jobService.retryFailed(run.summary.id)).rejects.toThrow(expect.objectContaining({ code: 'nothing_to_retry', statusCode: 409 }));
    expect(await e.jobService.get(run.summary.id)).toMatchObject({ status: 'completed', phase: 'done' });
  });

  it('a running or queued job cannot be retried, and a job without failed rows has nothing to retry', async () => {
    const { e, file, account } = await setUp(NONE);
    const run = await runJob(e, { file, type: 'gender', accountId: account.id, outDir: path.join(e.dataDir, 'out') });
    expect(run.summary.status).toBe('completed');
    await expect(() => e.jobService.retryFailed(run.summary.id)).rejects.toThrow(expect.objectContaining({ code: 'nothing_to_retry', statusCode: 409 }));
    const queued = await e.jobService.submit({ accountId: account.id, type: 'gender', body: fs.createReadStream(file), inputName: 'in.csv', options: {} });
    await expect(() => e.jobService.retryFailed(queued.id)).rejects.toThrow(expect.objectContaining({ code: 'invalid_state', statusCode: 409 }));
  });
});
