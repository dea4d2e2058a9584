import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseCsv, resultRecords, writeGenderCsv } from '../support/csv-fixture.js';
import { waitFor } from '../support/child-worker.js';
import { cliEnv, DbPeek, exitWithin, killChildren, parseJson, queueJob, removeScratchDirs, runCli, scratchDir, spawnCli, type CliResult } from '../support/cli-process.js';
import { writeFile } from '../support/test-engine.js';

const peeks: DbPeek[] = [];
afterEach(async () => {
  await killChildren();
  for (const peek of peeks.splice(0)) peek.close();
  removeScratchDirs();
});

interface Sandbox {
  root: string;
  dataDir: string;
  env: NodeJS.ProcessEnv;
}

/** A temp dir for inputs and outputs, and a data dir inside it that no other test shares. */
function sandbox(extra: Record<string, string> = {}): Sandbox {
  const root = scratchDir('sluice-cli-');
  const dataDir = path.join(root, 'data');
  return { root, dataDir, env: cliEnv(dataDir, { SLUICE_POLL_MS: '20', ...extra }) };
}

function peek(dataDir: string): DbPeek {
  const p = new DbPeek(dataDir);
  peeks.push(p);
  return p;
}

async function createAccount(box: Sandbox, credits: number): Promise<string> {
  const created = await runCli(['accounts', 'create', '--credits', String(credits), '--json'], box.env);
  expect(created.code, created.stderr).toBe(0);
  return parseJson(created).id as string;
}

/** Read straight from SQLite: each CLI start costs a second, and `accounts show` has its own test. */
function balance(box: Sandbox, accountId: string): number {
  return peek(box.dataDir).credits(accountId);
}

async function showJob(box: Sandbox, jobId: string): Promise<Record<string, any>> {
  const shown = await runCli(['jobs', 'show', jobId, '--json'], box.env);
  expect(shown.code, shown.stderr).toBe(0);
  return parseJson(shown);
}

/** A user error is one line naming its code, never a stack trace. */
function expectCleanError(result: CliResult, code: number, errorCode: string): void {
  expect(result.code, `stdout: ${result.stdout}\nstderr: ${result.stderr}`).toBe(code);
  expect(result.stderr).toContain(`(${errorCode})`);
  expect(result.stderr).not.toMatch(/^\s+at /m);
}

async function dataRows(file: string): Promise<number> {
  return (await parseCsv(fs.readFileSync(file))).length - 1;
}

const COMMANDS = [
  'serve',
  'run FILE',
  'worker',
  'jobs list',
  'jobs show ID',
  'jobs resume ID',
  'jobs cancel ID',
  'jobs download ID',
  'accounts create',
  'accounts topup ID N',
  'accounts show ID',
  'accounts list',
  'keys create',
  'keys list',
  'demo',
];

describe('the sluice command line', () => {
  it('--help exits 0 and lists every command; no command prints the same usage and exits 2', async () => {
    const box = sandbox();
    const [help, bare] = await Promise.all([runCli(['--help'], box.env), runCli([], box.env)]);

    expect(help.code).toBe(0);
    for (const command of COMMANDS) expect(help.stdout).toContain(`sluice ${command}`);
    expect(bare.code).toBe(2);
    expect(bare.stdout).toBe(help.stdout);
    expect(fs.existsSync(box.dataDir)).toBe(false);
  });

  it('an unknown command exits 2 and names the command', async () => {
    const box = sandbox();
    const result = await runCli(['frobnicate', 'now'], box.env);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('unknown command "frobnicate"');
    expect(result.stdout).toBe('');
  });

  it('a bad flag, a bad flag value or a missing argument exits 2 with bad_argument', async () => {
    // One data dir each: these processes run at once, and none is to depend on another's S3 host.
    const results = await Promise.all([
      runCli(['accounts', 'list', '--frobnicate'], sandbox().env),
      runCli(['jobs', 'list', '--limit', 'ten'], sandbox().env),
      runCli(['jobs', 'show'], sandbox().env),
      runCli(['run', path.join(scratchDir(), 'missing.csv')], sandbox().env),
    ]);
    for (const result of results) expectCleanError(result, 2, 'bad_argument');
    expect(results[0]!.stderr).toContain('--frobnicate');
  });

  it('a bad setting exits 2, names the variable and touches no data dir', async () => {
    const box = sandbox();
    const result = await runCli(['worker'], { ...box.env, SLUICE_CHUNK_ROWS: 'abc' });
    expectCleanError(result, 2, 'bad_config');
    expect(result.stderr).toContain('SLUICE_CHUNK_ROWS');
    expect(fs.existsSync(box.dataDir)).toBe(false);
  });
});

describe('sluice accounts', () => {
  it('create, topup, show and list agree on the balance', async () => {
    const box = sandbox();
    const created = await runCli(['accounts', 'create', '--credits', '50', '--email', 'ops@example.com', '--json'], box.env);
    expect(created.code, created.stderr).toBe(0);
    const account = parseJson(created);
    expect(account).toMatchObject({ credits: 50, available: 50, email: 'ops@example.com', status: 'active' });
    expect(account.id).toMatch(/^acc_/);

    const topup = await runCli(['accounts', 'topup', account.id, '25', '--json'], box.env);
    expect(topup.code, topup.stderr).toBe(0);
    expect(parseJson(topup)).toMatchObject({ id: account.id, credits: 75, available: 75 });

    // One after another: processes that share a data dir at once are the subject of shared-data-dir.test.ts.
    const shown = await runCli(['accounts', 'show', account.id], box.env);
    const listed = await runCli(['accounts', 'list', '--json'], box.env);
    const unknown = await runCli(['accounts', 'topup', 'acc_nobody', '5'], box.env);
    const zero = await runCli(['accounts', 'topup', account.id, '0'], box.env);
    expect(shown.stdout).toContain(`account    ${account.id}`);
    expect(shown.stdout).toMatch(/^credits\s+75 \(75 not reserved\)$/m);
    expect(parseJson(listed)).toEqual({ accounts: [{ ...account, credits: 75, available: 75 }] });
    expectCleanError(unknown, 1, 'account_not_found');
    expectCleanError(zero, 2, 'bad_argument');
    expect(balance(box, account.id)).toBe(75);
  });

  it('creating an account whose id is taken exits 1 with account_exists in one line, not with a stack trace', async () => {
    const box = sandbox();
    const first = await runCli(['accounts', 'create', '--id', 'acme', '--credits', '10'], box.env);
    expect(first.code, first.stderr).toBe(0);

    const again = await runCli(['accounts', 'create', '--id', 'acme', '--credits', '10'], box.env);

    expectCleanError(again, 1, 'account_exists');
    expect(again.stderr).toMatch(/^sluice: .*acme.*\(account_exists\)\n$/);
    expect(balance(box, 'acme')).toBe(10);
  });
});

describe('sluice run', () => {
  it('--json prints one JSON document: the completed job, its counts, its credits and its result files', async () => {
    const box = sandbox({ SLUICE_CHUNK_ROWS: '500', SLUICE_BATCH_ROWS: '100' });
    const input = await writeGenderCsv(box.root, 'in.csv', { rows: 1200, seed: 41, duplicateShare: 0.1, invalidShare: 0.05 });
    const accountId = await createAccount(box, 10_000);
    const out = path.join(box.root, 'out');

    const run = await runCli(['run', input, '--account', accountId, '--json', '--out', out], box.env);

    expect(run.code, run.stderr).toBe(0);
    const job = parseJson(run);
    expect(job).toMatchObject({ type: 'gender', status: 'completed', reason: null, account_id: accountId, input_name: 'in.csv', percent: 100 });
    expect(job.id).toMatch(/^job_/);
    expect(job.files).toEqual({ all: path.join(out, 'all.csv'), found: path.join(out, 'found.csv'), errors: path.join(out, 'errors.csv') });
    // No row failed: the errors file is the header alone.
    expect(fs.readFileSync(job.files.errors, 'utf8')).toBe(fs.readFileSync(job.files.all, 'utf8').split('\n')[0] + '\n');
    const all = await resultRecords(fs.readFileSync(job.files.all));
    const found = await resultRecords(fs.readFileSync(job.files.found));
    const count = (status: string) => all.filter((r) => r.status === status).length;
    expect(job.rows).toEqual({
      total: await dataRows(input),
      processed: all.length,
      found: found.length,
      invalid: count('invalid'),
      duplicate: count('duplicate'),
      error: 0,
    });
    expect(all.length).toBe(1200);
    expect(count('invalid')).toBeGreaterThan(0);
    expect(count('duplicate')).toBeGreaterThan(0);
    expect(found.length).toBeGreaterThan(0);
    expect(job.credits_used).toBe(all.filter((r) => r.credits === '1').length);
    expect(job.credits_used).toBeGreaterThan(0);
    expect(balance(box, accountId)).toBe(10_000 - job.credits_used);
  });

  it('in human mode prints a summary and the file paths on stdout, the progress on stderr, and exits 0', async () => {
    const box = sandbox();
    const input = await writeGenderCsv(box.root, 'in.csv', { rows: 300, seed: 42 });
    const out = path.join(box.root, 'out');

    const run = await runCli(['run', input, '--out', out], box.env);

    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^job\s+job_\S+ \(gender\)$/m);
    expect(run.stdout).toMatch(/^account\s+local$/m);
    expect(run.stdout).toMatch(/^status\s+completed$/m);
    expect(run.stdout).toMatch(/^rows\s+300\/300 processed/m);
    expect(run.stdout).toMatch(/^credits\s+\d+$/m);
    expect(run.stdout).toContain(`all        ${path.join(out, 'all.csv')}`);
    expect(run.stdout).toContain(`found      ${path.join(out, 'found.csv')}`);
    expect(run.stdout).not.toContain('rows/s');
    expect(run.stderr).toContain('300/300 rows');
    expect(fs.existsSync(path.join(out, 'all.csv'))).toBe(true);
  });

  it('out of credits exits 3 paused; after a topup, jobs resume and a worker process finish it, and the results download', async () => {
    const box = sandbox({ SLUICE_CHUNK_ROWS: '500', SLUICE_BATCH_ROWS: '100' });
    const input = await writeGenderCsv(box.root, 'in.csv', { rows: 1500, seed: 43 });
    const accountId = await createAccount(box, 100);

    const run = await runCli(['run', input, '--account', accountId, '--json', '--out', path.join(box.root, 'out')], box.env);

    expect(run.code, run.stderr).toBe(3);
    const paused = parseJson(run);
    expect(paused).toMatchObject({ status: 'paused', reason: 'insufficient_credits', credits_used: 100, files: {} });
    expect(paused.rows.processed).toBeLessThan(paused.rows.total);
    expect(fs.existsSync(path.join(box.root, 'out'))).toBe(false);
    expect(await showJob(box, paused.id)).toMatchObject({ status: 'paused', reason: 'insufficient_credits', credits_used: 100 });
    expect(balance(box, accountId)).toBe(0);

    // The top-up itself resumes a job paused for credits.
    expect((await runCli(['accounts', 'topup', accountId, '10000'], box.env)).code).toBe(0);
    expect(await showJob(box, paused.id)).toMatchObject({ status: 'running', reason: null, credits_used: 100 });

    const worker = spawnCli(['worker'], box.env);
    const db = peek(box.dataDir);
    expect(await waitFor(() => db.job(paused.id).status === 'completed', 30_000, 25), worker.stderr()).toBe(true);

    const done = await showJob(box, paused.id);
    expect(done).toMatchObject({ status: 'completed', reason: null, percent: 100 });
    expect(done.rows.processed).toBe(1500);
    const foundFile = path.join(box.root, 'found.csv');
    // Both at once is safe here: the worker hosts the embedded S3 server throughout.
    const [foundDownload, link] = await Promise.all([
      runCli(['jobs', 'download', paused.id, '--filter', 'found', '--out', foundFile], box.env),
      runCli(['jobs', 'download', paused.id, '--filter', 'found', '--url', '--json'], box.env),
    ]);
    expect(foundDownload.code, foundDownload.stderr).toBe(0);
    const found = await resultRecords(fs.readFileSync(foundFile));
    expect(found).toHaveLength(done.rows.found);
    expect(found.length).toBeGreaterThan(0);
    expect(found.every((r) => r.gender === 'male' || r.gender === 'female')).toBe(true);
    expect(new Set(found.map((r) => r.id)).size).toBe(found.length);

    // The process that signed the URL has exited; the worker hosts the embedded server.
    expect(link.code, link.stderr).toBe(0);
    const { url, expires_at } = parseJson(link);
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/.*X-Amz-Signature=/);
    // The default life is an hour: a leaked link stops working within the hour.
    expect(new URL(url).searchParams.get('X-Amz-Expires')).toBe('3600');
    expect(Date.parse(expires_at)).toBeGreaterThan(Date.now() + 3_000_000);
    expect(Date.parse(expires_at)).toBeLessThanOrEqual(Date.now() + 3_600_000);
    const response = await fetch(url);
    expect(response.status).toBe(200);
    expect(Buffer.from(await response.arrayBuffer()).equals(fs.readFileSync(foundFile))).toBe(true);
    expect((await fetch(url.replace(/X-Amz-Signature=[0-9a-f]/, 'X-Amz-Signature=x'))).status).toBe(403);

    worker.child.kill('SIGTERM');
    expect(await exitWithin(worker.child, 10_000)).toBe(0);
    expect(balance(box, accountId)).toBe(10_100 - done.credits_used);
  });

  it('a failed job (an empty file) exits 1 with status failed and reason empty_file, and charges nothing', async () => {
    const box = sandbox();
    const accountId = await createAccount(box, 100);
    const empty = writeFile(box.root, 'empty.csv', '');

    const run = await runCli(['run', empty, '--account', accountId, '--json', '--out', path.join(box.root, 'out')], box.env);

    expect(run.code, run.stderr).toBe(1);
    const job = parseJson(run);
    expect(job).toMatchObject({ status: 'failed', reason: 'empty_file', credits_used: 0, files: {} });
    expect(job.error_message).toMatch(/empty/);
    expect(job.finished_at).not.toBeNull();
    expect(await showJob(box, job.id)).toMatchObject({ status: 'failed', reason: 'empty_file', credits_used: 0 });
    expect(balance(box, accountId)).toBe(100);
  });
});

describe('sluice jobs', () => {
  it('cancel moves a queued job to cancelled; cancelling it again is fine', async () => {
    const box = sandbox();
    const input = await writeGenderCsv(box.root, 'in.csv', { rows: 20, seed: 44 });
    const { jobId, accountId } = await queueJob(box.dataDir, input, { credits: 100 });

    const cancel = await runCli(['jobs', 'cancel', jobId, '--json'], box.env);
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(parseJson(cancel)).toMatchObject({ id: jobId, status: 'cancelled', reason: 'cancelled' });
    const again = await runCli(['jobs', 'cancel', jobId, '--json'], box.env);
    expect(again.code, again.stderr).toBe(0);
    expect(parseJson(again)).toMatchObject({ id: jobId, status: 'cancelled' });

    const shown = await showJob(box, jobId);
    const cancelledList = await runCli(['jobs', 'list', '--status', 'cancelled', '--json'], box.env);
    expect(shown).toMatchObject({ status: 'cancelled', credits_used: 0 });
    expect(shown.finished_at).not.toBeNull();
    expect(parseJson(cancelledList)).toMatchObject({ total: 1, jobs: [{ id: jobId, status: 'cancelled' }] });
    expect(balance(box, accountId)).toBe(100);
  });

  it('resume of a completed job is invalid_state, an unknown id is job_not_found, an unknown status exits 2', async () => {
    const box = sandbox();
    const input = await writeGenderCsv(box.root, 'in.csv', { rows: 50, seed: 45 });
    const run = await runCli(['run', input, '--json', '--out', path.join(box.root, 'out')], box.env);
    expect(run.code, run.stderr).toBe(0);
    const job = parseJson(run);

    const [resume, unknown, bogus] = await Promise.all([
      runCli(['jobs', 'resume', job.id], box.env),
      runCli(['jobs', 'show', 'job_does-not-exist'], sandbox().env),
      runCli(['jobs', 'list', '--status', 'bogus'], sandbox().env),
    ]);
    const listed = await runCli(['jobs', 'list', '--json'], box.env);

    expectCleanError(resume, 1, 'invalid_state');
    expectCleanError(unknown, 1, 'job_not_found');
    expectCleanError(bogus, 2, 'bad_argument');
    expect(bogus.stderr).toContain('--status');
    expect(parseJson(listed)).toMatchObject({ total: 1, jobs: [{ id: job.id, status: 'completed', account_id: 'local' }] });
    expect(peek(box.dataDir).job(job.id).status).toBe('completed');
  });
});
