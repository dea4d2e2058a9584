import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { refuseDeleted } from '../../src/jobs/job-deletion.js';
import { sweepRetention, sweepRetentionPeriodically } from '../../src/jobs/retention-sweep.js';
import { FakeClock } from '../../src/shared/clock.js';
import { AppError, ERROR_CODES } from '../../src/shared/errors.js';
import type { ObjectStore } from '../../src/storage/s3/object-store.js';
import { writeGenderCsv } from '../support/csv-fixture.js';
import { engineScope, runUntilSettled, TEST_STORES, type TestEngine } from '../support/test-engine.js';
import { subscribe } from '../support/test-store.js';

const DAY_MS = 86_400_000;
const NOW = Date.UTC(2026, 5, 1);

/** Every object the job owns, listed from the embedded S3 server's directory. */
function objectsOf(e: TestEngine, jobId: string): string[] {
  const bucket = path.join(e.dataDir, 's3', 'buckets', e.config.s3.bucket);
  const found: string[] = [];
  const walk = (dir: string): void => {
    if (!fs.existsSync(dir)) return;
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('._S3rver_object')) found.push(path.relative(bucket, full).slice(0, -'._S3rver_object'.length).split(path.sep).join('/'));
    }
  };
  walk(bucket);
  return found.filter((k) => k.startsWith(`inputs/${jobId}.`) || k.startsWith(`jobs/${jobId}/`) || k.startsWith(`results/${jobId}/`)).sort();
}

const attempt = (at: number) => ({ status: 'success' as const, payload: {}, responseStatus: 200, responseBody: null, errorCode: null, nextAttemptAt: null, at });

describe.each(TEST_STORES)('the retention sweep on %s', (store) => {
  const engines = engineScope(store);
  afterEach(() => engines.closeAll());

  /** A completed gender job, finished at the clock's time. */
  async function finishedJob(e: TestEngine, clock: FakeClock, accountId: string, at: number): Promise<string> {
    clock.set(at);
    const input = await writeGenderCsv(e.dataDir, `in-${at}.csv`, { rows: 30, seed: 3 });
    const job = await e.jobService.submit({ accountId, type: 'gender', body: fs.createReadStream(input), inputName: null, options: {} });
    await runUntilSettled(e, job.id);
    expect((await e.deps.jobs.require(job.id)).finishedAt).toBe(at);
    return job.id;
  }

  it('purges a job finished 31 days ago and keeps one finished 29 days ago; old sent events and finished deliveries go, recent ones stay', async () => {
    const clock = new FakeClock(NOW - 40 * DAY_MS);
    const e = await engines.open({}, clock);
    const account = await e.deps.billing.createAccount({ credits: 1_000, now: clock.now() });
    const webhook = await subscribe(e.deps.store, account.id);

    const old = await finishedJob(e, clock, account.id, NOW - 31 * DAY_MS);
    await e.deps.store.deliveries.relayOutbox(clock.now());
    const oldTest = await e.deps.store.deliveries.recordTest(webhook, 'msg_old', attempt(clock.now()));
    const recent = await finishedJob(e, clock, account.id, NOW - 29 * DAY_MS);
    await e.deps.store.deliveries.relayOutbox(clock.now());
    const recentTest = await e.deps.store.deliveries.recordTest(webhook, 'msg_recent', attempt(clock.now()));
    const ledger = await e.deps.billing.ledger(account.id);
    const recentObjects = objectsOf(e, recent);
    expect(objectsOf(e, old).length).toBeGreaterThan(0);

    clock.set(NOW);
    const counts = await sweepRetention(e.deps, { days: 30 });
    expect(counts).toEqual({ expired: 1, purged: 1, failed: 0, outbox: 1, deliveries: 1 });
    expect(objectsOf(e, old)).toEqual([]);
    expect(await e.deps.store.retention.deletion(old)).toMatchObject({ reason: 'retention', deletedAt: NOW, purgedAt: NOW });
    expect((await e.deps.jobs.require(old)).status).toBe('completed');
    expect(objectsOf(e, recent)).toEqual(recentObjects);
    expect(await e.deps.store.retention.deletion(recent)).toBeUndefined();
    expect(await e.deps.billing.ledger(account.id)).toEqual(ledger);

    expect(await e.deps.store.deliveries.get(oldTest.id)).toBeUndefined();
    expect(await e.deps.store.deliveries.get(recentTest.id)).toBeDefined();
    // The relayed end events were never sent to the (unreachable) receiver: pending, so kept.
    expect((await e.deps.store.deliveries.list(webhook, 10)).filter((d) => d.status === 'pending')).toHaveLength(2);

    expect(await sweepRetention(e.deps, { days: 30 })).toEqual({ expired: 0, purged: 0, failed: 0, outbox: 0, deliveries: 0 });
  });

  it('with 0 days purges nothing by age', async () => {
    const clock = new FakeClock(NOW - 400 * DAY_MS);
    const e = await engines.open({}, clock);
    const account = await e.deps.billing.createAccount({ credits: 1_000, now: clock.now() });
    const id = await finishedJob(e, clock, account.id, NOW - 365 * DAY_MS);
    const objects = objectsOf(e, id);

    clock.set(NOW);
    expect(await sweepRetention(e.deps, { days: 0 })).toEqual({ expired: 0, purged: 0, failed: 0, outbox: 0, deliveries: 0 });
    expect(objectsOf(e, id)).toEqual(objects);
    expect(await e.deps.store.retention.deletion(id)).toBeUndefined();
  });

  it('finishes a deletion that a crash cut short between the mark and the object deletion, and one the object store failed', async () => {
    const clock = new FakeClock(NOW);
    const e = await engines.open({}, clock);
    const account = await e.deps.billing.createAccount({ credits: 1_000, now: clock.now() });
    const crashed = await finishedJob(e, clock, account.id, NOW);
    const failing = await finishedJob(e, clock, account.id, NOW);

    // What a delete leaves when its process dies right after the mark: no object deleted yet.
    await e.deps.store.retention.markDeleted(crashed, 'requested', NOW);
    await e.deps.store.retention.markDeleted(failing, 'requested', NOW);
    expect(objectsOf(e, crashed).length).toBeGreaterThan(0);
    await expect(refuseDeleted(e.deps, crashed)).rejects.toMatchObject({ code: ERROR_CODES.jobDeleted, statusCode: 410 });

    // The object store refuses the second job's prefixes for one run.
    const down: ObjectStore = Object.create(e.deps.objects) as ObjectStore;
    down.deletePrefix = async (prefix: string) => {
      if (prefix.includes(failing)) throw new AppError(ERROR_CODES.storageUnavailable, 'object store answered 503', { retryable: true });
      return e.deps.objects.deletePrefix(prefix);
    };
    clock.advance(1);
    const first = await sweepRetention({ ...e.deps, objects: down }, { days: 30 });
    expect(first).toMatchObject({ expired: 0, purged: 1, failed: 1 });
    expect(objectsOf(e, crashed)).toEqual([]);
    expect((await e.deps.store.retention.deletion(crashed))?.purgedAt).toBe(NOW + 1);
    expect(objectsOf(e, failing).length).toBeGreaterThan(0);
    expect((await e.deps.store.retention.deletion(failing))?.purgedAt).toBeNull();

    const second = await sweepRetention(e.deps, { days: 30 });
    expect(second).toMatchObject({ purged: 1, failed: 0 });
    expect(objectsOf(e, failing)).toEqual([]);
    expect(await e.deps.store.retention.unpurged(10)).toEqual([]);
  });

  it('runs by itself once started, as serve and worker start it, and its stop waits for a run in progress', async () => {
    const clock = new FakeClock(NOW);
    const e = await engines.open({}, clock);
    const account = await e.deps.billing.createAccount({ credits: 1_000, now: clock.now() });
    const id = await finishedJob(e, clock, account.id, NOW);
    await e.deps.store.retention.markDeleted(id, 'requested', NOW);

    const stop = sweepRetentionPeriodically(e.deps, { days: 30 }, { firstAfterMs: 5, everyMs: 20 });
    try {
      await vi.waitFor(async () => expect((await e.deps.store.retention.deletion(id))?.purgedAt).toBe(NOW), { timeout: 10_000, interval: 20 });
    } finally {
      await stop();
    }
    expect(objectsOf(e, id)).toEqual([]);
  });
});
