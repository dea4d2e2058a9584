import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { STORE_KINDS } from '../../src/storage/store.js';
import { cliEnv, killChildren, parseJson, removeScratchDirs, runCli, scratchDir } from '../support/cli-process.js';
import { REPO_ROOT, storeEnv, TEST_STORES } from '../support/test-engine.js';

/** What `sluice run --json` prints: the job summary with the local result files. */
interface RunSummary {
  id: string;
  status: string;
  credits_used: number;
  rows: Record<string, number | null>;
  files: Record<'all' | 'found' | 'errors', string>;
}

const FILTERS = ['all', 'found', 'errors'] as const;
const drops: (() => Promise<void>)[] = [];

afterEach(async () => {
  await killChildren();
});

afterAll(async () => {
  await Promise.all(drops.map((drop) => drop()));
  removeScratchDirs();
});

/**
 * `sluice run` on a store, the same way a user runs it: a fresh data dir, the bundled fixture (10,000
 * rows with duplicates, invalid addresses and formula cells), small chunks so that many checkpoints
 * commit, and then the account's balance as `sluice accounts show` reports it.
 */
async function runOn(store: (typeof TEST_STORES)[number]): Promise<{ summary: RunSummary; files: Record<string, Buffer>; balance: number }> {
  const placed = await storeEnv(store);
  drops.push(placed.drop);
  const dir = scratchDir(`sluice-parity-${store}-`);
  const env = cliEnv(dir, { ...placed.env, SLUICE_CHUNK_ROWS: '2000', SLUICE_BATCH_ROWS: '250' });
  const input = path.join(REPO_ROOT, 'fixtures/gender-10k.csv');
  // No --account: the `local` account, which `sluice run` creates with SLUICE_DEFAULT_CREDITS.
  const run = await runCli(['run', input, '--json', '--out', path.join(dir, 'out')], env, 120_000);
  expect(run.code, run.stderr).toBe(0);
  const summary = parseJson<RunSummary>(run);
  const files = Object.fromEntries(FILTERS.map((filter) => [filter, fs.readFileSync(summary.files[filter])]));
  const shown = await runCli(['accounts', 'show', 'local', '--json'], env);
  expect(shown.code, shown.stderr).toBe(0);
  return { summary, files, balance: parseJson<{ credits: number }>(shown).credits };
}

describe.skipIf(!TEST_STORES.includes(STORE_KINDS.postgres))('sluice run on PostgreSQL and on SQLite', () => {
  it('gives byte-identical result files and the same charges for the same input', async () => {
    const [sqlite, postgres] = await Promise.all([runOn(STORE_KINDS.sqlite), runOn(STORE_KINDS.postgres)]);
    expect(postgres.summary.status).toBe('completed');
    expect(postgres.summary.rows).toEqual(sqlite.summary.rows);
    expect(postgres.summary.credits_used).toBe(sqlite.summary.credits_used);
    expect(sqlite.summary.credits_used).toBeGreaterThan(5_000);
    expect(postgres.balance).toBe(sqlite.balance);
    for (const filter of FILTERS) {
      expect(postgres.files[filter]!.length, filter).toBeGreaterThan(0);
      expect(postgres.files[filter]!.equals(sqlite.files[filter]!), `${filter}.csv differs`).toBe(true);
    }
  });
});
