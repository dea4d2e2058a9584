import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { importBreaches, importCompanies } from '../../src/cli/import-command.js';
import { runJob } from '../../src/cli/run-command.js';
import { csvLine } from '../../src/jobs/csv-writer.js';
import { jobEndEvent } from '../../src/jobs/job-events.js';
import { nameKey } from '../../src/lookups/company/company-names.js';
import { COMPANY_KIND } from '../../src/lookups/company/company-profile.js';
import { EmbeddedCompanyDirectory } from '../../src/lookups/company/embedded-company-directory.js';
import type { LookupProvider } from '../../src/lookups/lookup-provider.js';
import { EmbeddedBreachIndex, PHONE_BREACHES_KIND } from '../../src/lookups/phone/embedded-breach-index.js';
import { startProviderSimulator, type ProviderSimulator, type SimulatorSetup } from '../../src/lookups/remote/provider-simulator.js';
import { RemoteLookupProvider } from '../../src/lookups/remote/remote-provider.js';
import { seededRandom } from '../../src/shared/seeded-random.js';
import { openSqliteStore } from '../../src/storage/sqlite/sqlite-store.js';
import { COMPANY_KEYS, type Store } from '../../src/storage/store.js';
import { bearer, closeHarnesses, json, newAccount, openApiHarness, type ApiHarness } from '../support/api-harness.js';
import { openTestEngine, resultText, runUntilCompleted, tempDir, type TestEngine, writeFile } from '../support/test-engine.js';

const engines: TestEngine[] = [];
const simulators: ProviderSimulator[] = [];
const stores: Store[] = [];
afterEach(async () => {
  await closeHarnesses();
  await Promise.all(engines.splice(0).map((e) => e.close()));
  await Promise.all(simulators.splice(0).map((s) => s.close()));
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

async function engine(env: Record<string, string> = {}): Promise<TestEngine> {
  const e = await openTestEngine(env);
  engines.push(e);
  return e;
}

const CREDITS = 100_000;
const AUTH = 'Bearer sim-secret';

// ---------------------------------------------------------------------------------------------
// Fixtures: a breach index and a company directory, and input files that hit them in every way.
// ---------------------------------------------------------------------------------------------

const BREACH_NAMES = ['Acme', 'Globex', 'Initech', 'Hooli', 'Umbrella', 'Soylent', 'Tyrell'];
const breachedNumber = (i: number) => 2_000_000 + i * 137;

function breachIndexCsv(): string {
  let text = csvLine(['phone', 'breach', 'breached_at']);
  for (let i = 0; i < 250; i++) {
    for (let b = 0; b < 1 + (i % 7); b++) {
      const date = (i + b) % 5 === 0 ? '' : `20${String(10 + ((i + b) % 14)).padStart(2, '0')}-0${1 + (b % 9)}-1${b % 10}`;
      text += csvLine([`+49 30 ${breachedNumber(i)}`, BREACH_NAMES[(i + b) % BREACH_NAMES.length]!, date]);
    }
  }
  return text;
}

/** Breached numbers in three spellings, unbreached ones, invalid cells and repeats; read with default country DE. */
function phoneInputCsv(): string {
  const random = seededRandom(41);
  const cells: string[] = [];
  for (let row = 0; row < 700; row++) {
    const r = random();
    const i = Math.floor(random() * 250);
    if (r < 0.4) cells.push([`+49 30 ${breachedNumber(i)}`, `030 ${breachedNumber(i)}`, `0049 30 ${breachedNumber(i)}`][i % 3]!);
    else if (r < 0.75) cells.push(i % 2 === 0 ? `+44 20 7946 ${String(row % 1000).padStart(4, '0')}` : `+49 30 ${3_000_000 + row}`);
    else if (r < 0.85) cells.push(['call me', '', '12', '+49 30 12 ext. 5'][i % 4]!);
    else cells.push(cells[Math.floor(random() * cells.length)] ?? '+49 30 1234567');
  }
  return csvLine(['id', 'phone']) + cells.map((cell, row) => csvLine([String(row + 1), cell])).join('');
}

const FIRST = ['Acme', 'Globex', 'Initech', 'Hooli', 'Umbrella', 'Soylent', 'Tyrell', 'Wonka', 'Cyberdyne', 'Stark', 'Wayne', 'Oscorp'];
const SECOND = ['Labs', 'Systems', 'Foods', 'Logistics', 'Energy', 'Pharma', 'Media', 'Robotics', 'Capital', 'Textiles', 'Mining', 'Motors'];

interface Company {
  name: string;
  domain: string | null;
}

function companies(): Company[] {
  const out: Company[] = [];
  FIRST.forEach((first, f) =>
    SECOND.forEach((second, s) => {
      if ((f * SECOND.length + s) % 5 === 4) return;
      const domain = (f + s) % 4 === 0 ? null : `${first}${second}.com`.toLowerCase();
      out.push({ name: `${first} ${second}`, domain });
    }),
  );
  return out;
}

function directoryCsv(): string {
  let text = csvLine(['Name', 'Domain', 'Description', 'Industry', 'Employee Count', 'Country', 'Website', 'Ticker']);
  companies().forEach((c, i) => {
    text += csvLine([
      c.name,
      c.domain ?? '',
      i % 3 === 0 ? '' : `${c.name}, since ${1900 + i}`,
      c.name.split(' ')[1]!,
      i % 4 === 0 ? '' : String((i * 7919) % 100_000),
      ['US', 'DE', 'GB', 'FR'][i % 4]!,
      c.domain === null || i % 2 === 0 ? '' : `https://${c.domain}`,
      i % 3 === 1 ? c.name.slice(0, 3).toUpperCase() + String(i) : '',
    ]);
  });
  return text;
}

/** Exact names, domains as URLs and subdomains, legal forms, typos, one word, unknowns, blanks and repeats. */
function companyInputCsv(): string {
  const random = seededRandom(43);
  const all = companies();
  const cells: string[] = [];
  for (let row = 0; row < 450; row++) {
    const c = all[Math.floor(random() * all.length)]!;
    const r = random();
    if (r < 0.2) cells.push(c.name);
    else if (r < 0.35) cells.push(c.domain === null ? c.name.toUpperCase() : `https://www.${c.domain}/about`);
    else if (r < 0.45) cells.push(c.domain === null ? `${c.name} Ltd` : `shop.${c.domain}`);
    else if (r < 0.55) cells.push(`${c.name}, Inc.`);
    else if (r < 0.65) cells.push(c.name.slice(0, 3) + c.name.slice(4));
    else if (r < 0.72) cells.push(c.name.split(' ')[0]!);
    else if (r < 0.85) cells.push(`Nonexistent Widgets ${row}`);
    else if (r < 0.9) cells.push('');
    else cells.push(cells[Math.floor(random() * cells.length)] ?? 'Acme Labs');
  }
  return csvLine(['id', 'company']) + cells.map((cell, row) => csvLine([String(row + 1), cell])).join('');
}

// ---------------------------------------------------------------------------------------------
// The two lookups, described once so that every test below runs for both.
// ---------------------------------------------------------------------------------------------

interface LookupCase {
  kind: typeof PHONE_BREACHES_KIND | typeof COMPANY_KIND;
  urlVar: string;
  authVar: string;
  /** How many of the fixture's entries the store's index or directory holds; a remote run must leave it at 0. */
  held(store: Store): Promise<number>;
  /** Loads the fixture data into a store. */
  load(store: Store): Promise<void>;
  /** The embedded engine on a store, as the simulator serves it. */
  embedded(store: Store): LookupProvider;
  input: () => string;
  defaultCountry?: string;
}

const CASES: LookupCase[] = [
  {
    kind: PHONE_BREACHES_KIND,
    urlVar: 'SLUICE_PHONE_PROVIDER_URL',
    authVar: 'SLUICE_PHONE_PROVIDER_AUTH',
    held: async (store) => {
      const phones = Array.from({ length: 250 }, (_, i) => `+4930${breachedNumber(i)}`);
      return [...(await store.breaches.records(phones)).values()].reduce((n, records) => n + records.length, 0);
    },
    load: async (store) => {
      const summary = await importBreaches(store.breaches, Readable.from([Buffer.from(breachIndexCsv())]), { maxLineBytes: 65_536 });
      expect(summary.invalid).toBe(0);
    },
    embedded: (store) => new EmbeddedBreachIndex(store.breaches),
    input: phoneInputCsv,
    defaultCountry: 'DE',
  },
  {
    kind: COMPANY_KIND,
    urlVar: 'SLUICE_COMPANY_PROVIDER_URL',
    authVar: 'SLUICE_COMPANY_PROVIDER_AUTH',
    held: async (store) => {
      const found = await store.companies.byKey(COMPANY_KEYS.name, companies().map((c) => nameKey(c.name)));
      return [...found.values()].reduce((n, rows) => n + rows.length, 0);
    },
    load: async (store) => {
      const summary = await importCompanies(store.companies, Readable.from([Buffer.from(directoryCsv())]), { maxLineBytes: 65_536 });
      expect(summary.invalid).toBe(0);
    },
    embedded: (store) => new EmbeddedCompanyDirectory(store.companies),
    input: companyInputCsv,
  },
];

/** A store of the simulator's own, apart from every engine's, so that no engine can answer from it. */
function simulatorStore(): Store {
  const store = openSqliteStore(path.join(tempDir('sluice-sim-'), 'sim.db'), { synchronous: 'NORMAL', busyTimeoutMs: 5_000 }, { jobEnded: jobEndEvent });
  stores.push(store);
  return store;
}

/** A simulator serving the case's kind from an embedded engine on a store of its own, loaded with the fixture. */
async function simulatorFor(c: LookupCase, options: SimulatorSetup = {}): Promise<ProviderSimulator> {
  const store = simulatorStore();
  await c.load(store);
  const sim = await startProviderSimulator({ latencyMs: 2, ...options, engines: new Map([[c.kind, c.embedded(store)]]) });
  simulators.push(sim);
  return sim;
}

async function runFile(e: TestEngine, c: LookupCase, file: string) {
  const account = await e.deps.billing.createAccount({ credits: CREDITS, now: Date.now() });
  const run = await runJob(e, { file, type: c.kind, accountId: account.id, outDir: path.join(e.dataDir, 'out'), ...(c.defaultCountry ? { defaultCountry: c.defaultCountry } : {}) });
  return { run, accountId: account.id };
}

/** The same file through the embedded engine, with the fixture loaded: what every remote run must reproduce byte for byte. */
async function embeddedRun(c: LookupCase, file: string) {
  const e = await engine();
  await c.load(e.deps.store);
  // The fixture is there to be found: what `held` reads is what a remote run must leave at 0.
  expect(await c.held(e.deps.store)).toBeGreaterThan(100);
  const { run, accountId } = await runFile(e, c, file);
  expect(run.summary).toMatchObject({ status: 'completed' });
  const all = fs.readFileSync(run.files.all!, 'utf8');
  const found = fs.readFileSync(run.files.found!, 'utf8');
  return { all, found, credits: run.summary.credits_used, spent: CREDITS - (await e.deps.billing.requireAccount(accountId)).credits, foundRows: run.summary.rows.found };
}

describe.each(CASES)('a $kind job against a remote provider', (c) => {
  it('gives the same files and charges as the embedded engine, through 429s and 502s, with the auth header sent', async () => {
    const file = writeFile(tempDir(), 'in.csv', c.input());
    const expected = await embeddedRun(c, file);
    // The fixture must make the comparison mean something: found rows that an empty index could not give.
    expect(expected.foundRows).toBeGreaterThan(50);
    expect(expected.credits).toBeGreaterThan(100);
    expect(expected.spent).toBe(expected.credits);

    const sim = await simulatorFor(c, { errorRate: 0.15, rateLimitEvery: 7, retryAfterSeconds: 0, requireAuth: AUTH, seed: 5 });
    // Small batches: many requests, so that the error rate and the rate limit both come into play.
    const e = await engine({ [c.urlVar]: sim.url, [c.authVar]: AUTH, SLUICE_PROVIDER_MAX_BATCH: '5' });
    expect(e.deps.providers.get(c.kind)).toBeInstanceOf(RemoteLookupProvider);
    const { run, accountId } = await runFile(e, c, file);

    expect(run.summary).toMatchObject({ status: 'completed', credits_used: expected.credits });
    expect(run.summary.rows.error).toBe(0);
    expect(fs.readFileSync(run.files.all!, 'utf8')).toBe(expected.all);
    expect(fs.readFileSync(run.files.found!, 'utf8')).toBe(expected.found);
    expect(CREDITS - (await e.deps.billing.requireAccount(accountId)).credits).toBe(expected.credits);
    // Every answer came from the simulator: this engine's own index is empty.
    expect(await c.held(e.deps.store)).toBe(0);
    expect(sim.stats.byStatus[200]).toBeGreaterThan(0);
    expect(sim.stats.byStatus[401] ?? 0).toBe(0);
    expect(sim.stats.byStatus[502]).toBeGreaterThan(0);
    expect(sim.stats.byStatus[429]).toBeGreaterThan(0);
  });

  it('pauses with provider_unavailable while the provider is down, and completes after it is back with the files of a run without the outage', async () => {
    const file = writeFile(tempDir(), 'in.csv', c.input());
    const expected = await embeddedRun(c, file);
    const sim = await simulatorFor(c, { latencyMs: 5 });
    const e = await engine({ [c.urlVar]: sim.url, SLUICE_PROVIDER_MAX_BATCH: '5', SLUICE_PROVIDER_RETRY_SECONDS: '1', SLUICE_PROVIDER_TIMEOUT_MS: '2000' });
    const outage = setInterval(() => {
      if (sim.stats.requests >= 4) {
        sim.set({ down: true });
        clearInterval(outage);
      }
    }, 1);
    const { run: first, accountId } = await runFile(e, c, file);
    clearInterval(outage);
    expect(first.summary).toMatchObject({ status: 'paused', reason: 'provider_unavailable' });
    expect(first.summary.rows.error).toBe(0);
    expect(sim.stats.byStatus[503]).toBeGreaterThan(0);
    expect(CREDITS - (await e.deps.billing.requireAccount(accountId)).credits).toBe(first.summary.credits_used);

    sim.set({ down: false });
    await runUntilCompleted(e, first.summary.id);
    const job = await e.deps.jobs.require(first.summary.id);
    expect(job.status).toBe('completed');
    expect({ all: await resultText(e, job.id, 'all'), found: await resultText(e, job.id, 'found') }).toEqual({ all: expected.all, found: expected.found });
    expect(job.creditsUsed).toBe(expected.credits);
    expect(CREDITS - (await e.deps.billing.requireAccount(accountId)).credits).toBe(expected.credits);
    expect(await c.held(e.deps.store)).toBe(0);
  });
});

describe('openEngine with remote lookup settings', () => {
  it('makes remote exactly the kinds whose URL is set, and closes every remote on close', async () => {
    const store = simulatorStore();
    const sim = await startProviderSimulator({
      latencyMs: 1,
      engines: new Map<string, LookupProvider>([[PHONE_BREACHES_KIND, new EmbeddedBreachIndex(store.breaches)], [COMPANY_KIND, new EmbeddedCompanyDirectory(store.companies)]]),
    });
    simulators.push(sim);
    const phoneOnly = await engine({ SLUICE_PHONE_PROVIDER_URL: sim.url });
    expect(phoneOnly.deps.providers.get(PHONE_BREACHES_KIND)).toBeInstanceOf(RemoteLookupProvider);
    expect(phoneOnly.deps.providers.get(PHONE_BREACHES_KIND)?.name).toBe('remote-phone_breaches');
    expect(phoneOnly.deps.providers.get(COMPANY_KIND)).toBeInstanceOf(EmbeddedCompanyDirectory);
    expect(phoneOnly.deps.providers.get('gender')).not.toBeInstanceOf(RemoteLookupProvider);

    const companyOnly = await engine({ SLUICE_COMPANY_PROVIDER_URL: sim.url });
    expect(companyOnly.deps.providers.get(COMPANY_KIND)).toBeInstanceOf(RemoteLookupProvider);
    expect(companyOnly.deps.providers.get(PHONE_BREACHES_KIND)).toBeInstanceOf(EmbeddedBreachIndex);
    expect(companyOnly.deps.providers.get('gender')).not.toBeInstanceOf(RemoteLookupProvider);

    const all = await engine({ SLUICE_GENDER_PROVIDER_URL: sim.url, SLUICE_PHONE_PROVIDER_URL: sim.url, SLUICE_COMPANY_PROVIDER_URL: sim.url });
    const kinds = ['gender', PHONE_BREACHES_KIND, COMPANY_KIND];
    const remotes = kinds.map((kind) => all.deps.providers.get(kind)!);
    const keys = ['anna.schmidt@example.com', '+49301234567', 'name:acme'];
    for (const [i, kind] of kinds.entries()) {
      expect(remotes[i]).toBeInstanceOf(RemoteLookupProvider);
      expect(remotes[i]!.kind).toBe(kind);
      // Open, each remote answers: the simulator serves all three kinds.
      expect((await remotes[i]!.lookup([keys[i]!]))[0]).toMatchObject({ ok: true });
    }
    engines.splice(engines.indexOf(all), 1);
    await all.close();
    for (const [i, remote] of remotes.entries()) {
      const [outcome] = await remote.lookup([keys[i]!]);
      expect(outcome).toMatchObject({ ok: false });
      expect(outcome!.ok === false && outcome!.message).toMatch(/closed|destroyed/i);
    }
  });

  it('holds the provider concurrency clamp for a remote other than gender', async () => {
    const c = CASES.find((x) => x.kind === COMPANY_KIND)!;
    const sim = await simulatorFor(c, { latencyMs: 5 });
    const e = await engine({ SLUICE_COMPANY_PROVIDER_URL: sim.url, SLUICE_PROVIDER_CONNECTIONS: '2', SLUICE_PROVIDER_MAX_BATCH: '1', SLUICE_PROVIDER_CONCURRENCY: '128' });
    const provider = e.deps.providers.get(COMPANY_KIND)!;
    let inFlight = 0;
    let maxInFlight = 0;
    const lookup = provider.lookup.bind(provider);
    provider.lookup = async (keys, signal) => {
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      try {
        return await lookup(keys, signal);
      } finally {
        inFlight--;
      }
    };
    const names = companies().slice(0, 60).map((x) => csvLine([x.name]));
    const file = writeFile(tempDir(), 'in.csv', csvLine(['company']) + names.join(''));
    const { run } = await runFile(e, c, file);
    expect(run.summary).toMatchObject({ status: 'completed', rows: { error: 0 } });
    // 60 one-key slices were ready at once; only as many as the pool has connections went out.
    expect(maxInFlight).toBe(2);
    expect(sim.stats.maxInFlight).toBeLessThanOrEqual(2);
  });
});

describe('the single-lookup endpoints with remote providers', () => {
  async function harnesses(c: LookupCase): Promise<{ embedded: ApiHarness; remote: ApiHarness; sim: ProviderSimulator }> {
    const embedded = await openApiHarness();
    await c.load(embedded.engine.deps.store);
    const sim = await simulatorFor(c, { requireAuth: AUTH });
    const remote = await openApiHarness({ [c.urlVar]: sim.url, [c.authVar]: AUTH });
    return { embedded, remote, sim };
  }

  async function post(h: ApiHarness, key: string, url: string, payload: unknown) {
    const response = await h.app.inject({ method: 'POST', url, headers: bearer(key), payload: payload as Record<string, unknown> });
    return { status: response.statusCode, body: json(response) };
  }

  it('/api/agent/phone-breaches answers from the remote service as the embedded index does, and 503 while it is down', async () => {
    const c = CASES.find((x) => x.kind === PHONE_BREACHES_KIND)!;
    const { embedded, remote, sim } = await harnesses(c);
    const [a, b] = [await newAccount(embedded, { credits: 10 }), await newAccount(remote, { credits: 10 })];
    const query = { query: `+49 30 ${breachedNumber(6)}` };
    const expected = await post(embedded, a.key, '/api/agent/phone-breaches', query);
    expect(expected).toMatchObject({ status: 200, body: { breached: true, total_breaches: 7, credits: 1 } });
    expect(await post(remote, b.key, '/api/agent/phone-breaches', query)).toEqual(expected);
    expect(sim.stats.keys).toBe(1);
    expect((await remote.engine.deps.billing.requireAccount(b.id)).credits).toBe(9);

    sim.set({ down: true });
    const down = await post(remote, b.key, '/api/agent/phone-breaches', { query: `+49 30 ${breachedNumber(7)}` });
    expect(down).toMatchObject({ status: 503, body: { code: 'provider_unavailable' } });
    expect((await remote.engine.deps.billing.requireAccount(b.id)).credits).toBe(9);
  });

  it('/api/agent/company and /api/bulk-company-search answer from the remote service as the embedded directory does, candidates and prices included', async () => {
    const c = CASES.find((x) => x.kind === COMPANY_KIND)!;
    const { embedded, remote, sim } = await harnesses(c);
    const [a, b] = [await newAccount(embedded, { credits: 100 }), await newAccount(remote, { credits: 100 })];
    // Only candidates that score at least the match threshold are returned, each charged; one word
    // of many names (`Globex`) no longer is one, so the name is given whole.
    const agent = await post(embedded, a.key, '/api/agent/company', { query: 'Globex Labs' });
    expect(agent.status).toBe(200);
    expect(agent.body.total).toBe(1);
    expect(agent.body.credits).toBe(agent.body.total);
    expect(await post(remote, b.key, '/api/agent/company', { query: 'Globex Labs' })).toEqual(agent);
    const vague = await post(embedded, a.key, '/api/agent/company', { query: 'Globex' });
    expect(vague).toMatchObject({ status: 200, body: { total: 0, credits: 0 } });
    expect(await post(remote, b.key, '/api/agent/company', { query: 'Globex' })).toEqual(vague);

    const queries = { queries: ['Acme Labs', 'https://www.wonkafoods.com/', 'Initec Systems', 'Nonexistent Widgets'] };
    const bulk = await post(embedded, a.key, '/api/bulk-company-search', queries);
    // 1 credit per query that ran (spec 8), the one with no confident match included.
    expect(bulk).toMatchObject({ status: 200, body: { credits_used: 4 } });
    expect((bulk.body.results as { company: unknown }[]).filter((r) => r.company !== null)).toHaveLength(3);
    expect(await post(remote, b.key, '/api/bulk-company-search', queries)).toEqual(bulk);
    expect(sim.stats.keys).toBe(6);
    expect((await remote.engine.deps.billing.requireAccount(b.id)).credits).toBe((await embedded.engine.deps.billing.requireAccount(a.id)).credits);
    expect(await c.held(remote.engine.deps.store)).toBe(0);

    sim.set({ down: true });
    expect(await post(remote, b.key, '/api/agent/company', { query: 'Hooli Media' })).toMatchObject({ status: 503, body: { code: 'provider_unavailable' } });
    expect(await post(remote, b.key, '/api/bulk-company-search', { queries: ['Hooli Media'] })).toMatchObject({ status: 503, body: { code: 'provider_unavailable' } });
  });
});
