import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/cli-io.js';
import { jobsCommand } from '../../src/cli/jobs-command.js';
import { runCommand } from '../../src/cli/run-command.js';
import { cliEnv, DbPeek, parseJson, removeScratchDirs, runCli, scratchDir } from '../support/cli-process.js';
import { engineScope, TEST_STORES, writeFile, type TestEngine } from '../support/test-engine.js';

/**
 * Issue #18 item 4 on the command line: `sluice run FILE --dry-run` gives the API's figures for the
 * same file (test/api/dry-run.test.ts), makes no job and charges nothing; a file its job would
 * refuse is refused with that job's code.
 */

/** A command's io with both streams kept as text: the estimate goes to stdout, nothing else. */
function textIo(): { io: CliIo; stdout: () => string; stderr: () => string } {
  const streams = [new PassThrough(), new PassThrough()];
  const texts = ['', ''];
  streams.forEach((s, i) => s.on('data', (chunk: Buffer) => (texts[i] += chunk.toString('utf8'))));
  return { io: { stdout: streams[0] as unknown as NodeJS.WriteStream, stderr: streams[1] as unknown as NodeJS.WriteStream }, stdout: () => texts[0]!, stderr: () => texts[1]! };
}

async function rejection(call: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await call;
  } catch (e: unknown) {
    return e as { code?: string; message: string };
  }
  throw new Error('expected a rejection');
}

const PAID = 'email\nmaria.rossi@example.com\n';
const FILE = [
  'email',
  'maria.rossi@example.com',
  'john.smith@example.com',
  'not-an-email',
  '',
  'JOHN.SMITH@example.com',
  'anna.schmidt@example.org',
  'also bad',
].join('\n');

/** What the API answers for FILE after PAID ran on a 50-credit account (test/api/dry-run.test.ts). */
const ESTIMATE = {
  dry_run: true,
  rows: 6,
  valid: 4,
  invalid: 2,
  duplicates: 1,
  repeats: 1,
  credits_needed: 2,
  balance: 49,
  available: 49,
  invalid_by_code: { invalid_email: 2 },
};

describe.each(TEST_STORES)('sluice run --dry-run on %s', (store) => {
  const engines = engineScope(store);
  afterEach(() => engines.closeAll());

  async function jobsListed(e: TestEngine): Promise<unknown> {
    const out = textIo();
    expect(await jobsCommand(e, ['list', '--json'], out.io)).toBe(0);
    return JSON.parse(out.stdout());
  }

  it('gives the API figures, repeats of a real run included; makes no job and leaves the balance', async () => {
    const e = await engines.open();
    const account = await e.deps.billing.createAccount({ credits: 50, now: e.deps.clock.now() });
    const paid = writeFile(e.dataDir, 'paid.csv', PAID);
    const file = writeFile(e.dataDir, 'file.csv', FILE);
    const first = textIo();
    expect(await runCommand(e, [paid, '--account', account.id, '--json', '--out', path.join(e.dataDir, 'paid-out')], first.io)).toBe(0);
    expect(JSON.parse(first.stdout())).toMatchObject({ status: 'completed', credits_used: 1 });
    const before = await jobsListed(e);
    expect(before).toMatchObject({ total: 1 });

    const json = textIo();
    expect(await runCommand(e, [file, '--account', account.id, '--dry-run', '--json'], json.io)).toBe(0);
    expect(JSON.parse(json.stdout())).toEqual(ESTIMATE);

    const human = textIo();
    expect(await runCommand(e, [file, '--account', account.id, '--dry-run'], human.io)).toBe(0);
    expect(human.stdout()).toBe(
      [
        'dry run: no job made, nothing charged',
        'rows:           6 (4 valid, 2 invalid: invalid_email 2)',
        'duplicates:     1 (free)',
        'repeats:        1 (paid for within the window, free)',
        'credits needed: 2',
        'balance:        49 (49 available)',
        '',
      ].join('\n'),
    );
    // The progress bar belongs to a job: a dry run has none to show.
    expect(human.stderr()).toBe('');

    expect(await jobsListed(e)).toEqual(before);
    expect((await e.deps.billing.requireAccount(account.id)).credits).toBe(49);

    // The estimate is what the job then charges.
    const real = textIo();
    expect(await runCommand(e, [file, '--account', account.id, '--json', '--out', path.join(e.dataDir, 'file-out')], real.io)).toBe(0);
    expect(JSON.parse(real.stdout())).toMatchObject({ status: 'completed', credits_used: ESTIMATE.credits_needed });
    expect((await e.deps.billing.requireAccount(account.id)).credits).toBe(49 - ESTIMATE.credits_needed);
  });

  it('refuses a file as its job would fail, with its code; an empty balance may still ask', async () => {
    const e = await engines.open();
    const account = await e.deps.billing.createAccount({ credits: 0, now: e.deps.clock.now() });
    const headerOnly = writeFile(e.dataDir, 'header.csv', 'email\n');
    const noColumn = writeFile(e.dataDir, 'no-column.csv', 'name,city\nMaria,Rome\n');
    const fine = writeFile(e.dataDir, 'fine.csv', 'email\nmaria.rossi@example.com\n');

    expect(await rejection(runCommand(e, [headerOnly, '--account', account.id, '--dry-run', '--json'], textIo().io))).toMatchObject({ code: 'no_rows' });
    expect(await rejection(runCommand(e, [noColumn, '--account', account.id, '--dry-run', '--json'], textIo().io))).toMatchObject({ code: 'no_key_column' });
    const ok = textIo();
    expect(await runCommand(e, [fine, '--account', account.id, '--dry-run', '--json'], ok.io)).toBe(0);
    expect(JSON.parse(ok.stdout())).toMatchObject({ rows: 1, valid: 1, credits_needed: 1, balance: 0, available: 0 });
    expect(await jobsListed(e)).toEqual({ jobs: [], total: 0 });
  });
});

describe('the sluice run --dry-run command', () => {
  const peeks: DbPeek[] = [];
  afterEach(() => {
    for (const p of peeks.splice(0)) p.close();
    removeScratchDirs();
  });

  it('exits 0 with the figures and no job; a refused file exits 1 naming no_rows, a missing one 2', async () => {
    const root = scratchDir('sluice-dry-run-');
    const env = cliEnv(path.join(root, 'data'));
    const created = await runCli(['accounts', 'create', '--credits', '50', '--json'], env);
    expect(created.code, created.stderr).toBe(0);
    const accountId = parseJson(created).id as string;
    const paid = await runCli(['run', writeFile(root, 'paid.csv', PAID), '--account', accountId, '--json', '--out', path.join(root, 'out')], env);
    expect(paid.code, paid.stderr).toBe(0);
    const before = await runCli(['jobs', 'list', '--json'], env);
    expect(parseJson(before)).toMatchObject({ total: 1 });

    const dry = await runCli(['run', writeFile(root, 'file.csv', FILE), '--account', accountId, '--dry-run', '--json'], env);
    expect(dry.code, dry.stderr).toBe(0);
    expect(parseJson(dry)).toEqual(ESTIMATE);

    const refused = await runCli(['run', writeFile(root, 'header.csv', 'email\n'), '--account', accountId, '--dry-run'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^sluice: .*\(no_rows\)\n$/);
    expect(refused.stdout).toBe('');
    const missing = await runCli(['run', path.join(root, 'missing.csv'), '--dry-run'], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('(bad_argument)');

    const after = await runCli(['jobs', 'list', '--json'], env);
    expect(parseJson(after)).toEqual(parseJson(before));
    const db = new DbPeek(path.join(root, 'data'));
    peeks.push(db);
    expect(db.credits(accountId)).toBe(49);
  }, 60_000);
});
