import fs from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { importBreaches } from '../../src/cli/import-command.js';
import { runJob } from '../../src/cli/run-command.js';
import { csvLine } from '../../src/jobs/csv-writer.js';
import { jobEndEvent } from '../../src/jobs/job-events.js';
import { EMAIL_BREACHES_KIND, EmbeddedEmailBreachIndex } from '../../src/lookups/email/embedded-email-breach-index.js';
import { EmbeddedBreachIndex, PHONE_BREACHES_KIND } from '../../src/lookups/phone/embedded-breach-index.js';
import { startProviderSimulator, type ProviderSimulator, type SimulatorSetup } from '../../src/lookups/remote/provider-simulator.js';
import { RemoteLookupProvider } from '../../src/lookups/remote/remote-provider.js';
import { seededRandom } from '../../src/shared/seeded-random.js';
import { openSqliteStore } from '../../src/storage/sqlite/sqlite-store.js';
import type { Store } from '../../src/storage/store.js';
import { bearer, closeHarnesses, json, newAccount, openApiHarness } from '../support/api-harness.js';
import { openTestEngine, tempDir, type TestEngine, writeFile } from '../support/test-engine.js';

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
const URL_VAR = 'SLUICE_EMAIL_BREACH_PROVIDER_URL';
const AUTH_VAR = 'SLUICE_EMAIL_BREACH_PROVIDER_AUTH';
const BREACH_NAMES = ['Acme', 'Globex', 'Initech', 'Hooli', 'Umbrella', 'Soylent', 'Tyrell'];
const CLASSES = ['Email addresses', 'Passwords', 'Names', 'Phone numbers', 'IP addresses'];
const breached = (i: number) => `user${i}@breached.example`;

/** 200 addresses, each in 1 to 7 breaches, some undated, with 0 to 3 data classes each. */
function indexCsv(): string {
  let text = csvLine(['email', 'breach', 'breached_at', 'data_classes']);
  for (let i = 0; i < 200; i++) {
    for (let b = 0; b < 1 + (i % 7); b++) {
      const date = (i + b) % 5 === 0 ? '' : `20${String(10 + ((i + b) % 14)).padStart(2, '0')}-0${1 + (b % 9)}-1${b % 10}`;
      const classes = CLASSES.slice((i + b) % 3, (i + b) % 3 + ((i * b) % 4)).join(';');
      text += csvLine([breached(i), BREACH_NAMES[(i + b) % BREACH_NAMES.length]!, date, classes]);
    }
  }
  return text;
}

/** Breached addresses in three spellings, unbreached ones, invalid cells and repeats. */
function inputCsv(): string {
  const random = seededRandom(47);
  const cells: string[] = [];
  for (let row = 0; row < 600; row++) {
    const r = random();
    const i = Math.floor(random() * 200);
    if (r < 0.45) cells.push([breached(i), breached(i).toUpperCase(), `User ${i} <${breached(i)}>`][i % 3]!);
    else if (r < 0.75) cells.push(`someone${row}@clean.example`);
    else if (r < 0.85) cells.push(['not an email', '', 'a@b', 'x@y.com, z@w.com'][i % 4]!);
    else cells.push(cells[Math.floor(random() * cells.length)] ?? breached(1));
  }
  return csvLine(['id', 'email']) + cells.map((cell, row) => csvLine([String(row + 1), cell])).join('');
}

async function load(store: Store): Promise<void> {
  const summary = await importBreaches(store, Readable.from([Buffer.from(indexCsv())]), { maxLineBytes: 65_536 });
  expect(summary.invalid).toBe(0);
}

async function held(store: Store): Promise<number> {
  const records = await store.emailBreaches.records(Array.from({ length: 200 }, (_, i) => breached(i)));
  return [...records.values()].reduce((n, r) => n + r.length, 0);
}

/** A simulator serving email_breaches from an embedded index on a store of its own, apart from every engine's. */
async function simulator(options: SimulatorSetup = {}): Promise<ProviderSimulator> {
  const store = openSqliteStore(path.join(tempDir('sluice-sim-'), 'sim.db'), { synchronous: 'NORMAL', busyTimeoutMs: 5_000 }, { jobEnded: jobEndEvent });
  stores.push(store);
  await load(store);
  const sim = await startProviderSimulator({ latencyMs: 2, ...options, engines: new Map([[EMAIL_BREACHES_KIND, new EmbeddedEmailBreachIndex(store.emailBreaches)]]) });
  simulators.push(sim);
  return sim;
}

async function runFile(e: TestEngine, file: string) {
  const account = await e.deps.billing.createAccount({ credits: CREDITS, now: Date.now() });
  const run = await runJob(e, { file, type: 'email_breaches', accountId: account.id, outDir: path.join(e.dataDir, 'out') });
  return { run, spent: CREDITS - (await e.deps.billing.requireAccount(account.id)).credits };
}

describe('an email_breaches job against a remote provider', () => {
  it('gives the same files and charges as the embedded index, through 429s and 502s, with the auth header sent', async () => {
    const file = writeFile(tempDir(), 'in.csv', inputCsv());
    const local = await engine();
    await load(local.deps.store);
    expect(await held(local.deps.store)).toBeGreaterThan(500);
    const expected = await runFile(local, file);
    expect(expected.run.summary).toMatchObject({ status: 'completed' });
    // The fixture must make the comparison mean something: found rows that an empty index could not give.
    expect(expected.run.summary.rows.found).toBeGreaterThan(150);
    expect(expected.run.summary.credits_used).toBeGreaterThan(200);

    const sim = await simulator({ errorRate: 0.15, rateLimitEvery: 7, retryAfterSeconds: 0, requireAuth: AUTH, seed: 5 });
    const e = await engine({ [URL_VAR]: sim.url, [AUTH_VAR]: AUTH, SLUICE_PROVIDER_MAX_BATCH: '5' });
    const provider = e.deps.providers.get(EMAIL_BREACHES_KIND);
    expect(provider).toBeInstanceOf(RemoteLookupProvider);
    expect(provider?.name).toBe('remote-email_breaches');
    const { run, spent } = await runFile(e, file);

    expect(run.summary).toMatchObject({ status: 'completed', credits_used: expected.run.summary.credits_used, rows: { error: 0 } });
    expect(fs.readFileSync(run.files.all!, 'utf8')).toBe(fs.readFileSync(expected.run.files.all!, 'utf8'));
    expect(fs.readFileSync(run.files.found!, 'utf8')).toBe(fs.readFileSync(expected.run.files.found!, 'utf8'));
    expect(spent).toBe(expected.spent);
    // Every answer came from the simulator: this engine's own index is empty.
    expect(await held(e.deps.store)).toBe(0);
    expect(sim.stats.byStatus[200]).toBeGreaterThan(0);
    expect(sim.stats.byStatus[401] ?? 0).toBe(0);
    expect(sim.stats.byStatus[502]).toBeGreaterThan(0);
    expect(sim.stats.byStatus[429]).toBeGreaterThan(0);
  });

  it('is remote only when its own URL is set', async () => {
    const sim = await simulator();
    const emailOnly = await engine({ [URL_VAR]: sim.url });
    expect(emailOnly.deps.providers.get(EMAIL_BREACHES_KIND)).toBeInstanceOf(RemoteLookupProvider);
    expect(emailOnly.deps.providers.get(PHONE_BREACHES_KIND)).toBeInstanceOf(EmbeddedBreachIndex);
    const phoneOnly = await engine({ SLUICE_PHONE_PROVIDER_URL: sim.url });
    expect(phoneOnly.deps.providers.get(EMAIL_BREACHES_KIND)).toBeInstanceOf(EmbeddedEmailBreachIndex);
  });
});

describe('POST /api/lookup/email/breaches with a remote provider', () => {
  it('answers as the embedded index does; a repeat is free and served from the result cache; 503 while the service is down, free', async () => {
    const embedded = await openApiHarness();
    await load(embedded.engine.deps.store);
    const sim = await simulator({ requireAuth: AUTH });
    const remote = await openApiHarness({ [URL_VAR]: sim.url, [AUTH_VAR]: AUTH });
    const [a, b] = [await newAccount(embedded, { credits: 10 }), await newAccount(remote, { credits: 10 })];
    const post = async (h: typeof embedded, key: string, email: string) => {
      const response = await h.app.inject({ method: 'POST', url: '/api/lookup/email/breaches', headers: bearer(key), payload: { email } });
      return { status: response.statusCode, body: json(response) };
    };

    const expected = await post(embedded, a.key, breached(6));
    expect(expected).toMatchObject({ status: 200, body: { breach_info: { breached: true, count: 7 }, credits: 1, cached: false } });
    expect(await post(remote, b.key, breached(6))).toEqual(expected);
    expect(sim.stats.keys).toBe(1);

    const repeat = await post(remote, b.key, `User 6 <${breached(6).toUpperCase()}>`);
    expect(repeat).toEqual({ status: 200, body: { ...expected.body, credits: 0, cached: true } });
    expect(sim.stats.keys).toBe(1);
    expect((await remote.engine.deps.billing.requireAccount(b.id)).credits).toBe(9);

    sim.set({ down: true });
    const down = await post(remote, b.key, breached(7));
    expect(down).toMatchObject({ status: 503, body: { code: 'provider_unavailable' } });
    expect((await remote.engine.deps.billing.requireAccount(b.id)).credits).toBe(9);
  });
});
