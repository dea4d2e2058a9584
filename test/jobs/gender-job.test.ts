import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runJob } from '../../src/cli/run-command.js';
import type { LookupProvider } from '../../src/lookups/lookup-provider.js';
import { normaliseEmail } from '../../pipelines/gender.js';
import { parseCsv, resultRecords, writeGenderCsv } from '../support/csv-fixture.js';
import { cachedProvider, engineScope, TEST_STORES, tempDir, type TestEngine } from '../support/test-engine.js';

describe.each(TEST_STORES)('a gender job on the embedded default, on %s', (store) => {
  const engines = engineScope(store);
  afterEach(() => engines.closeAll());
  const engine = (env: Record<string, string> = {}): Promise<TestEngine> => engines.open(env);

  it('writes one result row per input row, in order, and charges each valid address once', async () => {
    const e = await engine();
    const input = await writeGenderCsv(e.dataDir, 'in.csv', { rows: 3000, seed: 7, duplicateShare: 0.15, invalidShare: 0.05 });
    const account = await e.deps.billing.createAccount({ credits: 10_000, now: Date.now() });

    const run = await runJob(e, { file: input, type: 'gender', accountId: account.id, outDir: path.join(e.dataDir, 'out') });

    expect(run.summary.status).toBe('completed');
    const inputRows = await parseCsv(fs.readFileSync(input));
    const all = await resultRecords(fs.readFileSync(run.files.all!));
    expect(all).toHaveLength(inputRows.length - 1);
    // Original columns come back unchanged and in order (the fixture's formula cells aside).
    all.forEach((row, i) => expect(row.id).toBe(inputRows[i + 1]![0]));

    const byStatus = (s: string) => all.filter((r) => r.status === s);
    const unique = new Set(byStatus('ok').map((r) => r.email!.trim().toLowerCase()));
    expect(unique.size).toBe(byStatus('ok').length);
    expect(byStatus('invalid').length).toBeGreaterThan(0);
    expect(byStatus('duplicate').length).toBeGreaterThan(0);
    expect(byStatus('invalid').every((r) => r.credits === '0' && r.error !== '' && r.gender === '')).toBe(true);
    expect(byStatus('duplicate').every((r) => r.credits === '0')).toBe(true);
    expect(byStatus('duplicate').every((r) => unique.has(r.email!.trim().toLowerCase()))).toBe(true);

    const charged = byStatus('ok').filter((r) => r.credits === '1').length;
    expect(charged).toBe(unique.size);
    expect(run.summary.credits_used).toBe(charged);
    expect((await e.deps.billing.requireAccount(account.id)).credits).toBe(10_000 - charged);
    expect(await e.deps.billing.chargeCountForJob(run.summary.id)).toBe(charged);
    expect(run.summary.rows).toMatchObject({
      total: all.length,
      processed: all.length,
      invalid: byStatus('invalid').length,
      duplicate: byStatus('duplicate').length,
      error: 0,
    });

    const found = await resultRecords(fs.readFileSync(run.files.found!));
    expect(found.map((r) => r.id)).toEqual(all.filter((r) => r.gender === 'male' || r.gender === 'female').map((r) => r.id));
    expect(found.length).toBe(run.summary.rows.found);
    expect(found.length).toBeGreaterThan(0);
  });

  it('charges nothing the second time the same account sends the same file, and says the answers were cached', async () => {
    const e = await engine();
    const providers = e.deps.providers as Map<string, LookupProvider>;
    providers.set('gender', cachedProvider(providers.get('gender')!));
    const input = await writeGenderCsv(e.dataDir, 'in.csv', { rows: 1200, seed: 3 });
    const account = await e.deps.billing.createAccount({ credits: 5_000, now: Date.now() });
    const first = await runJob(e, { file: input, type: 'gender', accountId: account.id, outDir: path.join(e.dataDir, 'a') });
    const balance = (await e.deps.billing.requireAccount(account.id)).credits;

    const second = await runJob(e, { file: input, type: 'gender', accountId: account.id, outDir: path.join(e.dataDir, 'b') });

    expect(first.summary.credits_used).toBeGreaterThan(0);
    expect(second.summary.credits_used).toBe(0);
    expect((await e.deps.billing.requireAccount(account.id)).credits).toBe(balance);
    const rows = await resultRecords(fs.readFileSync(second.files.all!));
    const ok = rows.filter((r) => r.status === 'ok');
    expect(ok.length).toBeGreaterThan(0);
    expect(ok.every((r) => r.cached === 'true' && r.credits === '0')).toBe(true);
    // The cache holds the answers under the keys the account paid for (what the embedded test below reads).
    const paid = await paidKeys(e, input, account.id, first.summary.id);
    expect(paid).toHaveLength(first.summary.credits_used);
    expect((await e.deps.results.getMany('gender', paid, 0)).size).toBe(paid.length);
  });

  it('on the embedded engine, which answers locally, a repeat is free and goes past the result cache', async () => {
    const e = await engine();
    const input = await writeGenderCsv(e.dataDir, 'in.csv', { rows: 600, seed: 4 });
    const account = await e.deps.billing.createAccount({ credits: 5_000, now: Date.now() });
    const first = await runJob(e, { file: input, type: 'gender', accountId: account.id, outDir: path.join(e.dataDir, 'a') });
    const second = await runJob(e, { file: input, type: 'gender', accountId: account.id, outDir: path.join(e.dataDir, 'b') });

    expect(first.summary.credits_used).toBeGreaterThan(0);
    expect(second.summary.credits_used).toBe(0);
    // Every key the engine looked up is one the first run paid for: none of them is in the cache.
    const looked = await paidKeys(e, input, account.id, first.summary.id);
    expect(looked).toHaveLength(first.summary.credits_used);
    expect((await e.deps.results.getMany('gender', looked, 0)).size).toBe(0);
    const before = await resultRecords(fs.readFileSync(first.files.all!));
    const after = await resultRecords(fs.readFileSync(second.files.all!));
    const ok = after.filter((r) => r.status === 'ok');
    expect(ok.length).toBeGreaterThan(0);
    expect(ok.every((r) => r.cached === 'false' && r.credits === '0')).toBe(true);
    // The same answers, but for what was charged.
    const answers = (rows: typeof before) => rows.map((r) => [r.id, r.gender, r.country, r.probability, r.status]);
    expect(answers(after)).toEqual(answers(before));
  });

  it('charges another account for the same addresses: the repeat-free window is per account', async () => {
    const e = await engine();
    const input = await writeGenderCsv(e.dataDir, 'in.csv', { rows: 400, seed: 5 });
    const a = await e.deps.billing.createAccount({ credits: 1_000, now: Date.now() });
    const b = await e.deps.billing.createAccount({ credits: 1_000, now: Date.now() });
    const first = await runJob(e, { file: input, type: 'gender', accountId: a.id, outDir: path.join(e.dataDir, 'a') });
    const second = await runJob(e, { file: input, type: 'gender', accountId: b.id, outDir: path.join(e.dataDir, 'b') });
    expect(second.summary.credits_used).toBe(first.summary.credits_used);
    expect(second.summary.credits_used).toBeGreaterThan(0);
  });

  it('fails a file over the row limit with too_many_rows before any charge', async () => {
    const e = await engine({ SLUICE_MAX_ROWS: '999' });
    const input = await writeGenderCsv(e.dataDir, 'in.csv', { rows: 1000, seed: 1 });
    const account = await e.deps.billing.createAccount({ credits: 5_000, now: Date.now() });
    const run = await runJob(e, { file: input, type: 'gender', accountId: account.id });
    expect(run.summary).toMatchObject({ status: 'failed', reason: 'too_many_rows', credits_used: 0 });
    expect((await e.deps.billing.requireAccount(account.id)).credits).toBe(5_000);
    expect(await e.deps.billing.chargeCountForJob(run.summary.id)).toBe(0);
  });

  it('reads the column the caller names, and a file with no header row from its first column', async () => {
    const e = await engine();
    const dir = tempDir();
    const account = await e.deps.billing.createAccount({ credits: 100, now: Date.now() });
    const named = path.join(dir, 'named.csv');
    fs.writeFileSync(named, 'id,Work Address,email\n1,maria.rossi@example.com,not-used\n');
    const headerless = path.join(dir, 'headerless.csv');
    fs.writeFileSync(headerless, 'john.smith@example.com,a\nMARIA@example.com,b\n');

    const a = await runJob(e, { file: named, type: 'gender', accountId: account.id, column: 'work address', outDir: path.join(dir, 'a') });
    const b = await runJob(e, { file: headerless, type: 'gender', accountId: account.id, outDir: path.join(dir, 'b') });

    expect((await resultRecords(fs.readFileSync(a.files.all!)))[0]).toMatchObject({ gender: 'female', status: 'ok', credits: '1' });
    const rowsB = await parseCsv(fs.readFileSync(b.files.all!));
    expect(rowsB[0]).toEqual(['email', 'column_2', 'gender', 'country', 'probability', 'status', 'credits', 'cached', 'error']);
    expect(rowsB.slice(1).map((r) => [r[0], r[1], r[2]])).toEqual([
      ['john.smith@example.com', 'a', 'male'],
      ['MARIA@example.com', 'b', 'female'],
    ]);
  });
});

/**
 * The input's keys that the job paid for: the billing cache keeps names, not keys (chargedKeys
 * answers names), so the file's normalised addresses are matched against them.
 */
async function paidKeys(e: TestEngine, input: string, accountId: string, jobId: string): Promise<string[]> {
  const names = new Set(await e.deps.billing.chargedKeys(accountId, jobId));
  const [header, ...rows] = await parseCsv(fs.readFileSync(input));
  const column = header!.indexOf('email');
  const keys = new Set(rows.flatMap((cells) => {
    const normalised = normaliseEmail(cells[column] ?? '');
    return normalised.ok ? [normalised.key] : [];
  }));
  return [...keys].filter((key) => names.has(e.deps.billing.keyName('gender', key)));
}
