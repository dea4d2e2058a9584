import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { DAY_MS, newAccount, NOW, openTestStore, type TestStore } from '../support/test-store.js';
import { errorCode, newMonitor } from './monitor-fixtures.js';

describe.each(TEST_STORES)('Store contract on %s: target lists and monitors', (kind) => {
  let opened: TestStore;
  let store: Store;
  let alice: string;
  let bob: string;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
    alice = (await newAccount(store)).id;
    bob = (await newAccount(store)).id;
  });
  afterEach(() => opened.close());

  async function readyList(accountId: string, id: string, targets: string[], type: 'email' | 'phone' | 'company' = 'email') {
    await store.monitors.createList({ id, accountId, name: id, type, sourceKey: null, now: NOW });
    await store.monitors.addListTargets(id, targets);
    return store.monitors.finishList(id, { invalidCount: 1, duplicateCount: 2, invalidByCode: { invalid_email: 1 } });
  }

  it('a list counts each target once across batches, keeps its import counts, and is its account\'s alone', async () => {
    const created = await store.monitors.createList({ id: 'l1', accountId: alice, name: 'staff', type: 'email', sourceKey: 'lists/l1.csv', now: NOW });
    expect(created).toMatchObject({ status: 'importing', targetCount: 0, sourceKey: 'lists/l1.csv' });
    expect(await store.monitors.addListTargets('l1', ['a@x.com', 'b@x.com'])).toBe(2);
    expect(await store.monitors.addListTargets('l1', ['b@x.com', 'c@x.com'])).toBe(1);
    const done = await store.monitors.finishList('l1', { invalidCount: 4, duplicateCount: 1, invalidByCode: { invalid_email: 3, empty_value: 1 } });
    expect(done).toMatchObject({ status: 'ready', targetCount: 3, invalidCount: 4, duplicateCount: 1, invalidByCode: { invalid_email: 3, empty_value: 1 } });
    expect(await store.monitors.getList(alice, 'l1')).toEqual(done);
    expect(await store.monitors.getList(bob, 'l1')).toBeUndefined();
    expect((await store.monitors.lists(alice)).map((l) => l.id)).toEqual(['l1']);
    expect(await store.monitors.lists(alice, 'phone')).toEqual([]);
    expect(await store.monitors.lists(bob)).toEqual([]);
    expect(await store.monitors.removeList(bob, 'l1')).toBe(false);
    expect(await store.monitors.removeList(alice, 'l1')).toBe(true);
    expect(await store.monitors.getList(alice, 'l1')).toBeUndefined();
  });

  it('a monitor is created with its list\'s and its own targets, each once, scheduled at its start', async () => {
    await readyList(alice, 'l1', ['a@x.com', 'b@x.com']);
    const m = await store.monitors.create(newMonitor(alice, 'm1', { startAt: NOW + DAY_MS }), { listId: 'l1', targets: ['b@x.com', 'c@x.com'] });
    expect(m).toMatchObject({ id: 'm1', status: 'active', targetCount: 3, nextRunAt: NOW + DAY_MS, scheduleAnchor: NOW + DAY_MS, lastRunAt: null });
    expect(m.trackedFields).toEqual(['breached', 'count']);
    const page = await store.monitors.targets(alice, 'm1', { limit: 2, offset: 1 });
    expect(page).toEqual({ targets: [{ target: 'b@x.com', addedAt: NOW }, { target: 'c@x.com', addedAt: NOW }], total: 3 });
  });

  it('a list that is importing, of another type, or another account\'s seeds nothing, and the monitor is not made', async () => {
    await store.monitors.createList({ id: 'busy', accountId: alice, name: 'busy', type: 'email', sourceKey: null, now: NOW });
    await readyList(alice, 'phones', ['+493012345678'], 'phone');
    await readyList(bob, 'bobs', ['a@x.com']);
    expect(await errorCode(store.monitors.create(newMonitor(alice, 'm1'), { listId: 'busy' }))).toBe('invalid_state');
    expect(await errorCode(store.monitors.create(newMonitor(alice, 'm2'), { listId: 'phones' }))).toBe('invalid_request');
    expect(await errorCode(store.monitors.create(newMonitor(alice, 'm3'), { listId: 'bobs' }))).toBe('list_not_found');
    expect((await store.monitors.list(alice, { limit: 10, offset: 0 })).total).toBe(0);
  });

  it('lists monitors a page at a time with the total, by type and status, and never another account\'s', async () => {
    for (let i = 0; i < 5; i++) await store.monitors.create(newMonitor(alice, `m${i}`, { type: i < 3 ? 'email' : 'phone', now: NOW + i }));
    await store.monitors.create(newMonitor(bob, 'theirs'));
    await store.monitors.pause(alice, 'm1', NOW);
    const page = await store.monitors.list(alice, { limit: 2, offset: 1 });
    expect(page.total).toBe(5);
    expect(page.monitors.map((m) => m.id)).toEqual(['m1', 'm2']);
    expect((await store.monitors.list(alice, { limit: 10, offset: 0, type: 'phone' })).monitors.map((m) => m.id)).toEqual(['m3', 'm4']);
    expect((await store.monitors.list(alice, { limit: 10, offset: 0, status: 'paused' })).monitors.map((m) => m.id)).toEqual(['m1']);
    expect(await store.monitors.get(bob, 'm1')).toBeUndefined();
  });

  it('an update changes only what it names; a new frequency counts its periods from the run already due', async () => {
    await store.monitors.create(newMonitor(alice, 'm1', { startAt: NOW + 3 * DAY_MS }));
    const m = await store.monitors.update(alice, 'm1', { name: 'renamed', frequency: 'monthly', changeDetection: 'new_only' }, NOW + 1);
    expect(m).toMatchObject({ name: 'renamed', frequency: 'monthly', changeDetection: 'new_only', trackedFields: ['breached', 'count'] });
    expect(m).toMatchObject({ nextRunAt: NOW + 3 * DAY_MS, scheduleAnchor: NOW + 3 * DAY_MS, updatedAt: NOW + 1 });
    expect(await store.monitors.update(bob, 'm1', { name: 'stolen' }, NOW)).toBeUndefined();
    expect((await store.monitors.get(alice, 'm1'))!.name).toBe('renamed');
  });

  it('adds targets once, counts those present, removes them, and keeps the count with them', async () => {
    await store.monitors.create(newMonitor(alice, 'm1'), { targets: ['a@x.com'] });
    expect(await store.monitors.addTargets(alice, 'm1', ['a@x.com', 'b@x.com', 'c@x.com'], NOW + 5)).toEqual({ added: 2, present: 1 });
    await readyList(alice, 'l1', ['c@x.com', 'd@x.com']);
    expect(await store.monitors.addListTargetsToMonitor(alice, 'm1', 'l1', NOW + 6)).toEqual({ added: 1, present: 1 });
    expect(await store.monitors.removeTargets(alice, 'm1', ['a@x.com', 'zz@x.com'])).toBe(1);
    const { targets, total } = await store.monitors.targets(alice, 'm1', { limit: 10, offset: 0 });
    expect(total).toBe(3);
    expect(targets).toEqual([
      { target: 'b@x.com', addedAt: NOW + 5 },
      { target: 'c@x.com', addedAt: NOW + 5 },
      { target: 'd@x.com', addedAt: NOW + 6 },
    ]);
    expect((await store.monitors.get(alice, 'm1'))!.targetCount).toBe(3);
    expect(await errorCode(store.monitors.addTargets(bob, 'm1', ['e@x.com'], NOW))).toBe('monitor_not_found');
    expect(await errorCode(store.monitors.removeTargets(bob, 'm1', ['b@x.com']))).toBe('monitor_not_found');
    expect(await errorCode(store.monitors.targets(bob, 'm1', { limit: 10, offset: 0 }))).toBe('monitor_not_found');
  });

  it('lists every watched target once with the monitors that watch it, by type, paginated', async () => {
    await store.monitors.create(newMonitor(alice, 'm1'), { targets: ['a@x.com', 'b@x.com'] });
    await store.monitors.create(newMonitor(alice, 'm2', { now: NOW + 1 }), { targets: ['b@x.com', 'c@x.com'] });
    await store.monitors.create(newMonitor(alice, 'p1', { type: 'phone', now: NOW + 2 }), { targets: ['+493012345678'] });
    await store.monitors.create(newMonitor(bob, 'theirs'), { targets: ['secret@x.com'] });
    const emails = await store.monitors.monitoringTargets(alice, { type: 'email', limit: 2, offset: 1 });
    expect(emails).toEqual({
      targets: [
        { type: 'email', target: 'b@x.com', monitorIds: ['m1', 'm2'], addedAt: NOW },
        { type: 'email', target: 'c@x.com', monitorIds: ['m2'], addedAt: NOW + 1 },
      ],
      total: 3,
    });
    expect((await store.monitors.monitoringTargets(alice, { limit: 10, offset: 0 })).total).toBe(4);
    expect((await store.monitors.monitoringTargets(bob, { limit: 10, offset: 0 })).targets.map((t) => t.target)).toEqual(['secret@x.com']);
  });

  it('a deleted monitor takes its targets and runs with it', async () => {
    await store.monitors.create(newMonitor(alice, 'm1'), { targets: ['a@x.com'] });
    await store.monitors.queueManualRun(alice, 'm1', 'run-1', NOW);
    expect(await store.monitors.remove(bob, 'm1')).toBe(false);
    expect(await store.monitors.remove(alice, 'm1')).toBe(true);
    expect(await store.monitors.get(alice, 'm1')).toBeUndefined();
    expect((await store.monitors.monitoringTargets(alice, { limit: 10, offset: 0 })).total).toBe(0);
    // The same id again starts clean: nothing of the old monitor's targets or runs is left to find.
    await store.monitors.create(newMonitor(alice, 'm1'));
    expect((await store.monitors.runs(alice, 'm1', { limit: 10, offset: 0 })).total).toBe(0);
    expect((await store.monitors.targets(alice, 'm1', { limit: 10, offset: 0 })).total).toBe(0);
  });
});
