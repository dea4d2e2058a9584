import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { importBreaches, importCommand } from '../../src/cli/import-command.js';
import { runJob } from '../../src/cli/run-command.js';
import type { LookupProvider } from '../../src/lookups/lookup-provider.js';
import { isAppError } from '../../src/shared/errors.js';
import { bearer, closeHarnesses, json, multipart, newAccount, openApiHarness, runUntilDone } from '../support/api-harness.js';
import { captureIo } from '../support/capture-io.js';
import { parseCsv, resultRecords } from '../support/csv-fixture.js';
import { engineScope, failingProvider, TEST_STORES, writeFile, type TestEngine } from '../support/test-engine.js';

const EMAIL_BREACHES = [
  'email,breach,breached_at,data_classes',
  'Jane@Example.com,LinkedIn,2021-06-01,Email addresses;Passwords',
  'jane@example.com,Adobe,2013-10-04,Email addresses; Password hints ;',
  '"Jane Doe <jane@example.com>",LinkedIn,2012-01-01,Names',
  'bob@example.org,Yahoo,,',
  'not-an-email,Adobe,2013-10-04,Passwords',
  'carl@example.net,,2020-01-01,Passwords',
  'carl@example.net,Hooli,2020-02-30,Passwords',
  `carl@example.net,Hooli,2020-02-03,${'x'.repeat(101)}`,
].join('\n');

const PHONE_BREACHES = ['phone,breach,breached_at', '+49 30 1234567,Acme,2019-05-01', 'call me,Acme,2019-05-01'].join('\n');

/** EMAIL_BREACHES as the index must hold it: each pair once, the first date and classes kept, bad lines left out. */
const INDEXED = {
  'jane@example.com': [
    { breach: 'Adobe', breachedAt: '2013-10-04', dataClasses: ['Email addresses', 'Password hints'] },
    { breach: 'LinkedIn', breachedAt: '2021-06-01', dataClasses: ['Email addresses', 'Passwords'] },
  ],
  'bob@example.org': [{ breach: 'Yahoo', breachedAt: null, dataClasses: [] }],
};

/** breached twice, breached once (undated), not breached, invalid, the first address again in another form, blank. */
const INPUT = ['id,email', '1,jane@example.com', '2,bob@example.org', '3,nobody@example.net', '4,not an email', '5,"Jane <JANE@example.com>"', '6,'].join('\n');

const pick = (r: Record<string, string>) => [r.id, r.email_breached, r.breach_count, r.first_breach, r.last_breach, r.breaches, r.exposed_data, r.status, r.credits, r.error];

describe.each(TEST_STORES)('email breaches on %s', (store) => {
  const engines = engineScope(store);
  afterEach(async () => {
    await closeHarnesses();
    await engines.closeAll();
  });

  async function loaded(): Promise<TestEngine> {
    const e = await engines.open();
    await importBreaches(e.deps.store, fs.createReadStream(writeFile(e.dataDir, 'emails.csv', EMAIL_BREACHES)), { maxLineBytes: 65_536 });
    return e;
  }

  describe('sluice import breaches', () => {
    it('loads a file with an email column into the email index, counting bad lines by code, and a phone file into the phone index', async () => {
      const e = await engines.open();
      const emails = captureIo();
      expect(await importCommand(e, ['breaches', writeFile(e.dataDir, 'emails.csv', EMAIL_BREACHES), '--json'], emails.io)).toBe(0);
      expect(JSON.parse(emails.stdout())).toMatchObject({
        rows: 8,
        imported: 3,
        skipped: 1,
        invalid: 4,
        invalid_by_code: { invalid_email: 1, invalid_breach: 1, invalid_date: 1, invalid_data_classes: 1 },
        first_invalid: [
          { row: 6, code: 'invalid_email' },
          { row: 7, code: 'invalid_breach' },
          { row: 8, code: 'invalid_date' },
          { row: 9, code: 'invalid_data_classes' },
        ],
      });
      expect(Object.fromEntries(await e.deps.store.emailBreaches.records(['jane@example.com', 'bob@example.org', 'carl@example.net']))).toEqual(INDEXED);

      const phones = captureIo();
      expect(await importCommand(e, ['breaches', writeFile(e.dataDir, 'phones.csv', PHONE_BREACHES), '--json'], phones.io)).toBe(0);
      expect(JSON.parse(phones.stdout())).toMatchObject({ rows: 2, imported: 1, skipped: 0, invalid: 1, invalid_by_code: { invalid_phone: 1 } });
      expect(Object.fromEntries(await e.deps.store.breaches.records(['+49301234567']))).toEqual({ '+49301234567': [{ breach: 'Acme', breachedAt: '2019-05-01' }] });

      const text = captureIo();
      expect(await importCommand(e, ['breaches', writeFile(e.dataDir, 'more.csv', 'Email,Breach,Breached_At\nbob@example.org,Dropbox,2012-07-01\nbob@example.org,Yahoo,2015-01-01\n')], text.io)).toBe(0);
      expect(text.stdout()).toContain('imported   1');
      expect(text.stdout()).toContain('skipped    1');
      expect((await e.deps.store.emailBreaches.records(['bob@example.org'])).get('bob@example.org')).toEqual([
        { breach: 'Dropbox', breachedAt: '2012-07-01', dataClasses: [] },
        { breach: 'Yahoo', breachedAt: null, dataClasses: [] },
      ]);
    });

    it('changes nothing when the same email file is imported again', async () => {
      const e = await loaded();
      const again = await importBreaches(e.deps.store, fs.createReadStream(writeFile(e.dataDir, 'again.csv', EMAIL_BREACHES)), { maxLineBytes: 65_536 });
      expect(again).toMatchObject({ rows: 8, imported: 0, skipped: 4, invalid: 4 });
      expect(Object.fromEntries(await e.deps.store.emailBreaches.records(['jane@example.com', 'bob@example.org']))).toEqual(INDEXED);
    });

    it('refuses a header with both a phone and an email column, and an email file without breach or breached_at', async () => {
      const e = await engines.open();
      const both = writeFile(e.dataDir, 'both.csv', 'email,phone,breach,breached_at\njane@example.com,+49301234567,Acme,\n');
      await expect(() => importBreaches(e.deps.store, fs.createReadStream(both), { maxLineBytes: 65_536 })).rejects.toSatisfy((err) => isAppError(err, 'ambiguous_column'));
      const partial = writeFile(e.dataDir, 'partial.csv', 'email,breach\njane@example.com,Acme\n');
      await expect(() => importBreaches(e.deps.store, fs.createReadStream(partial), { maxLineBytes: 65_536 })).rejects.toSatisfy((err) => isAppError(err, 'column_not_found'));
      expect(await e.deps.store.emailBreaches.records(['jane@example.com'])).toEqual(new Map());
    });
  });

  describe('an email_breaches job', () => {
    it('answers from the index with its result columns in all and found, charges each valid address once, and a rerun is free', async () => {
      const e = await loaded();
      const input = writeFile(e.dataDir, 'in.csv', INPUT);
      const account = await e.deps.billing.createAccount({ credits: 100, now: Date.now() });

      const run = await runJob(e, { file: input, type: 'email_breaches', accountId: account.id, outDir: path.join(e.dataDir, 'a') });

      expect(run.summary).toMatchObject({ status: 'completed', type: 'email_breaches', credits_used: 3 });
      expect(run.summary.rows).toMatchObject({ total: 6, processed: 6, found: 3, invalid: 2, duplicate: 1, error: 0 });
      const text = fs.readFileSync(run.files.all!, 'utf8');
      expect(text.split('\n')[0]).toBe('id,email,email_breached,breach_count,first_breach,last_breach,breaches,exposed_data,status,credits,cached,error');
      const all = await resultRecords(text);
      const jane = ['true', '2', '2013-10-04', '2021-06-01', 'Adobe;LinkedIn', 'Email addresses;Password hints;Passwords'];
      expect(all.map(pick)).toEqual([
        ['1', ...jane, 'ok', '1', ''],
        ['2', 'true', '1', '', '', 'Yahoo', '', 'ok', '1', ''],
        ['3', 'false', '0', '', '', '', '', 'ok', '1', ''],
        ['4', '', '', '', '', '', '', 'invalid', '0', 'invalid_email'],
        ['5', ...jane, 'duplicate', '0', ''],
        ['6', '', '', '', '', '', '', 'invalid', '0', 'empty_value'],
      ]);
      const found = await resultRecords(fs.readFileSync(run.files.found!));
      expect(found.map((r) => r.id)).toEqual(['1', '2', '5']);
      expect((await e.deps.billing.requireAccount(account.id)).credits).toBe(97);

      const rerun = await runJob(e, { file: input, type: 'email_breaches', accountId: account.id, outDir: path.join(e.dataDir, 'b') });
      expect(rerun.summary.credits_used).toBe(0);
      expect((await e.deps.billing.requireAccount(account.id)).credits).toBe(97);
    });

    it('writes a failed lookup to the errors file with its result columns empty, free', async () => {
      const e = await loaded();
      const real = e.deps.providers.get('email_breaches')!;
      (e.deps.providers as Map<string, LookupProvider>).set('email_breaches', failingProvider(real, { test: (key) => key === 'nobody@example.net' }, false));
      const account = await e.deps.billing.createAccount({ credits: 100, now: Date.now() });
      const run = await runJob(e, { file: writeFile(e.dataDir, 'in.csv', INPUT), type: 'email_breaches', accountId: account.id, maxErrorRate: '1', outDir: path.join(e.dataDir, 'out') });
      expect(run.summary).toMatchObject({ status: 'completed', credits_used: 2, rows: { error: 1 } });
      const text = fs.readFileSync(run.files.errors!, 'utf8');
      expect(text.split('\n')[0]).toBe('id,email,email_breached,breach_count,first_breach,last_breach,breaches,exposed_data,status,credits,cached,error');
      expect((await resultRecords(text)).map(pick)).toEqual([['3', '', '', '', '', '', '', 'error', '0', 'provider_502']]);
    });

    it('sees breaches imported after an earlier answer, and the repeat within the window stays free', async () => {
      const e = await loaded();
      const input = writeFile(e.dataDir, 'in.csv', 'email\nbob@example.org\n');
      const account = await e.deps.billing.createAccount({ credits: 10, now: Date.now() });
      const before = await runJob(e, { file: input, type: 'email_breaches', accountId: account.id, outDir: path.join(e.dataDir, 'a') });
      expect((await resultRecords(fs.readFileSync(before.files.all!)))[0]).toMatchObject({ breach_count: '1', credits: '1' });

      await importBreaches(e.deps.store, fs.createReadStream(writeFile(e.dataDir, 'more.csv', 'email,breach,breached_at,data_classes\nbob@example.org,Dropbox,2012-07-01,Passwords\n')), { maxLineBytes: 65_536 });
      const after = await runJob(e, { file: input, type: 'email_breaches', accountId: account.id, outDir: path.join(e.dataDir, 'b') });
      expect((await resultRecords(fs.readFileSync(after.files.all!)))[0]).toMatchObject({ breach_count: '2', first_breach: '2012-07-01', breaches: 'Dropbox;Yahoo', exposed_data: 'Passwords', credits: '0' });
      expect((await e.deps.billing.requireAccount(account.id)).credits).toBe(9);
    });

    it('runs beside gender on the one email column, each lookup billed by its own kind', async () => {
      const e = await loaded();
      const account = await e.deps.billing.createAccount({ credits: 100, now: Date.now() });
      const run = await runJob(e, { file: writeFile(e.dataDir, 'in.csv', INPUT), type: 'gender,email_breaches', accountId: account.id, outDir: path.join(e.dataDir, 'out') });
      expect(run.summary).toMatchObject({ status: 'completed', credits_used: 6 });
      const [header, first] = await parseCsv(fs.readFileSync(run.files.all!, 'utf8'));
      expect(header).toEqual([
        'id', 'email', 'gender', 'country', 'probability', 'gender_status', 'gender_credits', 'gender_cached', 'gender_error',
        'email_breached', 'breach_count', 'first_breach', 'last_breach', 'breaches', 'exposed_data',
        'email_breaches_status', 'email_breaches_credits', 'email_breaches_cached', 'email_breaches_error', 'status', 'credits',
      ]);
      // Row 1: a gender answer and a breach answer, each paid for once: the row costs 2.
      expect([0, 5, 6, 9, 10, 15, 16, 19, 20].map((i) => first![i])).toEqual(['1', 'ok', '1', 'true', '2', 'ok', '1', 'ok', '2']);
    });
  });

  describe('POST /api/jobs/bulk with type=email_breaches', () => {
    it('takes the type, answers from the index and charges each address once', async () => {
      const h = await openApiHarness(await engines.env());
      await importBreaches(h.engine.deps.store, fs.createReadStream(writeFile(h.engine.dataDir, 'b.csv', EMAIL_BREACHES)), { maxLineBytes: 65_536 });
      const a = await newAccount(h, { credits: 100 });
      const body = multipart([{ name: 'type', value: 'email_breaches' }, { name: 'file', value: INPUT, filename: 'emails.csv' }]);
      const response = await h.app.inject({ method: 'POST', url: '/api/jobs/bulk', headers: { ...bearer(a.key), ...body.headers }, payload: body.payload });
      expect(response.statusCode, response.body).toBe(202);
      const job = json(response);
      expect(job).toMatchObject({ type: 'email_breaches', status: 'queued' });
      await runUntilDone(h, [job.id]);
      const done = json(await h.app.inject({ method: 'GET', url: `/api/jobs/${job.id}`, headers: bearer(a.key) }));
      expect(done).toMatchObject({ status: 'completed', credits_used: 3, rows: { total: 6, found: 3, invalid: 2, duplicate: 1 } });
    });
  });
});
