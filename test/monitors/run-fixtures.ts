import { setTimeout as sleep } from 'node:timers/promises';
import { Worker } from '../../src/jobs/worker.js';
import type { Engine } from '../../src/jobs/engine.js';
import { MonitorRunDriver } from '../../src/monitors/run-driver.js';
import type { MonitorRunRecord } from '../../src/storage/monitor-records.js';
import type { StoredSnapshot } from '../../src/storage/monitor-run-records.js';
import type { Store } from '../../src/storage/store.js';

/** The i-th email target: lower case, as monitors store them. */
export const emailTarget = (i: number): string => `person${String(i).padStart(5, '0')}@example.com`;
/** The i-th phone target: a valid German mobile number in E.164. */
export const phoneTarget = (i: number): string => `+49151${20_000_000 + i}`;

/** The first breach import: every 4th email in AlphaLeak (no passwords), every 4th phone in PhoneDump. */
export async function importFirstBreaches(store: Store, n: number): Promise<void> {
  const emails = [];
  const phones = [];
  for (let i = 0; i < n; i += 4) {
    emails.push({ email: emailTarget(i), breach: 'AlphaLeak', breachedAt: '2020-03-01', dataClasses: ['Email addresses', 'Names'] });
    phones.push({ phone: phoneTarget(i), breach: 'PhoneDump', breachedAt: '2021-06-01' });
  }
  await store.emailBreaches.add(emails);
  await store.breaches.add(phones);
}

/** The targets the second import adds a breach for: every 10th from 3 (a quarter of them were in the first import too). */
export const reimported = (i: number): boolean => i % 10 === 3;

/** The re-import: BetaLeak (passwords exposed) for the chosen emails, SimSwap for the chosen phones. */
export async function importMoreBreaches(store: Store, n: number): Promise<void> {
  const emails = [];
  const phones = [];
  for (let i = 0; i < n; i++) {
    if (!reimported(i)) continue;
    emails.push({ email: emailTarget(i), breach: 'BetaLeak', breachedAt: '2024-05-01', dataClasses: ['Email addresses', 'Passwords'] });
    phones.push({ phone: phoneTarget(i), breach: 'SimSwap', breachedAt: '2024-02-01' });
  }
  await store.emailBreaches.add(emails);
  await store.breaches.add(phones);
}

export async function runOf(store: Store, accountId: string, monitorId: string, runId: string): Promise<MonitorRunRecord> {
  const { runs } = await store.monitors.runs(accountId, monitorId, { limit: 100, offset: 0 });
  const run = runs.find((r) => r.id === runId);
  if (!run) throw new Error(`run ${runId} not found`);
  return run;
}

const ENDED = new Set(['completed', 'failed', 'cancelled']);

/**
 * Drives the runs in this process, as `sluice worker` does: a job worker and the run driver side
 * by side, until every run has ended (or `timeoutMs`).
 */
export async function driveRuns(engine: Engine, accountId: string, runs: readonly { monitorId: string; runId: string }[], timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const ended = async () => {
    for (const { monitorId, runId } of runs) if (!ENDED.has((await runOf(engine.deps.store, accountId, monitorId, runId)).status)) return Date.now() > deadline;
    return true;
  };
  const driver = new MonitorRunDriver({ engine: engine.deps, jobService: engine.jobService }, 'test-driver');
  const worker = new Worker(engine.deps).run({ concurrency: 2, until: ended });
  while (!(await ended())) {
    if (!(await driver.tick())) await sleep(20);
  }
  await worker;
}

/** Every snapshot of a run (or only the changed ones), by seq. */
export async function snapshotsOf(store: Store, runId: string, changedOnly = false): Promise<StoredSnapshot[]> {
  const all: StoredSnapshot[] = [];
  for (;;) {
    const page = await store.monitorRuns.snapshotPage(runId, { afterSeq: all.length === 0 ? -1 : all[all.length - 1]!.seq, limit: 2_000, changedOnly });
    if (page.length === 0) return all;
    all.push(...page);
  }
}
