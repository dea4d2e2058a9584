import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliEnv, scratchDir, spawnCli, workerReady, type CliChild } from '../support/cli-process.js';
import { resultRecords, writeGenderCsv } from '../support/csv-fixture.js';
import { STORE_KINDS } from '../../src/storage/store.js';
import { openTestEngine, TEST_SEAL_KEY, TEST_STORES } from '../support/test-engine.js';
import {
  cleanRun,
  cleanRuns,
  expectSameOutcome,
  freezeOutsideWriteLock,
  jobEnd,
  jobOutcome,
  logRecords,
  reliabilityScope,
  waitUntil,
  type StorePeek,
} from './reliability-support.js';

/**
 * Issue #7 item 3: races between real `sluice worker` processes on one data dir and one store,
 * on each store. The outcome is compared with what an uninterrupted run on the same store gives
 * (bytes, keys paid for, ledger, balance), not only with a status.
 */

const GRANT = 100_000;

describe.each(TEST_STORES)('a worker frozen past its lease while another worker takes over its chunk, on %s', (store) => {
  const scope = reliabilityScope(store);
  // Two long chunks of short batches: the frozen worker is caught in the middle of chunk 0, and
  // the worker that takes it over is still in the middle of it when the first one wakes. The freeze
  // lands some batches after it is asked for, more of them on a loaded machine, so chunk 0 keeps
  // 7,000 rows after the point where it is asked for.
  // One seal key for the clean run and the raced ones: keys paid for are compared by their billing-cache names, keyed by it.
  const ENV = { SLUICE_CHUNK_ROWS: '8000', SLUICE_BATCH_ROWS: '100', SLUICE_POLL_MS: '20', SLUICE_LEASE_SECONDS: '2', SLUICE_WORKER_CONCURRENCY: '2', SLUICE_SEAL_KEY: TEST_SEAL_KEY };
  const ROWS = 16_000;

  it('has its late commit refused when it wakes (SIGSTOP, then SIGCONT): files, keys paid for, ledger and balance equal an uninterrupted run', async () => {
    const dir = scratchDir('sluice-freeze-');
    const input = await writeGenderCsv(dir, 'in.csv', { rows: ROWS, seed: 81, duplicateShare: 0.1, invalidShare: 0.03 });
    const reference = await cleanRun(path.join(dir, 'reference'), input, { ...ENV, ...(await scope.engines.env()) }, GRANT);

    // This process hosts the data dir's embedded S3 server and stays up: were the frozen worker
    // the host, the other worker's requests would hang on it, and no take-over could happen.
    const dataDir = path.join(dir, 'data');
    const env = { ...ENV, ...(await scope.engines.env()) };
    const host = await scope.engines.open({ ...env, SLUICE_DATA_DIR: dataDir });
    await host.deps.billing.createAccount({ id: 'acc', credits: GRANT, now: Date.now() });
    const job = await host.jobService.submit({ accountId: 'acc', type: 'gender', body: fs.createReadStream(input), inputName: 'in.csv', options: {} });
    const db = scope.peek(dataDir, env);
    const chunk0 = async () => ({ ...(await db.chunkCursors(job.id))[0]!, takes: (await db.chunkLeaseTakes(job.id))[0]! });

    const first = spawnCli(['worker', '--concurrency', '1'], cliEnv(dataDir, { ...env, SLUICE_LOG_LEVEL: 'warn' }));
    await workerReady(first);
    expect(await waitUntil(async () => ((await db.chunkCursors(job.id))[0]?.cursor ?? 0) >= 1_000, 30_000, 2), first.stderr()).toBe(true);
    await freezeOutsideWriteLock(first.child, db, dataDir);
    const frozen = await chunk0();
    expect(frozen.cursor, 'the freeze landed too late to leave chunk 0 work to take over').toBeLessThan(frozen.row_count - 1_000);

    const second = spawnCli(['worker'], cliEnv(dataDir, { ...env, SLUICE_LOG_LEVEL: 'warn' }));
    const tookOver = await waitUntil(async () => {
      const now = await chunk0();
      return now.takes > frozen.takes && now.cursor >= frozen.cursor + 500;
    }, 30_000, 2);
    expect(tookOver, `chunk 0 was not taken over: ${JSON.stringify(await chunk0())}\n${second.stderr()}`).toBe(true);
    const atWake = await chunk0();
    first.child.kill('SIGCONT');

    expect(frozen.status).toBe('pending');
    expect(atWake.status, 'the second worker finished chunk 0 before the first woke: no race was run').toBe('pending');
    expect(atWake.cursor).toBeLessThan(atWake.row_count);
    expect(await jobEnd(db, job.id, [first, second]), `${first.stderr()}\n${second.stderr()}`).toBe('completed');
    const noticed = await waitUntil(() => logRecords(first.stderr()).some((r) => r.msg === 'lease lost; another worker has the work'), 5_000, 20);
    expect(noticed, `the woken worker did not report its lost lease:\n${first.stderr()}`).toBe(true);
    expect(first.child.exitCode, first.stderr()).toBeNull();
    expect(second.child.exitCode, second.stderr()).toBeNull();
    expect((await db.chunkLeaseTakes(job.id))[0]).toBeGreaterThanOrEqual(2);

    expectSameOutcome(await jobOutcome(host, 'acc', job.id), reference, 'after a frozen worker woke up');
  });
});

describe.each(TEST_STORES)('many jobs of one account with a small balance, in several worker processes, on %s', (store) => {
  const scope = reliabilityScope(store);
  // One seal key for the clean runs and the raced ones: keys paid for are compared by their billing-cache names, keyed by it.
  const ENV = { SLUICE_CHUNK_ROWS: '300', SLUICE_BATCH_ROWS: '50', SLUICE_POLL_MS: '20', SLUICE_WORKER_CONCURRENCY: '2', SLUICE_SEAL_KEY: TEST_SEAL_KEY };
  const JOBS = 4;
  const ROWS = 1_000;
  const WORKERS = 3;
  const BALANCE = 1_200;
  const TOP_UP = 10_000;

  it('never take the balance below 0, charge each address once, and their charges add up to the balance drop; after a top-up and resume the files equal clean runs', async () => {
    const dir = scratchDir('sluice-balance-');
    // Drawn from one pool, so the jobs compete for the same addresses as well as for the balance.
    const inputs = await Promise.all(
      Array.from({ length: JOBS }, (_, i) => writeGenderCsv(dir, `in-${i}.csv`, { rows: ROWS, seed: 90 + i, pool: 2_400, duplicateShare: 0.1, invalidShare: 0.03 })),
    );
    const references = await cleanRuns(path.join(dir, 'reference'), inputs, { ...ENV, ...(await scope.engines.env()) }, GRANT);
    const payable = new Set(references.flatMap((r) => r.chargedKeys));
    expect(payable.size, 'the balance must be too small for the jobs').toBeGreaterThan(BALANCE);

    const dataDir = path.join(dir, 'data');
    const jobIds: string[] = [];
    const env = { ...ENV, ...(await scope.engines.env()) };
    // Closed before the workers start, so that one of them hosts the data dir's embedded S3 server.
    const setup = await openTestEngine({ ...env, SLUICE_DATA_DIR: dataDir });
    try {
      await setup.deps.billing.createAccount({ id: 'acc', credits: BALANCE, now: Date.now() });
      for (const [i, input] of inputs.entries()) {
        jobIds.push((await setup.jobService.submit({ accountId: 'acc', type: 'gender', body: fs.createReadStream(input), inputName: `in-${i}.csv`, options: {} })).id);
      }
    } finally {
      await setup.close();
    }
    const reader = scope.peek(dataDir, env);
    // CAST: PostgreSQL's SUM of BIGINT is NUMERIC, which node-postgres gives as a string.
    const money = async () =>
      (await reader.get<{ credits: number; available: number }>(
        "SELECT credits, credits - (SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) FROM credit_reservations WHERE account_id = 'acc') AS available FROM accounts WHERE id = 'acc'",
      ))!;
    const jobRows = () =>
      Promise.all(
        jobIds.map(
          async (id) =>
            (await reader.get<{ status: string; reason: string | null; credits_used: number; lease_owner: string | null }>('SELECT status, reason, credits_used, lease_owner FROM jobs WHERE id = ?', [id]))!,
        ),
      );
    // A chunk whose batch failed keeps its owner, with a lease that runs to the end of its backoff,
    // and a paused job's chunks are not taken again: only a lease that has not run out is held.
    const leasesHeld = async () =>
      (await reader.get<{ n: number }>('SELECT COUNT(*) AS n FROM job_chunks WHERE lease_owner IS NOT NULL AND lease_expires_at >= ?', [Date.now()]))!.n;
    // What a failed wait shows: the jobs, the chunks still leased, and what the workers warned of.
    const stateNow = async () =>
      JSON.stringify({
        jobs: await jobRows(),
        chunks: await reader.all('SELECT job_id, chunk_index, status, lease_owner, lease_expires_at, failures FROM job_chunks WHERE lease_owner IS NOT NULL'),
        now: Date.now(),
        warnings: workers.flatMap((w) => logRecords(w.stderr()).filter((r) => r.level >= 40)).slice(0, 20),
      });
    const workers: CliChild[] = Array.from({ length: WORKERS }, () => spawnCli(['worker'], cliEnv(dataDir, env)));
    // A dead worker ends the wait too, so that the test fails at once and says why.
    const settled = (done: (status: string) => boolean) => async () =>
      ((await jobRows()).every((j) => done(j.status) && j.lease_owner === null) && (await leasesHeld()) === 0) || workers.some((w) => w.child.exitCode !== null);

    await Promise.all(workers.map((w) => workerReady(w)));
    let lowest = { credits: BALANCE, available: BALANCE };
    const lowestWhile = async (until: () => Promise<boolean>) =>
      waitUntil(async () => {
        const now = await money();
        lowest = { credits: Math.min(lowest.credits, now.credits), available: Math.min(lowest.available, now.available) };
        return until();
      }, 150_000, 2);

    expect(await lowestWhile(settled((s) => s === 'paused' || s === 'completed')), await stateNow()).toBe(true);
    for (const worker of workers) expect(worker.child.exitCode, worker.stderr()).toBeNull();
    const stopped = await jobRows();
    const spent = stopped.reduce((sum, j) => sum + j.credits_used, 0);
    expect(stopped.filter((j) => j.credits_used > 0).length, 'the balance was not shared between jobs').toBeGreaterThan(1);
    expect(stopped.filter((j) => j.status === 'paused').map((j) => j.reason)).toContain('insufficient_credits');
    expect(new Set(stopped.filter((j) => j.status === 'paused').map((j) => j.reason))).toEqual(new Set(['insufficient_credits']));
    expect(lowest.credits).toBeGreaterThanOrEqual(0);
    expect(lowest.available, 'more credits reserved than the balance held').toBeGreaterThanOrEqual(0);
    expect(await money(), 'the balance drop and the reservations left').toEqual({ credits: BALANCE - spent, available: BALANCE - spent });
    await expectLedgerAddsUp(reader, BALANCE - spent, spent);

    const resume = await scope.engines.open({ ...env, SLUICE_DATA_DIR: dataDir });
    await resume.deps.billing.addCredits('acc', TOP_UP, 'topup', Date.now());
    // The top-up resumes the jobs paused for credits; any other pause is resumed by hand.
    for (const [i, job] of stopped.entries()) {
      if (job.status === 'paused' && (await resume.deps.jobs.status(jobIds[i]!)) === 'paused') await resume.jobService.resume(jobIds[i]!);
    }
    expect(await lowestWhile(settled((s) => s === 'completed')), await stateNow()).toBe(true);
    for (const worker of workers) expect(worker.child.exitCode, worker.stderr()).toBeNull();

    const outcomes = await Promise.all(jobIds.map((id) => jobOutcome(resume, 'acc', id)));
    const total = outcomes.reduce((sum, o) => sum + o.creditsUsed, 0);
    expect(total, 'each address the files hold is paid for once, by whichever job came first').toBe(payable.size);
    expect(new Set(outcomes.flatMap((o) => o.chargedKeys))).toEqual(payable);
    expect(await money()).toEqual({ credits: BALANCE + TOP_UP - total, available: BALANCE + TOP_UP - total });
    expect(lowest.credits).toBeGreaterThanOrEqual(0);
    await expectLedgerAddsUp(reader, BALANCE + TOP_UP - total, total);

    // Which job paid for a shared address depends on timing, so `credits` and `cached` may differ
    // from a job run alone; every other cell, and the rows' number and order, may not.
    for (const [i, outcome] of outcomes.entries()) {
      for (const filter of ['all', 'found'] as const) {
        const actual = await resultRecords(outcome[filter]);
        const expected = await resultRecords(references[i]![filter]);
        expect(actual.map(withoutBilling), `${filter}.csv of job ${i}`).toEqual(expected.map(withoutBilling));
      }
      const paidRows = (await resultRecords(outcome.all)).filter((r) => r.credits === '1').length;
      expect(paidRows, `rows marked paid in job ${i}`).toBe(outcome.creditsUsed);
    }
  }, 240_000); // four jobs in three worker processes, then clean runs to compare: minutes on a loaded machine
});

function withoutBilling(row: Record<string, string>): Record<string, string> {
  const { credits: _credits, cached: _cached, ...rest } = row;
  return rest;
}

/**
 * Every ledger line in the order it was written: the running balance never dips below 0, it ends
 * at the account's balance, and the charge lines add up to what the jobs say they used and to the
 * addresses recorded as paid for.
 */
async function expectLedgerAddsUp(reader: StorePeek, balance: number, charged: number): Promise<void> {
  // `seq` numbers the lines as they were written: on PostgreSQL a line takes it after the lock on
  // its account, so two charges of one account get theirs in the order they commit.
  const lines = await reader.all<{ delta: number; reason: string }>("SELECT delta, reason FROM ledger WHERE account_id = 'acc' ORDER BY seq");
  let running = 0;
  let lowest = 0;
  for (const line of lines) {
    running += line.delta;
    lowest = Math.min(lowest, running);
  }
  expect(lowest, 'the ledger went below 0 at some point').toBe(0);
  expect(running).toBe(balance);
  expect(-lines.filter((l) => l.reason === 'charge').reduce((sum, l) => sum + l.delta, 0)).toBe(charged);
  // SQLite keeps recent charges in billing_log until they are merged into billing_cache; a key in
  // both would be a second charge, so the keys are counted once each.
  const paid =
    reader.kind === STORE_KINDS.sqlite
      ? "SELECT kind, key_hash FROM billing_cache WHERE account_seq = (SELECT seq FROM accounts WHERE id = 'acc') UNION SELECT kind, key_hash FROM billing_log WHERE account_seq = (SELECT seq FROM accounts WHERE id = 'acc')"
      : "SELECT kind, key_hash FROM billing_cache WHERE account_seq = (SELECT seq FROM accounts WHERE id = 'acc')";
  const paidKeys = (await reader.get<{ n: number }>(`SELECT COUNT(*) AS n FROM (${paid}) paid`))!.n;
  expect(paidKeys, 'addresses paid for').toBe(charged);
}
