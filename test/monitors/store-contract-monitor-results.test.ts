import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SnapshotRecord } from '../../src/storage/monitor-result-records.js';
import type { Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { newAccount, NOW } from '../support/test-store.js';
import { errorCode, newMonitor } from './monitor-fixtures.js';
import { openSeededStore, type SeedFn, type SeedSnapshot } from './result-fixtures.js';

/** `n` email snapshots; every third (seq 0, 3, 6, ...) has a change of `count`. */
function snapshots(n: number, prefix = 't'): SeedSnapshot[] {
  return Array.from({ length: n }, (_, i) => ({
    target: `${prefix}${String(i).padStart(6, '0')}@x.com`,
    data: { breached: i % 3 === 0, count: i },
    changes: i % 3 === 0 ? { count: { old: i - 1, new: i } } : null,
  }));
}

async function collect(pages: AsyncIterable<SnapshotRecord[]>): Promise<SnapshotRecord[][]> {
  const all: SnapshotRecord[][] = [];
  for await (const page of pages) all.push(page);
  return all;
}

describe.each(TEST_STORES)('Store contract on %s: monitor runs and results, read', (kind) => {
  let store: Store;
  let seed: SeedFn;
  let close: () => Promise<void>;
  let alice: string;
  let bob: string;
  beforeEach(async () => {
    ({ store, seed, close } = await openSeededStore(kind));
    alice = (await newAccount(store)).id;
    bob = (await newAccount(store)).id;
    await store.monitors.create(newMonitor(alice, 'mail'));
    await store.monitors.create(newMonitor(alice, 'tel', { type: 'phone', trackedFields: ['breached'] }));
    await store.monitors.create(newMonitor(bob, 'theirs'));
  });
  afterEach(() => close());

  it("pages a run's snapshots in seq order with the total; changes_only pages and counts the changed only; another account reads nothing", async () => {
    await seed({ id: 'r1', monitorId: 'mail', accountId: alice, createdAt: NOW, snapshots: snapshots(7) });
    const page = await store.monitorResults.snapshots(alice, 'r1', { limit: 2, offset: 1, changesOnly: false });
    expect(page.total).toBe(7);
    expect(page.snapshots).toEqual([
      { runId: 'r1', seq: 1, target: 't000001@x.com', data: { breached: false, count: 1 }, changes: null, hasChanges: false },
      { runId: 'r1', seq: 2, target: 't000002@x.com', data: { breached: false, count: 2 }, changes: null, hasChanges: false },
    ]);
    const changed = await store.monitorResults.snapshots(alice, 'r1', { limit: 10, offset: 1, changesOnly: true });
    expect(changed.total).toBe(3);
    expect(changed.snapshots.map((s) => [s.seq, s.hasChanges, s.changes])).toEqual([
      [3, true, { count: { old: 2, new: 3 } }],
      [6, true, { count: { old: 5, new: 6 } }],
    ]);
    expect(await store.monitorResults.snapshots(bob, 'r1', { limit: 10, offset: 0, changesOnly: false })).toEqual({ snapshots: [], total: 0 });
    expect(await store.monitorResults.run(bob, 'r1')).toBeUndefined();
    expect(await store.monitorResults.run(alice, 'r1')).toMatchObject({ id: 'r1', monitorId: 'mail', type: 'email', status: 'completed', trigger: 'manual' });
  });

  it('streams every snapshot once, in keyset pages, matching the offset pages; another account gets run_not_found', async () => {
    await seed({ id: 'r1', monitorId: 'mail', accountId: alice, createdAt: NOW, snapshots: snapshots(10) });
    const pages = await collect(store.monitorResults.streamSnapshots(alice, 'r1', { changesOnly: false, pageSize: 3 }));
    expect(pages.map((p) => p.length)).toEqual([3, 3, 3, 1]);
    expect(pages.flat()).toEqual((await store.monitorResults.snapshots(alice, 'r1', { limit: 100, offset: 0, changesOnly: false })).snapshots);
    const changed = (await collect(store.monitorResults.streamSnapshots(alice, 'r1', { changesOnly: true, pageSize: 2 }))).flat();
    expect(changed.map((s) => s.seq)).toEqual([0, 3, 6, 9]);
    expect(await errorCode(collect(store.monitorResults.streamSnapshots(bob, 'r1', { changesOnly: false })))).toBe('run_not_found');
    expect(await collect(store.monitorResults.streamSnapshots(alice, 'nothing', { changesOnly: false })).catch((e: { code: string }) => e.code)).toBe('run_not_found');
  });

  it("lists the account's runs newest first, each with its monitor's type, by type, with the total", async () => {
    await seed({ id: 'old', monitorId: 'mail', accountId: alice, createdAt: NOW, status: 'completed', totalRecords: 3, changesDetected: 1, creditsUsed: 3, startedAt: NOW + 1, finishedAt: NOW + 501 });
    await seed({ id: 'tel1', monitorId: 'tel', accountId: alice, createdAt: NOW + 10, status: 'running' });
    await seed({ id: 'new', monitorId: 'mail', accountId: alice, createdAt: NOW + 20, status: 'queued' });
    await seed({ id: 'bobs', monitorId: 'theirs', accountId: bob, createdAt: NOW + 30 });
    const all = await store.monitorResults.runs(alice, { limit: 2, offset: 0 });
    expect(all.total).toBe(3);
    expect(all.runs.map((r) => [r.id, r.type])).toEqual([
      ['new', 'email'],
      ['tel1', 'phone'],
    ]);
    expect((await store.monitorResults.runs(alice, { limit: 2, offset: 2 })).runs[0]).toMatchObject({
      id: 'old',
      totalRecords: 3,
      changesDetected: 1,
      creditsUsed: 3,
      startedAt: NOW + 1,
      finishedAt: NOW + 501,
    });
    const email = await store.monitorResults.runs(alice, { limit: 10, offset: 0, type: 'email' });
    expect([email.total, email.runs.map((r) => r.id)]).toEqual([2, ['new', 'old']]);
    expect((await store.monitorResults.runs(alice, { limit: 10, offset: 0, type: 'company' })).total).toBe(0);
    expect((await store.monitorResults.runs(bob, { limit: 10, offset: 0 })).runs.map((r) => r.id)).toEqual(['bobs']);
  });

  it("lists the results of the account's completed runs, newest run first then seq, by type and changes only", async () => {
    await seed({ id: 'r1', monitorId: 'mail', accountId: alice, createdAt: NOW, snapshots: snapshots(4, 'a') });
    await seed({ id: 'r2', monitorId: 'tel', accountId: alice, createdAt: NOW + 10, snapshots: [{ target: '+4930123456', data: { breached: true }, changes: { breached: { old: false, new: true } } }] });
    await seed({ id: 'going', monitorId: 'mail', accountId: alice, createdAt: NOW + 20, status: 'running', snapshots: snapshots(2, 'g') });
    await seed({ id: 'bobs', monitorId: 'theirs', accountId: bob, createdAt: NOW, snapshots: snapshots(3, 'b') });
    const all = await store.monitorResults.results(alice, { limit: 3, offset: 0, changesOnly: false });
    expect(all.total).toBe(5);
    expect(all.results.map((s) => [s.runId, s.monitorId, s.type, s.seq])).toEqual([
      ['r2', 'tel', 'phone', 0],
      ['r1', 'mail', 'email', 0],
      ['r1', 'mail', 'email', 1],
    ]);
    const changed = await store.monitorResults.results(alice, { limit: 10, offset: 1, changesOnly: true });
    expect([changed.total, changed.results.map((s) => s.target)]).toEqual([3, ['a000000@x.com', 'a000003@x.com']]);
    const email = await store.monitorResults.results(alice, { limit: 10, offset: 0, changesOnly: true, type: 'email' });
    expect([email.total, email.results.map((s) => s.runId)]).toEqual([2, ['r1', 'r1']]);
    expect((await store.monitorResults.results(bob, { limit: 10, offset: 0, changesOnly: false })).total).toBe(3);
  });

  it('reads a run of 12,000 snapshots in pages of 1,000 by keyset, in order, and pages by offset to its last', async () => {
    await seed({ id: 'big', monitorId: 'mail', accountId: alice, createdAt: NOW, snapshots: snapshots(12_000) });
    const pages = await collect(store.monitorResults.streamSnapshots(alice, 'big', { changesOnly: false }));
    expect(pages.map((p) => p.length)).toEqual(Array(12).fill(1000));
    expect(pages.flat().every((s, i) => s.seq === i && s.target === `t${String(i).padStart(6, '0')}@x.com`)).toBe(true);
    const changed = (await collect(store.monitorResults.streamSnapshots(alice, 'big', { changesOnly: true }))).flat();
    expect(changed.length).toBe(4000);
    expect(changed.every((s, i) => s.seq === i * 3 && s.hasChanges)).toBe(true);
    const last = await store.monitorResults.snapshots(alice, 'big', { limit: 100, offset: 11_950, changesOnly: false });
    expect([last.total, last.snapshots.length, last.snapshots[49]!.seq]).toEqual([12_000, 50, 11_999]);
    const lastChanged = await store.monitorResults.snapshots(alice, 'big', { limit: 100, offset: 3999, changesOnly: true });
    expect([lastChanged.total, lastChanged.snapshots.map((s) => s.seq)]).toEqual([4000, [11_997]]);
  });
});
