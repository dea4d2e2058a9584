import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runJob } from '../../src/cli/run-command.js';
import { DEFER_PASSES } from '../../src/jobs/deferred-passes.js';
import { waitFor } from '../support/child-worker.js';
import { resultRecords } from '../support/csv-fixture.js';
import { startMailWorld, type MailWorld } from '../support/mail-world.js';
import { engineScope, TEST_STORES, tempDir } from '../support/test-engine.js';

let world: MailWorld;
beforeAll(async () => {
  world = await startMailWorld({ timeoutMs: 1_000 });
});
afterAll(() => world.stop());

const INPUT = [
  'id,email',
  '1,alice@ok.test',
  '2,xavier.q@ok.test',
  '3,anyone@catchall.test',
  '4,x@nullmx.test',
  '5,not an email',
  '6,ALICE@ok.test',
  '7,info@ok.test',
  '8,someone@down.test',
  // A quoted local part, CSV-quoted: the cell is "john doe"@ok.test.
  '9,"""john doe""@ok.test"',
].join('\n');

describe.each(TEST_STORES)('bulk job type validity on %s', (store) => {
  const engines = engineScope(store);
  afterEach(async () => {
    await engines.closeAll();
    expect(world.dataAttempts()).toBe(0);
  });

  it('writes status, reason and flags per row; charges settled answers once; a row no server could answer is an uncharged error', async () => {
    // Short deferred passes: the 421 host's row is tried again 4 times before it stays an error.
    const e = await engines.open({ ...world.env, SLUICE_DEFER_RETRY_MS: '20' });
    const account = await e.deps.billing.createAccount({ id: 'acc', credits: 100, now: Date.now() });
    const dir = tempDir();
    const file = path.join(dir, 'in.csv');
    fs.writeFileSync(file, INPUT);
    // One row of nine fails on purpose (the 421 host): above the default 5% failure budget.
    const run = await runJob(e, { file, type: 'validity', accountId: account.id, outDir: path.join(dir, 'out'), maxErrorRate: '0.5' });
    expect(run.summary, JSON.stringify(run.summary)).toMatchObject({ status: 'completed' });
    const rows = await resultRecords(fs.readFileSync(run.files.all!));
    const pick = (r: Record<string, string>) => [r.id, r.validity, r.validity_reason, r.role_account, r.catch_all, r.smtp_code, r.status, r.credits, r.error];
    expect(rows.map(pick)).toEqual([
      ['1', 'valid', 'accepted', 'false', 'false', '250', 'ok', '1', ''],
      ['2', 'invalid', 'mailbox_not_found', 'false', 'false', '550', 'ok', '1', ''],
      ['3', 'risky', 'catch_all', 'false', 'true', '250', 'ok', '1', ''],
      ['4', 'invalid', 'null_mx', 'false', '', '', 'ok', '1', ''],
      ['5', '', '', '', '', '', 'invalid', '0', 'invalid_email'],
      ['6', 'valid', 'accepted', 'false', 'false', '250', 'duplicate', '0', ''],
      ['7', 'risky', 'role_account', 'true', 'false', '250', 'ok', '1', ''],
      ['8', '', '', '', '', '', 'error', '0', 'smtp_unavailable'],
      // smtp-server refuses this RFC-valid address with 501: the verifier reports it, it does not guess.
      ['9', 'unknown', 'rejected', 'false', 'false', '501', 'ok', '1', ''],
    ]);
    expect(run.summary.credits_used).toBe(6);
    expect((await e.deps.billing.requireAccount(account.id)).credits).toBe(94);
    const found = await resultRecords(fs.readFileSync(run.files.found!));
    expect(found.map((r) => r.id)).toEqual(['1', '6']);
  });

  it('runs beside another lookup in one job, each with its own columns', async () => {
    const e = await engines.open(world.env);
    const account = await e.deps.billing.createAccount({ id: 'acc', credits: 100, now: Date.now() });
    const dir = tempDir();
    const file = path.join(dir, 'in.csv');
    fs.writeFileSync(file, 'email\nanna@ok.test\nalice@ok.test\n');
    const run = await runJob(e, { file, type: 'gender,validity', accountId: account.id, outDir: path.join(dir, 'out') });
    expect(run.summary.status).toBe('completed');
    const rows = await resultRecords(fs.readFileSync(run.files.all!));
    expect(rows.map((r) => [r.email, r.gender, r.validity, r.validity_reason, r.validity_status, r.gender_status, r.credits])).toEqual([
      ['anna@ok.test', 'female', 'invalid', 'mailbox_not_found', 'ok', 'ok', '2'],
      ['alice@ok.test', 'female', 'valid', 'accepted', 'ok', 'ok', '2'],
    ]);
  });

  it('a greylisted row is deferred to a later pass of its chunk without holding the worker: the other chunk finishes meanwhile, and the row is settled and charged once', async () => {
    const e = await engines.open({ ...world.env, SLUICE_CHUNK_ROWS: '10', SLUICE_BATCH_ROWS: '10', SLUICE_WORKER_CONCURRENCY: '1', SLUICE_DEFER_RETRY_MS: '1500' });
    const account = await e.deps.billing.createAccount({ id: 'acc', credits: 100, now: Date.now() });
    const dir = tempDir();
    const file = path.join(dir, 'in.csv');
    const rows = ['email', `dan-${store}@grey.test`, ...Array.from({ length: 19 }, (_, i) => `user${i}@ok.test`)];
    fs.writeFileSync(file, rows.join('\n'));
    const running = runJob(e, { file, type: 'validity', accountId: account.id, outDir: path.join(dir, 'out') });
    // While chunk 0 waits for its deferred pass, the one worker slot does chunk 1.
    let jobId = '';
    const sawDeferred = await waitFor(async () => {
      jobId ||= (await e.deps.jobs.list({ accountId: account.id, limit: 1, offset: 0 })).jobs[0]?.id ?? '';
      if (jobId === '') return false;
      const chunks = await e.deps.jobs.chunks(jobId);
      return chunks.length === 2 && chunks[0]!.pass === 1 && chunks[0]!.status === 'pending' && chunks[1]!.status === 'done';
    }, 20_000, 20);
    expect(sawDeferred).toBe(true);
    const run = await running;
    expect(run.summary.status).toBe('completed');
    const out = await resultRecords(fs.readFileSync(run.files.all!));
    expect([out[0]!.email, out[0]!.validity, out[0]!.validity_reason, out[0]!.status, out[0]!.credits]).toEqual([`dan-${store}@grey.test`, 'valid', 'accepted', 'ok', '1']);
    expect(run.summary.credits_used).toBe(20);
  });

  it(`a row greylisted past the last of ${DEFER_PASSES} deferred passes stays an uncharged error with reason greylisted, and the job ends`, async () => {
    const e = await engines.open({ ...world.env, SLUICE_DEFER_RETRY_MS: '50' });
    const account = await e.deps.billing.createAccount({ id: 'acc', credits: 100, now: Date.now() });
    const dir = tempDir();
    const file = path.join(dir, 'in.csv');
    fs.writeFileSync(file, 'email\nsam@stuck.test\nalice@ok.test\n');
    const asked = world.hosts['stuck.test']!.rcpts.filter((r) => r === 'sam@stuck.test').length;
    const run = await runJob(e, { file, type: 'validity', accountId: account.id, outDir: path.join(dir, 'out'), maxErrorRate: '0.5' });
    expect(run.summary.status).toBe('completed');
    const out = await resultRecords(fs.readFileSync(run.files.all!));
    expect(out.map((r) => [r.email, r.validity, r.status, r.credits, r.error])).toEqual([
      ['sam@stuck.test', '', 'error', '0', 'greylisted'],
      ['alice@ok.test', 'valid', 'ok', '1', ''],
    ]);
    // The first pass and each deferred one asked once: no tight loop against the server.
    expect(world.hosts['stuck.test']!.rcpts.filter((r) => r === 'sam@stuck.test').length - asked).toBe(DEFER_PASSES + 1);
    expect(run.summary.credits_used).toBe(1);
  });
});
