import { randomUUID } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { jobEndEvent } from '../../src/jobs/job-events.js';
import { runJobId } from '../../src/monitors/run-starter.js';
import { openStore } from '../../src/storage/open-store.js';
import type { Store } from '../../src/storage/store.js';
import { exited, startWorker, waitFor } from '../support/child-worker.js';
import { engineScope, openTestEngine, TEST_SEAL_KEY, TEST_STORES, type TestEngine } from '../support/test-engine.js';
import { driveRuns, emailTarget, importFirstBreaches, importMoreBreaches, runOf, snapshotsOf } from './run-fixtures.js';

// One seal key for the reference and the crashed runs: the keys paid for are compared by their
// billing-cache names, which are keyed by it.
const ENV = { SLUICE_CHUNK_ROWS: '1000', SLUICE_BATCH_ROWS: '50', SLUICE_LEASE_SECONDS: '2', SLUICE_WORKER_CONCURRENCY: '2', SLUICE_SEAL_KEY: TEST_SEAL_KEY };
const N = 6_000;
const ACCOUNT = 'acc';
const MONITOR = 'mon';

/** An email monitor over N targets, tracking everything, in an account with credits to spare. */
async function setUp(e: TestEngine): Promise<void> {
  await e.deps.billing.createAccount({ id: ACCOUNT, credits: 50_000, now: Date.now() });
  await importFirstBreaches(e.deps.store, N);
  const now = Date.now();
  await e.deps.store.monitors.create(
    {
      id: MONITOR, accountId: ACCOUNT, name: 'crash', type: 'email', frequency: 'weekly', startAt: now + 86_400_000, now,
      trackedFields: ['breached', 'count', 'first_breach', 'last_breach', 'services', 'exposed_data', 'breaches'], changeDetection: 'any_change',
    },
    { targets: Array.from({ length: N }, (_, i) => emailTarget(i)) },
  );
}

/** What a run left: its stats, its snapshots and the keys its job paid for. */
async function outcome(store: Store, billing: TestEngine['deps']['billing'], runId: string) {
  const run = await runOf(store, ACCOUNT, MONITOR, runId);
  return {
    run: { status: run.status, totalRecords: run.totalRecords, changesDetected: run.changesDetected, creditsUsed: run.creditsUsed },
    snapshots: (await snapshotsOf(store, runId)).map(({ seq, target, data, changes, alert }) => ({ seq, target, data, changes, alert })),
    charged: await billing.chargedKeys(ACCOUNT, runJobId(runId)),
  };
}

describe.each(TEST_STORES)('a monitor run killed with SIGKILL and resumed, on %s', (store) => {
  const engines = engineScope(store);
  const children: ChildProcess[] = [];
  const watchers: Store[] = [];
  afterEach(async () => {
    const left = children.splice(0);
    for (const child of left) child.kill('SIGKILL');
    await Promise.all(left.map(exited));
    await Promise.all(watchers.splice(0).map((s) => s.close()));
    await engines.closeAll();
  });

  it('writes the same snapshots and charges the same keys as a clean run, for a baseline and for a run with changes', async () => {
    // The reference: both runs uninterrupted, in this process.
    const reference = await engines.open(ENV);
    await setUp(reference);
    const refRuns: string[] = [];
    for (const reimport of [false, true]) {
      if (reimport) await importMoreBreaches(reference.deps.store, N);
      const runId = (await reference.deps.store.monitors.queueManualRun(ACCOUNT, MONITOR, randomUUID(), Date.now())).id;
      await driveRuns(reference, ACCOUNT, [{ monitorId: MONITOR, runId }]);
      refRuns.push(runId);
    }

    // The same runs left to `sluice worker` processes killed at moments spread over the job and
    // the comparison; on PostgreSQL they share this test's database.
    const crashed = await openTestEngine({ ...(await engines.env()), ...ENV });
    await setUp(crashed);
    await crashed.close();
    const { config } = crashed;
    const sealKey = config.sealKey === undefined ? undefined : Buffer.from(config.sealKey, 'base64');
    const watch = await openStore({ dataDir: config.dataDir, sqlite: config.sqlite, databaseUrl: config.database.url, poolSize: 1, sealKey }, { jobEnded: jobEndEvent });
    watchers.push(watch);

    const crashedRuns: string[] = [];
    let killedMidway = 0;
    let comparisonKills = 0;
    for (const reimport of [false, true]) {
      if (reimport) await importMoreBreaches(watch, N);
      const runId = (await watch.monitors.queueManualRun(ACCOUNT, MONITOR, randomUUID(), Date.now())).id;
      crashedRuns.push(runId);
      const progress = async () => {
        const job = await watch.jobs.get(runJobId(runId));
        const run = await runOf(watch, ACCOUNT, MONITOR, runId);
        return { rows: job?.processedRows ?? 0, jobDone: job?.status === 'completed', status: run.status };
      };
      // Three kills while the job runs, a different amount of progress each time.
      for (let round = 0; round < 3; round++) {
        const child = startWorker(crashed.env);
        children.push(child);
        const target = (await progress()).rows + 300 + Math.floor(Math.random() * 1_500);
        await waitFor(async () => {
          const now = await progress();
          return now.rows >= target || now.jobDone;
        }, 30_000, 2);
        child.kill('SIGKILL');
        await exited(child);
        if (!(await progress()).jobDone) killedMidway++;
      }
      // One kill as soon as the comparison has written its first snapshots.
      const child = startWorker(crashed.env);
      children.push(child);
      await waitFor(async () => (await watch.monitorRuns.snapshotPage(runId, { afterSeq: -1, limit: 1, changedOnly: false })).length > 0, 60_000, 1);
      child.kill('SIGKILL');
      await exited(child);
      if ((await snapshotsOf(watch, runId)).length < N) comparisonKills++;
      const last = startWorker(crashed.env);
      children.push(last);
      expect(await waitFor(async () => (await progress()).status === 'completed', 90_000, 20)).toBe(true);
      last.kill('SIGTERM');
      await exited(last);
    }
    expect(killedMidway).toBeGreaterThanOrEqual(3);
    expect(comparisonKills).toBeGreaterThanOrEqual(1);

    for (const [k, runId] of crashedRuns.entries()) {
      const expected = await outcome(reference.deps.store, reference.deps.billing, refRuns[k]!);
      const actual = await outcome(watch, watch.billing, runId);
      expect(actual.run).toEqual(expected.run);
      expect(actual.charged).toEqual(expected.charged);
      expect(actual.snapshots.length).toBe(N);
      expect(actual.snapshots).toEqual(expected.snapshots);
    }
    expect((await watch.billing.requireAccount(ACCOUNT)).credits).toBe((await reference.deps.billing.requireAccount(ACCOUNT)).credits);
    expect((await watch.billing.requireAccount(ACCOUNT)).credits).toBe(50_000 - N);
  }, 300_000);
});
