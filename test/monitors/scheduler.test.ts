import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { scheduleDueRuns, scheduleMonitorsPeriodically } from '../../src/monitors/scheduler.js';
import { FakeClock } from '../../src/shared/clock.js';
import { silentLogger } from '../../src/shared/logger.js';
import { nextPeriodAfter, periodAtOrBefore } from '../../src/storage/monitor-schedule.js';
import { DAY_MS, newAccount, NOW, openTestStore, type TestStore } from '../support/test-store.js';
import { newMonitor } from './monitor-fixtures.js';

describe('the scheduler tick', () => {
  let opened: TestStore;
  beforeEach(async () => {
    opened = await openTestStore('sqlite');
  });
  afterEach(() => opened.close());

  it('claims every due monitor, past one batch of claims, and none twice', async () => {
    const { store } = opened;
    const account = (await newAccount(store)).id;
    for (let i = 0; i < 250; i++) await store.monitors.create(newMonitor(account, `m${String(i).padStart(3, '0')}`));
    const clock = new FakeClock(NOW);
    const deps = { monitors: store.monitors, clock, log: silentLogger() };
    const runs = await scheduleDueRuns(deps);
    expect(new Set(runs.map((r) => r.monitorId)).size).toBe(250);
    expect(await scheduleDueRuns(deps)).toEqual([]);
    clock.advance(7 * DAY_MS);
    expect(await scheduleDueRuns(deps)).toHaveLength(250);
  });

  it('runs at once when started and stops cleanly', async () => {
    const { store } = opened;
    const account = (await newAccount(store)).id;
    await store.monitors.create(newMonitor(account, 'm1'));
    const stop = scheduleMonitorsPeriodically({ monitors: store.monitors, clock: new FakeClock(NOW), log: silentLogger() }, 60_000);
    await stop();
    expect((await store.monitors.runs(account, 'm1', { limit: 10, offset: 0 })).total).toBe(1);
  });
});

describe('period arithmetic', () => {
  const anchor = Date.UTC(2026, 10, 30, 12);
  it.each([
    ['quarterly', Date.UTC(2027, 1, 28, 12), Date.UTC(2027, 1, 28, 12), Date.UTC(2027, 4, 30, 12)],
    ['quarterly', Date.UTC(2027, 1, 28, 11), anchor, Date.UTC(2027, 1, 28, 12)],
    ['monthly', Date.UTC(2027, 0, 15), Date.UTC(2026, 11, 30, 12), Date.UTC(2027, 0, 30, 12)],
    ['biweekly', anchor + 29 * DAY_MS, anchor + 28 * DAY_MS, anchor + 42 * DAY_MS],
    ['weekly', anchor - DAY_MS, anchor, anchor],
  ] as const)('%s at %i: the period it is in starts at %i, the next at %i', (frequency, t, current, next) => {
    if (t >= anchor) expect(periodAtOrBefore(anchor, frequency, t)).toBe(current);
    expect(nextPeriodAfter(anchor, frequency, t)).toBe(next);
  });
});
