import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseLookups } from '../../pipelines/index.js';
import { importBreaches, importCompanies } from '../../src/cli/import-command.js';
import { runJob } from '../../src/cli/run-command.js';
import type { LookupProvider } from '../../src/lookups/lookup-provider.js';
import { startProviderSimulator } from '../../src/lookups/remote/provider-simulator.js';
import { isAppError } from '../../src/shared/errors.js';
import { bearer, closeHarnesses, json, multipart, newAccount, openApiHarness, runUntilDone } from '../support/api-harness.js';
import { parseCsv, resultRecords } from '../support/csv-fixture.js';
import { engineScope, failingProvider, resultText, runUntilSettled, writeFile, type TestEngine } from '../support/test-engine.js';

const engines = engineScope();
afterEach(async () => {
  await engines.closeAll();
  await closeHarnesses();
});

const DIRECTORY = [
  'name,domain,description,industry,employee_count,country,website',
  'Acme,acme.com,Anvils,Manufacturing,1200,US,https://acme.com',
  'Globex Corporation,globex.com,Everything,Conglomerate,50000,US,https://globex.com',
  'Initech,initech.com,Software,Software,300,US,',
].join('\n');

const BREACHES = ['phone,breach,breached_at', '+49 30 1234567,Acme,2019-05-01', '+44 20 7946 0958,Globex,2020-07-15'].join('\n');

/**
 * Three lookups' columns. Each lookup has its own repeats and invalid cells: row 3 repeats row 1's
 * email but not its company; row 5's email is invalid while its company and phone are fine.
 */
function inputCsv(rows = 1_200): string {
  const companies = ['Acme', 'globex.com', 'Initech', 'Nonexistent Widgets', 'acme.com'];
  const phones = ['+49 30 1234567', '+44 20 7946 0958', '+1 415 555 2671', 'call me'];
  const lines = ['Work Email,Employer,Mobile,"note, with comma"'];
  for (let i = 0; i < rows; i++) {
    const email = i % 50 === 4 ? 'not-an-email' : `person${i % 1_000}@example.com`;
    lines.push(`${email},${companies[i % companies.length]},${phones[i % phones.length]},"n ${i}, ""q"""`);
  }
  return lines.join('\n') + '\n';
}

async function engineWithData(env: Record<string, string> = {}): Promise<TestEngine> {
  const e = await engines.open(env);
  await importCompanies(e.deps.store.companies, fs.createReadStream(writeFile(e.dataDir, 'companies.csv', DIRECTORY)), { maxLineBytes: 65_536 });
  await importBreaches(e.deps.store.breaches, fs.createReadStream(writeFile(e.dataDir, 'breaches.csv', BREACHES)), { maxLineBytes: 65_536 });
  return e;
}

/** Rows without their `<type>_cached` cells, which depend on what other jobs put in the result cache first. */
function noCached(rows: Record<string, string>[]): Record<string, string>[] {
  return rows.map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => !k.endsWith('_cached'))));
}

const ALL_THREE = ['gender:Work Email', 'company:Employer', 'phone_breaches:Mobile'];

/** The cells one lookup added to each row, with the tail columns renamed to a single job's names. */
function group(rows: Record<string, string>[], columns: readonly string[], prefix: string): Record<string, string>[] {
  return rows.map((r) =>
    Object.fromEntries([
      ...columns.map((c) => [c, r[c]]),
      ...['status', 'credits', 'cached', 'error'].map((c) => [c, r[prefix ? `${prefix}_${c}` : c]]),
    ]),
  );
}

describe('parseLookups', () => {
  it.each([
    [{ type: 'gender' }, { type: 'gender' }],
    [{ type: 'company', column: 'Employer' }, { type: 'company', column: 'Employer' }],
    [{ type: 'gender, company' }, { type: 'gender,company', lookups: [{ type: 'gender' }, { type: 'company' }] }],
    [{ lookup: ['gender:Work: Email', 'company'] }, { type: 'gender,company', lookups: [{ type: 'gender', column: 'Work: Email' }, { type: 'company' }] }],
    [{ lookup: ['company:Employer'] }, { type: 'company', column: 'Employer' }],
    [{ type: 'gender,company', lookup: ['gender', 'company:Org'] }, { type: 'gender,company', lookups: [{ type: 'gender' }, { type: 'company', column: 'Org' }] }],
  ])('reads %j', (input, expected) => expect(parseLookups(input)).toEqual(expected));

  it.each([
    [{ type: 'gender,gender' }, 'bad_argument', /twice/],
    [{ type: 'gender,company', column: 'email' }, 'bad_argument', /lookup=TYPE:COLUMN/],
    [{ lookup: ['gender'], column: 'email' }, 'bad_argument', /TYPE:COLUMN/],
    [{ lookup: ['gender:'] }, 'bad_argument', /empty column/],
    [{ type: 'company', lookup: ['gender'] }, 'bad_argument', /disagree/],
    [{ type: 'gender,horoscope' }, 'unknown_job_type', /horoscope/],
    [{}, 'bad_argument', /type is required/],
  ])('refuses %j', (input, code, message) => {
    expect(() => parseLookups(input)).toThrow(expect.objectContaining({ code, message: expect.stringMatching(message) }));
  });
});

describe('a job with several lookups per row', () => {
  it('gives each lookup the cells, billing and repeats its own job would give, in one row', async () => {
    const e = await engineWithData();
    const file = writeFile(e.dataDir, 'in.csv', inputCsv());
    const account = await e.deps.billing.createAccount({ credits: 100_000, now: Date.now() });
    const multi = await runJob(e, { file, lookups: ALL_THREE, accountId: account.id, outDir: path.join(e.dataDir, 'multi') });
    expect(multi.summary).toMatchObject({ status: 'completed', type: 'gender,company,phone_breaches' });

    // The same file, one lookup per job, each for an account of its own (so billing starts fresh).
    const single = async (type: string, column: string) => {
      const other = await e.deps.billing.createAccount({ credits: 100_000, now: Date.now() });
      const run = await runJob(e, { file, type, column, accountId: other.id, outDir: path.join(e.dataDir, type) });
      expect(run.summary.status).toBe('completed');
      return { rows: await resultRecords(fs.readFileSync(run.files.all!)), credits: run.summary.credits_used, header: (await parseCsv(fs.readFileSync(run.files.all!)))[0]! };
    };
    const gender = await single('gender', 'Work Email');
    const company = await single('company', 'Employer');
    const phone = await single('phone_breaches', 'Mobile');

    const [header] = await parseCsv(fs.readFileSync(multi.files.all!));
    const resultColumns = (h: string[]) => h.slice(4, -4);
    expect(header).toEqual([
      'Work Email', 'Employer', 'Mobile', 'note, with comma',
      ...resultColumns(gender.header), 'gender_status', 'gender_credits', 'gender_cached', 'gender_error',
      ...resultColumns(company.header), 'company_status', 'company_credits', 'company_cached', 'company_error',
      ...resultColumns(phone.header), 'phone_breaches_status', 'phone_breaches_credits', 'phone_breaches_cached', 'phone_breaches_error',
      'status', 'credits',
    ]);
    const rows = await resultRecords(fs.readFileSync(multi.files.all!));
    expect(rows).toHaveLength(1_200);
    // Result cells may differ only in `cached` (the single jobs ran later, against a warm result cache).
    const uncached = (g: Record<string, string>[]) => g.map(({ cached: _c, ...rest }) => rest);
    expect(uncached(group(rows, resultColumns(gender.header), 'gender'))).toEqual(uncached(group(gender.rows, resultColumns(gender.header), '')));
    expect(uncached(group(rows, resultColumns(company.header), 'company'))).toEqual(uncached(group(company.rows, resultColumns(company.header), '')));
    expect(uncached(group(rows, resultColumns(phone.header), 'phone_breaches'))).toEqual(uncached(group(phone.rows, resultColumns(phone.header), '')));

    // Each lookup is billed by its own rule; the job's credits are their sum, row by row too.
    expect(multi.summary.credits_used).toBe(gender.credits + company.credits + phone.credits);
    expect(gender.credits).toBeGreaterThan(900);
    expect(company.credits).toBeGreaterThan(0);
    expect(phone.credits).toBeGreaterThan(0);
    expect(rows.every((r) => Number(r.credits) === Number(r.gender_credits) + Number(r.company_credits) + Number(r.phone_breaches_credits))).toBe(true);
    const ledger = (await e.deps.billing.ledger(account.id)).filter((l) => l.reason === 'charge');
    const byKind = (kind: string) => -ledger.filter((l) => l.kind === kind).reduce((n, l) => n + l.delta, 0);
    expect([byKind('gender'), byKind('company'), byKind('phone_breaches')]).toEqual([gender.credits, company.credits, phone.credits]);

    // Row statuses: an error beats ok, ok beats duplicate, duplicate beats invalid.
    const invalidEmail = rows.find((r) => r['Work Email'] === 'not-an-email')!;
    expect(invalidEmail).toMatchObject({ gender_status: 'invalid', gender_error: 'invalid_email', status: 'ok' });
    expect(multi.summary.rows.invalid).toBe(0);
    expect(multi.summary.rows.processed).toBe(1_200);
    // `found` holds rows where any lookup found something.
    const found = await resultRecords(fs.readFileSync(multi.files.found!));
    const foundBy = (r: Record<string, string>) => ['male', 'female'].includes(r.gender!) || r.company_name !== '' || r.breached === 'true';
    expect(found).toEqual(rows.filter(foundBy));
    expect(found.length).toBe(multi.summary.rows.found);

    // The same file again for the same account: every lookup is a free repeat.
    const again = await runJob(e, { file, lookups: ALL_THREE, accountId: account.id, outDir: path.join(e.dataDir, 'again') });
    expect(again.summary).toMatchObject({ status: 'completed', credits_used: 0 });
  });

  it('pays for a row whole or not at all: out of credits it pauses, and after a top-up its files equal an unpaused run', async () => {
    const e = await engineWithData({ SLUICE_BATCH_ROWS: '50', SLUICE_CHUNK_ROWS: '200' });
    const file = writeFile(e.dataDir, 'in.csv', inputCsv(600));
    const rich = await e.deps.billing.createAccount({ credits: 100_000, now: Date.now() });
    const clean = await runJob(e, { file, lookups: ALL_THREE, accountId: rich.id, outDir: path.join(e.dataDir, 'clean') });
    expect(clean.summary.status).toBe('completed');

    // Far fewer credits than the job needs, and a number that ends inside a row's several charges.
    const poor = await e.deps.billing.createAccount({ credits: 301, now: Date.now() });
    const paused = await runJob(e, { file, lookups: ALL_THREE, accountId: poor.id, outDir: path.join(e.dataDir, 'paused') });
    expect(paused.summary).toMatchObject({ status: 'paused', reason: 'insufficient_credits' });
    const left = (await e.deps.billing.requireAccount(poor.id)).credits;
    expect(left).toBeGreaterThanOrEqual(0);
    expect(left).toBeLessThan(3);
    expect(paused.summary.credits_used).toBe(301 - left);
    expect(await e.deps.billing.chargeCountForJob(paused.summary.id)).toBe(301 - left);

    // The top-up itself resumes a job paused for credits.
    await e.deps.billing.addCredits(poor.id, 100_000, 'topup', Date.now());
    await runUntilSettled(e, paused.summary.id);
    const done = await e.jobService.get(paused.summary.id);
    expect(done.status).toBe('completed');
    expect(done.creditsUsed).toBe(clean.summary.credits_used);
    expect(await e.deps.billing.chargeCountForJob(done.id)).toBe(clean.summary.credits_used);
    const cleanRows = await resultRecords(fs.readFileSync(clean.files.all!));
    const resumedRows = await resultRecords(await resultText(e, done.id, 'all'));
    expect(noCached(resumedRows)).toEqual(noCached(cleanRows));
  });

  it('retry-failed redoes only the lookup that failed in a row, keeping the others, and ends equal to a run that never failed', async () => {
    const e = await engineWithData({ SLUICE_BATCH_ROWS: '100', SLUICE_CHUNK_ROWS: '400' });
    const file = writeFile(e.dataDir, 'in.csv', inputCsv());
    const cleanAccount = await e.deps.billing.createAccount({ credits: 100_000, now: Date.now() });

    // Company lookups of Initech and Globex fail until `healthy`; the rest answer as usual.
    const realCompany = e.deps.providers.get('company')!;
    let healthy = false;
    const askedCompany: string[] = [];
    const failing = failingProvider(realCompany, { test: (key) => !healthy && /^(name:initech|domain:globex)/.test(key) }, false);
    const flaky: LookupProvider = { ...failing, lookup: (keys, signal) => (askedCompany.push(...keys), failing.lookup(keys, signal)) };
    (e.deps.providers as Map<string, LookupProvider>).set('company', flaky);
    const account = await e.deps.billing.createAccount({ credits: 100_000, now: Date.now() });
    const run = await runJob(e, { file, lookups: ALL_THREE, accountId: account.id, maxErrorRate: '1', outDir: path.join(e.dataDir, 'out') });
    expect(run.summary.status).toBe('completed');
    const errors = await resultRecords(fs.readFileSync(run.files.errors!));
    expect(errors.length).toBe(run.summary.rows.error);
    expect(errors.length).toBeGreaterThan(20);
    expect(errors.every((r) => r.company_status === 'error' && r.status === 'error' && r.gender_status !== 'error')).toBe(true);
    const spent = 100_000 - (await e.deps.billing.requireAccount(account.id)).credits;

    healthy = true;
    askedCompany.length = 0;
    const gender = e.deps.providers.get('gender')!;
    let genderAsked = 0;
    (e.deps.providers as Map<string, LookupProvider>).set('gender', { ...gender, lookup: (keys, signal) => ((genderAsked += keys.length), gender.lookup(keys, signal)) });
    await e.jobService.retryFailed(run.summary.id);
    await runUntilSettled(e, run.summary.id);
    const done = await e.jobService.get(run.summary.id);
    expect(done).toMatchObject({ status: 'completed', errorRows: 0 });
    // Only the failed company lookups were asked again; gender was not asked at all.
    expect(genderAsked).toBe(0);
    expect(askedCompany.length).toBeGreaterThan(0);
    expect(askedCompany.every((k) => /^(name:initech|domain:globex)/.test(k))).toBe(true);

    const clean = await runJob(e, { file, lookups: ALL_THREE, accountId: cleanAccount.id, outDir: path.join(e.dataDir, 'clean') });
    expect(noCached(await resultRecords(await resultText(e, done.id, 'all')))).toEqual(noCached(await resultRecords(fs.readFileSync(clean.files.all!))));
    expect(done.creditsUsed).toBe(clean.summary.credits_used);
    expect(done.creditsUsed - spent).toBeGreaterThan(0);
    expect(100_000 - (await e.deps.billing.requireAccount(account.id)).credits).toBe(clean.summary.credits_used);
    expect(done).toMatchObject({ foundRows: clean.summary.rows.found, duplicateRows: clean.summary.rows.duplicate, invalidRows: clean.summary.rows.invalid });
  });

  it('gives the same files with its gender lookups on a remote service (through 502s and 429s) as on the embedded engine', async () => {
    const embedded = await engineWithData();
    const file = writeFile(embedded.dataDir, 'in.csv', inputCsv(800));
    const run = async (e: TestEngine, out: string) => {
      const account = await e.deps.billing.createAccount({ credits: 100_000, now: Date.now() });
      const result = await runJob(e, { file, lookups: ALL_THREE, accountId: account.id, outDir: path.join(e.dataDir, out) });
      expect(result.summary).toMatchObject({ status: 'completed', rows: { error: 0 } });
      return { all: fs.readFileSync(result.files.all!, 'utf8'), credits: result.summary.credits_used };
    };
    const expected = await run(embedded, 'embedded');
    const sim = await startProviderSimulator({ latencyMs: 2, errorRate: 0.2, rateLimitEvery: 5, retryAfterSeconds: 0, seed: 7 });
    try {
      const remote = await engineWithData({ SLUICE_GENDER_PROVIDER_URL: sim.url });
      expect(await run(remote, 'remote')).toEqual(expected);
      expect(sim.stats.keys).toBeGreaterThan(700);
      expect(sim.stats.byStatus[502]).toBeGreaterThan(0);
      expect(sim.stats.byStatus[429]).toBeGreaterThan(0);
    } finally {
      await sim.close();
    }
  });

  it('fails the job with no_key_column when a lookup has no column, even if another lookup could read a headerless file', async () => {
    const e = await engineWithData();
    const file = writeFile(e.dataDir, 'in.csv', 'email,name\njohn@example.com,John\n');
    const account = await e.deps.billing.createAccount({ credits: 10, now: Date.now() });
    const run = await runJob(e, { file, type: 'gender,company', accountId: account.id, outDir: path.join(e.dataDir, 'out') });
    expect(run.summary).toMatchObject({ status: 'failed', reason: 'no_key_column', credits_used: 0 });
    expect(run.summary.error_message).toContain('company');
    const headerless = writeFile(e.dataDir, 'bare.csv', 'john@example.com,Acme\n');
    const bare = await runJob(e, { file: headerless, type: 'gender,company', accountId: account.id, outDir: path.join(e.dataDir, 'bare') });
    expect(bare.summary).toMatchObject({ status: 'failed', reason: 'no_key_column' });
    await expect(() => runJob(e, { file, type: 'gender,gender', accountId: account.id })).rejects.toSatisfy((err) => isAppError(err, 'bad_argument'));
  });
});

describe('POST /api/jobs/bulk with several lookups', () => {
  it('takes one lookup field per lookup, runs them all, and refuses a malformed one with 422', async () => {
    const h = await openApiHarness();
    await importCompanies(h.engine.deps.store.companies, fs.createReadStream(writeFile(h.engine.dataDir, 'companies.csv', DIRECTORY)), { maxLineBytes: 65_536 });
    const { key } = await newAccount(h, { credits: 10_000 });
    const csv = 'Work Email,Employer\njohn@example.com,Acme\nmary@example.org,globex.com\n';
    const body = multipart([
      { name: 'lookup', value: 'gender:Work Email' },
      { name: 'lookup', value: 'company:Employer' },
      { name: 'file', filename: 'in.csv', value: csv },
    ]);
    const res = await h.app.inject({ method: 'POST', url: '/api/jobs/bulk', headers: { ...bearer(key), ...body.headers }, payload: body.payload });
    expect(res.statusCode, res.body).toBe(202);
    const job = json(res);
    expect(job.type).toBe('gender,company');
    await runUntilDone(h, [job.id]);
    const done = await h.engine.jobService.get(job.id);
    expect(done).toMatchObject({ status: 'completed', creditsUsed: 4 });
    const rows = await resultRecords(await resultText(h.engine, job.id, 'all'));
    expect(rows.map((r) => [r.gender, r.company_name, r.status, r.credits])).toEqual([
      ['male', 'Acme', 'ok', '2'],
      ['female', 'Globex Corporation', 'ok', '2'],
    ]);

    for (const [parts, message] of [
      [[{ name: 'lookup', value: 'gender' }, { name: 'lookup', value: 'gender:email' }], /twice/],
      [[{ name: 'type', value: 'gender,company' }, { name: 'column', value: 'Work Email' }], /lookup=TYPE:COLUMN/],
      [[{ name: 'type', value: 'gender,tarot' }], /tarot/],
    ] as const) {
      const bad = multipart([...parts, { name: 'file', filename: 'in.csv', value: csv }]);
      const refused = await h.app.inject({ method: 'POST', url: '/api/jobs/bulk', headers: { ...bearer(key), ...bad.headers }, payload: bad.payload });
      expect(refused.statusCode, refused.body).toBe(422);
      expect(json(refused).error).toMatch(message);
    }
  });
});
