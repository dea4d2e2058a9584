import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runJob } from '../../src/cli/run-command.js';
import { startProviderSimulator, type ProviderSimulator, type SimulatorOptions } from '../../src/lookups/remote/provider-simulator.js';
import { writeGenderCsv } from '../support/csv-fixture.js';
import { openTestEngine, resultText, runUntilCompleted, tempDir, type TestEngine } from '../support/test-engine.js';

const engines: TestEngine[] = [];
const simulators: ProviderSimulator[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
  await Promise.all(simulators.splice(0).map((s) => s.close()));
});

async function simulator(options: Partial<SimulatorOptions>): Promise<ProviderSimulator> {
  const s = await startProviderSimulator({ latencyMs: 2, ...options });
  simulators.push(s);
  return s;
}

async function engine(env: Record<string, string> = {}): Promise<TestEngine> {
  const e = await openTestEngine(env);
  engines.push(e);
  return e;
}

/** The same file through the embedded engine: what every remote run must reproduce byte for byte. */
async function embeddedRun(file: string) {
  const e = await engine();
  const account = await e.deps.billing.createAccount({ credits: 100_000, now: Date.now() });
  const run = await runJob(e, { file, type: 'gender', accountId: account.id, outDir: path.join(e.dataDir, 'out') });
  return { all: fs.readFileSync(run.files.all!, 'utf8'), found: fs.readFileSync(run.files.found!, 'utf8'), credits: run.summary.credits_used };
}

describe('a gender job against a remote provider', () => {
  it('gives the same files and charges as the embedded engine, through 429s and 502s, with the auth header sent', async () => {
    const file = await writeGenderCsv(tempDir(), 'in.csv', { rows: 3_000, duplicateShare: 0.1, invalidShare: 0.05 });
    const expected = await embeddedRun(file);
    const sim = await simulator({ errorRate: 0.2, rateLimitEvery: 7, retryAfterSeconds: 0, requireAuth: 'Bearer sim-secret', seed: 3 });
    const e = await engine({ SLUICE_GENDER_PROVIDER_URL: sim.url, SLUICE_GENDER_PROVIDER_AUTH: 'Bearer sim-secret' });
    const account = await e.deps.billing.createAccount({ credits: 100_000, now: Date.now() });
    const run = await runJob(e, { file, type: 'gender', accountId: account.id, outDir: path.join(e.dataDir, 'out') });
    expect(run.summary).toMatchObject({ status: 'completed', credits_used: expected.credits });
    expect(run.summary.rows.error).toBe(0);
    expect(fs.readFileSync(run.files.all!, 'utf8')).toBe(expected.all);
    expect(fs.readFileSync(run.files.found!, 'utf8')).toBe(expected.found);
    expect(sim.stats.byStatus[502]).toBeGreaterThan(0);
    expect(sim.stats.byStatus[429]).toBeGreaterThan(0);
    expect(sim.stats.byStatus[401] ?? 0).toBe(0);
    expect(100_000 - (await e.deps.billing.requireAccount(account.id)).credits).toBe(expected.credits);
  });

  it('pauses with provider_unavailable while the provider is down, and completes after it is back with the files of a run without the outage', async () => {
    const file = await writeGenderCsv(tempDir(), 'in.csv', { rows: 3_000, seed: 11 });
    const expected = await embeddedRun(file);
    const sim = await simulator({ latencyMs: 5 });
    const e = await engine({ SLUICE_GENDER_PROVIDER_URL: sim.url, SLUICE_PROVIDER_RETRY_SECONDS: '1', SLUICE_PROVIDER_TIMEOUT_MS: '2000' });
    const account = await e.deps.billing.createAccount({ credits: 100_000, now: Date.now() });
    const outage = setInterval(() => {
      if (sim.stats.requests >= 4) {
        sim.set({ down: true });
        clearInterval(outage);
      }
    }, 1);
    const first = await runJob(e, { file, type: 'gender', accountId: account.id, outDir: path.join(e.dataDir, 'out') });
    clearInterval(outage);
    expect(first.summary).toMatchObject({ status: 'paused', reason: 'provider_unavailable' });
    expect(first.summary.rows.error).toBe(0);
    expect(100_000 - (await e.deps.billing.requireAccount(account.id)).credits).toBe(first.summary.credits_used);

    sim.set({ down: false });
    await runUntilCompleted(e, first.summary.id);
    const job = await e.deps.jobs.require(first.summary.id);
    expect(job.status).toBe('completed');
    expect({ all: await resultText(e, job.id, 'all'), found: await resultText(e, job.id, 'found') }).toEqual({ all: expected.all, found: expected.found });
    expect(job.creditsUsed).toBe(expected.credits);
    expect(100_000 - (await e.deps.billing.requireAccount(account.id)).credits).toBe(expected.credits);
  });
});
