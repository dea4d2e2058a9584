import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/shared/clock.js';
import type { MonitorRunRecord } from '../../src/storage/monitor-records.js';
import type { Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { DAY_MS, newAccount, NOW, openTestStore, type TestStore } from '../support/test-store.js';
import { errorCode, newMonitor } from './monitor-fixtures.js';

const HOUR_MS = 3_600_000;
const WEEK_MS = 7 * DAY_MS;

/**
 * The durable schedule. `a` and `b` are two stores on one database, as two scheduler processes
 * (on SQLite each in a worker thread with its own connection, so their claims really overlap);
 * `store` sets up and reads. Time is a fake clock, moved by the test.
 */
describe.each(TEST_STORES)('Store contract on %s: the monitor schedule', (kind) => {
  let opened: TestStore;
  let store: Store;
  let account: string;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
    account = (await newAccount(store)).id;
  });
  afterEach(() => opened.close());

  /** Each run as `monitor@Nd` (or `@Nh` off the day): its period start, from NOW. */
  const periods = (runs: MonitorRunRecord[]) => runs.map((r) => `${r.monitorId}@${label(r.periodStart! - NOW)}`).sort();
  const label = (ms: number) => (ms % DAY_MS === 0 ? `${ms / DAY_MS}d` : `${ms / HOUR_MS}h`);

  /*
   * Without the compare-and-set on next_run_at (and the UNIQUE period key behind it), both
   * schedulers read the same due monitor at the same instant and each records a run: the periods
   * below would show twice. Without moving next_run_at past `now` a late tick would record the
   * periods it missed one by one.
   */
  it('two schedulers ticking together over five weeks record each due period once', async () => {
    const [a, b] = await Promise.all([opened.openPeer(), opened.openPeer()]);
    const ids = Array.from({ length: 12 }, (_, i) => `m${String(i).padStart(2, '0')}`);
    for (const [i, id] of ids.entries()) await store.monitors.create(newMonitor(account, id, { startAt: NOW + i * HOUR_MS, frequency: i % 2 ? 'weekly' : 'biweekly' }));
    const clock = new FakeClock(NOW);
    const runs: MonitorRunRecord[] = [];
    while (clock.now() <= NOW + 5 * WEEK_MS) {
      const now = clock.now();
      const [byA, byB] = await Promise.all([a.monitors.claimDueRuns(now, 100), b.monitors.claimDueRuns(now, 100)]);
      runs.push(...byA, ...byB);
      clock.advance(6 * HOUR_MS);
    }
    // Monitor i starts i hours after NOW: its periods are those starting by day 35.
    const expected = ids.flatMap((id, i) => {
      const step = (i % 2 ? 7 : 14) * DAY_MS;
      const count = Math.floor((5 * WEEK_MS - i * HOUR_MS) / step) + 1;
      return Array.from({ length: count }, (_, n) => `${id}@${label(i * HOUR_MS + n * step)}`);
    });
    const seen = periods(runs);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(expected.sort());
    expect(runs.every((r) => r.status === 'queued' && r.trigger === 'schedule' && r.jobId === null && r.accountId === account)).toBe(true);
  });

  it('many claims at one instant, from both processes, make one run for the period', async () => {
    const [a, b] = await Promise.all([opened.openPeer(), opened.openPeer()]);
    for (let round = 0; round < 10; round++) {
      await store.monitors.create(newMonitor(account, `m${round}`, { startAt: NOW + round * WEEK_MS }));
      const now = NOW + round * WEEK_MS;
      const claims = await Promise.all([a, b, a, b, a, b].map((s) => s.monitors.claimDueRuns(now, 100)));
      const made = claims.flat().filter((r) => r.monitorId === `m${round}`);
      expect(made).toHaveLength(1);
    }
  });

  it('after a week and more of downtime a monitor gets one catch-up run for the latest period, and goes on from there', async () => {
    await store.monitors.create(newMonitor(account, 'm1'));
    expect(periods(await store.monitors.claimDueRuns(NOW, 100))).toEqual(['m1@0d']);
    // Down from day 1 to day 22: the periods of day 7, 14 and 21 passed unrun.
    const back = NOW + 22 * DAY_MS;
    expect(periods(await store.monitors.claimDueRuns(back, 100))).toEqual(['m1@21d']);
    expect(await store.monitors.claimDueRuns(back + HOUR_MS, 100)).toEqual([]);
    expect(await store.monitors.get(account, 'm1')).toMatchObject({ nextRunAt: NOW + 28 * DAY_MS, lastRunAt: back });
    expect(periods(await store.monitors.claimDueRuns(NOW + 28 * DAY_MS, 100))).toEqual(['m1@28d']);
  });

  it('a monthly monitor anchored on the 31st runs on the last day of short months and on the 31st again', async () => {
    const jan31 = Date.UTC(2026, 0, 31, 9);
    await store.monitors.create(newMonitor(account, 'm1', { frequency: 'monthly', startAt: jan31, now: jan31 }));
    const claimed: number[] = [];
    for (let t = jan31; t < Date.UTC(2026, 4, 1); t += DAY_MS) for (const run of await store.monitors.claimDueRuns(t, 100)) claimed.push(run.periodStart!);
    expect(claimed.map((t) => new Date(t).toISOString())).toEqual([
      '2026-01-31T09:00:00.000Z',
      '2026-02-28T09:00:00.000Z',
      '2026-03-31T09:00:00.000Z',
      '2026-04-30T09:00:00.000Z',
    ]);
  });

  it('a run by hand is queued without moving next_run_at, and a second one waits for it', async () => {
    await store.monitors.create(newMonitor(account, 'm1', { startAt: NOW + 2 * DAY_MS }));
    const run = await store.monitors.queueManualRun(account, 'm1', 'run-1', NOW + HOUR_MS);
    expect(run).toMatchObject({ id: 'run-1', monitorId: 'm1', trigger: 'manual', periodStart: null, status: 'queued', jobId: null, createdAt: NOW + HOUR_MS });
    expect(await store.monitors.get(account, 'm1')).toMatchObject({ nextRunAt: NOW + 2 * DAY_MS, lastRunAt: NOW + HOUR_MS });
    expect(await errorCode(store.monitors.queueManualRun(account, 'm1', 'run-2', NOW + 2 * HOUR_MS))).toBe('run_in_progress');
    expect(await store.monitors.claimDueRuns(NOW + DAY_MS, 100)).toEqual([]);
    expect(periods(await store.monitors.claimDueRuns(NOW + 2 * DAY_MS, 100))).toEqual(['m1@2d']);
    const { runs, total } = await store.monitors.runs(account, 'm1', { limit: 10, offset: 0 });
    expect(total).toBe(2);
    expect(runs.map((r) => r.trigger)).toEqual(['schedule', 'manual']);
    const other = (await newAccount(store)).id;
    expect(await errorCode(store.monitors.queueManualRun(other, 'm1', 'run-3', NOW))).toBe('monitor_not_found');
    expect(await errorCode(store.monitors.runs(other, 'm1', { limit: 10, offset: 0 }))).toBe('monitor_not_found');
  });

  it('a paused monitor does not run, by schedule or by hand; resumed, it skips the periods it was paused for', async () => {
    await store.monitors.create(newMonitor(account, 'm1'));
    expect(periods(await store.monitors.claimDueRuns(NOW, 100))).toEqual(['m1@0d']);
    const paused = await store.monitors.pause(account, 'm1', NOW + DAY_MS);
    expect(paused).toMatchObject({ status: 'paused', nextRunAt: NOW + 7 * DAY_MS });
    for (let day = 1; day <= 20; day++) expect(await store.monitors.claimDueRuns(NOW + day * DAY_MS, 100)).toEqual([]);
    expect(await errorCode(store.monitors.queueManualRun(account, 'm1', 'run-x', NOW + 20 * DAY_MS))).toBe('invalid_state');
    const resumed = await store.monitors.resume(account, 'm1', NOW + 20 * DAY_MS);
    expect(resumed).toMatchObject({ status: 'active', nextRunAt: NOW + 21 * DAY_MS });
    expect(await store.monitors.claimDueRuns(NOW + 20 * DAY_MS, 100)).toEqual([]);
    expect(periods(await store.monitors.claimDueRuns(NOW + 21 * DAY_MS, 100))).toEqual(['m1@21d']);
  });

  it('pausing cancels the runs still queued, not another account\'s, and not a run a starter has taken', async () => {
    await store.monitors.create(newMonitor(account, 'm2'));
    expect(periods(await store.monitors.claimDueRuns(NOW, 100))).toEqual(['m2@0d']);
    const taken = await store.monitorRuns.claimStart('starter', NOW, 10 * HOUR_MS);
    await store.monitors.create(newMonitor(account, 'm1', { startAt: NOW + HOUR_MS }));
    const [queued] = await store.monitors.claimDueRuns(NOW + HOUR_MS, 100);
    const other = (await newAccount(store)).id;
    expect(await store.monitors.pause(other, 'm1', NOW + 2 * HOUR_MS)).toBeUndefined();
    expect((await store.monitors.runs(account, 'm1', { limit: 10, offset: 0 })).runs[0]).toMatchObject({ id: queued!.id, status: 'queued' });
    await store.monitors.pause(account, 'm1', NOW + 2 * HOUR_MS);
    await store.monitors.pause(account, 'm2', NOW + 2 * HOUR_MS);
    expect((await store.monitors.runs(account, 'm1', { limit: 10, offset: 0 })).runs).toEqual([
      expect.objectContaining({ id: queued!.id, status: 'cancelled', reason: 'monitor_paused' }),
    ]);
    expect((await store.monitors.runs(account, 'm2', { limit: 10, offset: 0 })).runs).toEqual([expect.objectContaining({ id: taken!.run.id, status: 'running' })]);
    // Nothing is left for a starter to take.
    expect(await store.monitorRuns.claimStart('starter-2', NOW + 2 * HOUR_MS, 60_000)).toBeUndefined();
  });

  it('resumed before its next period, a monitor keeps its time', async () => {
    await store.monitors.create(newMonitor(account, 'm1', { startAt: NOW + 3 * DAY_MS }));
    await store.monitors.pause(account, 'm1', NOW);
    expect(await store.monitors.resume(account, 'm1', NOW + DAY_MS)).toMatchObject({ status: 'active', nextRunAt: NOW + 3 * DAY_MS });
  });
});
