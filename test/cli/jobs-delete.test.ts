import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { jobsCommand } from '../../src/cli/jobs-command.js';
import { captureIo } from '../support/capture-io.js';
import { cliEnv, parseJson, queueJob, removeScratchDirs, runCli, scratchDir } from '../support/cli-process.js';
import { writeGenderCsv } from '../support/csv-fixture.js';
import { engineScope, runUntilSettled, TEST_STORES, type TestEngine } from '../support/test-engine.js';

/** The job's objects as the embedded S3 server holds them on disk. */
function objectsOf(dataDir: string, bucket: string, jobId: string): string[] {
  const root = path.join(dataDir, 's3', 'buckets', bucket);
  if (!fs.existsSync(root)) return [];
  return (fs.readdirSync(root, { recursive: true }) as string[])
    .filter((f) => f.endsWith('._S3rver_object'))
    .map((f) => f.slice(0, -'._S3rver_object'.length).split(path.sep).join('/'))
    .filter((k) => k.startsWith(`inputs/${jobId}.`) || k.startsWith(`jobs/${jobId}/`) || k.startsWith(`results/${jobId}/`));
}

async function rejection(call: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await call;
  } catch (e: unknown) {
    return e as { code?: string; message: string };
  }
  throw new Error('expected a rejection');
}

describe.each(TEST_STORES)('sluice jobs delete on %s', (store) => {
  const engines = engineScope(store);
  afterEach(() => engines.closeAll());

  async function completed(e: TestEngine, accountId: string): Promise<string> {
    const input = await writeGenderCsv(e.dataDir, `in-${Math.random()}.csv`, { rows: 40, seed: 7 });
    const job = await e.jobService.submit({ accountId, type: 'gender', body: fs.createReadStream(input), inputName: null, options: {} });
    await runUntilSettled(e, job.id);
    return job.id;
  }

  it('deletes a finished job\'s files, keeps its record and ledger, records a cli audit entry once, and is idempotent', async () => {
    const e = await engines.open();
    const account = await e.deps.billing.createAccount({ credits: 1_000, now: e.deps.clock.now() });
    const id = await completed(e, account.id);
    const ledger = await e.deps.billing.ledger(account.id);
    expect(objectsOf(e.dataDir, e.config.s3.bucket, id).length).toBeGreaterThan(0);

    const out = captureIo();
    expect(await jobsCommand(e, ['delete', id, '--json'], out.io)).toBe(0);
    expect(JSON.parse(out.stdout())).toMatchObject({ id, status: 'completed', deleted_reason: 'requested', files_deleted: true });
    expect(objectsOf(e.dataDir, e.config.s3.bucket, id)).toEqual([]);
    expect(await e.deps.billing.ledger(account.id)).toEqual(ledger);

    const again = captureIo();
    expect(await jobsCommand(e, ['delete', id], again.io)).toBe(0);
    expect(again.stdout()).toContain('already');

    const shown = captureIo();
    await jobsCommand(e, ['show', id, '--json'], shown.io);
    expect(JSON.parse(shown.stdout())).toMatchObject({ id, status: 'completed', deleted_reason: 'requested', deleted_at: expect.any(String) });
    expect(await rejection(jobsCommand(e, ['download', id, '--out', path.join(e.dataDir, 'x.csv')], captureIo().io))).toMatchObject({ code: 'job_deleted' });
    expect(await rejection(jobsCommand(e, ['retry-failed', id], captureIo().io))).toMatchObject({ code: 'job_deleted' });

    const audit = await e.deps.store.audit.list(account.id, { limit: 10 });
    expect(audit.filter((a) => a.action === 'job.deleted')).toEqual([expect.objectContaining({ actorType: 'cli', targetId: id })]);
  });

  it('refuses a queued job with invalid_state, saying to cancel it first, and leaves its input', async () => {
    const e = await engines.open();
    const account = await e.deps.billing.createAccount({ credits: 1_000, now: e.deps.clock.now() });
    const input = await writeGenderCsv(e.dataDir, 'queued.csv', { rows: 10, seed: 8 });
    const job = await e.jobService.submit({ accountId: account.id, type: 'gender', body: fs.createReadStream(input), inputName: null, options: {} });

    const refused = await rejection(jobsCommand(e, ['delete', job.id], captureIo().io));
    expect(refused).toMatchObject({ code: 'invalid_state' });
    expect(refused.message).toContain('cancel it first');
    expect(objectsOf(e.dataDir, e.config.s3.bucket, job.id)).toEqual([`inputs/${job.id}.csv`]);
  });
});

describe('the sluice jobs delete command', () => {
  afterEach(() => removeScratchDirs());

  it('exits 0 after deleting, and 1 with one clean line naming invalid_state for a job still queued', async () => {
    const root = scratchDir('sluice-delete-');
    const dataDir = path.join(root, 'data');
    const env = cliEnv(dataDir);
    const input = await writeGenderCsv(root, 'in.csv', { rows: 20, seed: 5 });
    const run = await runCli(['run', input, '--json', '--out', path.join(root, 'out')], env);
    expect(run.code, run.stderr).toBe(0);
    const done = parseJson(run).id as string;
    const { jobId: queued } = await queueJob(dataDir, input, { credits: 100 });

    const deleted = await runCli(['jobs', 'delete', done, '--json'], env);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(parseJson(deleted)).toMatchObject({ id: done, files_deleted: true });
    expect(objectsOf(dataDir, 'sluice', done)).toEqual([]);

    const refused = await runCli(['jobs', 'delete', queued], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('(invalid_state)');
    expect(refused.stderr).toContain('cancel it first');
    expect(refused.stderr).not.toMatch(/^\s+at /m);
  });
});
