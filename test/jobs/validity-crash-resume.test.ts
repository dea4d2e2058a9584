import fs from 'node:fs';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runJob } from '../../src/cli/run-command.js';
import { jobEndEvent } from '../../src/jobs/job-events.js';
import { openStore } from '../../src/storage/open-store.js';
import type { Store } from '../../src/storage/store.js';
import { exited, startWorker, waitFor } from '../support/child-worker.js';
import { startMailWorld, type MailWorld } from '../support/mail-world.js';
import { engineScope, openTestEngine, TEST_SEAL_KEY, TEST_STORES, tempDir, type TestEngine } from '../support/test-engine.js';

// Worker processes are started (from dist/, so `npm run build` first) and killed with SIGKILL while
// they talk SMTP to the loopback fakes of this process; the fakes outlive every kill.
const ENV = { SLUICE_CHUNK_ROWS: '1000', SLUICE_BATCH_ROWS: '50', SLUICE_LEASE_SECONDS: '2', SLUICE_WORKER_CONCURRENCY: '2', SLUICE_SEAL_KEY: TEST_SEAL_KEY };
const ROWS = 6_000;

let world: MailWorld;
beforeAll(async () => {
  world = await startMailWorld({ timeoutMs: 2_000 });
});
afterAll(() => world.stop());

/** Addresses over the fakes' domains, with repeats and bad cells; the same file every run. */
function writeInput(dir: string): string {
  const lines = ['id,email'];
  const known = ['alice', 'bob', 'carol', 'info'];
  for (let i = 0; i < ROWS; i++) {
    const kind = i % 10;
    let email: string;
    if (kind === 0) email = `${known[(i / 10) % 4]}@ok.test`;
    else if (kind === 1) email = `person${i}@catchall.test`;
    else if (kind === 2) email = `person${i}@nullmx.test`;
    else if (kind === 3) email = `person${i % 700}@ok.test`; // repeats of earlier rows
    else if (kind === 4 && i % 40 === 4) email = 'not an email';
    else email = `user${i}@ok.test`;
    lines.push(`${i},${email}`);
  }
  const file = path.join(dir, 'in.csv');
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

async function charges(e: TestEngine, accountId: string, jobId: string) {
  const lines = (await e.deps.billing.ledger(accountId)).filter((l) => l.reason === 'charge');
  return { keys: await e.deps.billing.chargedKeys(accountId, jobId), deltas: lines.map((l) => l.delta).sort() };
}

describe.each(TEST_STORES)('a validity job killed with SIGKILL and resumed, on %s', (store) => {
  const engines = engineScope(store);
  const children: ChildProcess[] = [];
  const watchers: Store[] = [];
  afterEach(async () => {
    const left = children.splice(0);
    for (const child of left) child.kill('SIGKILL');
    await Promise.all(left.map(exited));
    await Promise.all(watchers.splice(0).map((s) => s.close()));
    await engines.closeAll();
    expect(world.dataAttempts()).toBe(0);
  });

  it('produces the same result bytes and the same charges as an uninterrupted run', async () => {
    const dir = tempDir();
    const input = writeInput(dir);
    const env = { ...world.env, ...ENV };

    const reference = await engines.open(env);
    const refAccount = await reference.deps.billing.createAccount({ id: 'acc', credits: 100_000, now: Date.now() });
    const clean = await runJob(reference, { file: input, type: 'validity', accountId: refAccount.id, outDir: path.join(dir, 'clean') });
    expect(clean.summary.status).toBe('completed');

    const crashed = await openTestEngine({ ...(await engines.env()), ...env });
    const account = await crashed.deps.billing.createAccount({ id: 'acc', credits: 100_000, now: Date.now() });
    const job = await crashed.jobService.submit({ accountId: account.id, type: 'validity', body: fs.createReadStream(input), inputName: 'in.csv', options: {} });
    await crashed.close();
    const { config } = crashed;
    const sealKey = config.sealKey === undefined ? undefined : Buffer.from(config.sealKey, 'base64');
    const watch = await openStore({ dataDir: config.dataDir, sqlite: config.sqlite, databaseUrl: config.database.url, poolSize: 1, sealKey }, { jobEnded: jobEndEvent });
    watchers.push(watch);
    const progress = () => watch.jobs.require(job.id);

    let killedMidway = 0;
    for (let round = 0; round < 5; round++) {
      const child = startWorker(crashed.env);
      children.push(child);
      const before = (await progress()).processedRows;
      const target = before + 200 + Math.floor(Math.random() * 700);
      await waitFor(async () => {
        const now = await progress();
        return now.processedRows >= target || now.status === 'completed';
      }, 30_000, 2);
      child.kill('SIGKILL');
      await exited(child);
      if ((await progress()).status !== 'completed') killedMidway++;
    }
    const last = startWorker(crashed.env);
    children.push(last);
    expect(await waitFor(async () => (await progress()).status === 'completed', 60_000, 20)).toBe(true);
    last.kill('SIGTERM');
    await exited(last);

    expect(killedMidway).toBeGreaterThanOrEqual(3);
    const resumed = await engines.open(crashed.env);
    for (const filter of ['all', 'found'] as const) {
      const expected = fs.readFileSync(clean.files[filter]!);
      const actual = await streamToBuffer(await resumed.jobService.openResult(job.id, filter));
      expect(actual.equals(expected), `${filter}.csv differs after ${killedMidway} kills`).toBe(true);
    }
    const paid = await charges(resumed, account.id, job.id);
    expect(paid.keys.length).toBe(clean.summary.credits_used);
    expect(paid).toEqual(await charges(reference, refAccount.id, clean.summary.id));
    expect((await resumed.deps.billing.requireAccount(account.id)).credits).toBe((await reference.deps.billing.requireAccount(refAccount.id)).credits);
  }, 240_000);
});

async function streamToBuffer(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const part of stream) parts.push(part as Buffer);
  return Buffer.concat(parts);
}
