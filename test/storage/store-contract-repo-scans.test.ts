import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { NOW, openTestStore, type TestStore } from '../support/test-store.js';

const LEASE = 30_000;

describe.each(TEST_STORES)('Store contract on %s: repository scans and audit labels', (kind) => {
  let opened: TestStore;
  let store: Store;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
  });
  afterEach(() => opened.close());

  const create = (id: string, accountId = 'acc_1', now = NOW) => store.repoScans.create({ id, accountId, url: `https://example.com/${id}.git`, type: 2, config: '{"rules":null}', now });

  it('creates a processing scan that only its own account can read', async () => {
    await create('s1');
    expect(await store.repoScans.get('acc_1', 's1')).toEqual({
      id: 's1',
      accountId: 'acc_1',
      url: 'https://example.com/s1.git',
      type: 2,
      config: '{"rules":null}',
      status: 'processing',
      errorCode: null,
      result: null,
      leaseEpoch: 0,
      attempts: 0,
      createdAt: NOW,
      updatedAt: NOW,
    });
    expect(await store.repoScans.get('acc_2', 's1')).toBeUndefined();
  });

  it('gives each scan to one claimer at a time, oldest first, and again once the lease has run out', async () => {
    await create('s2', 'acc_1', NOW + 1);
    await create('s1', 'acc_1', NOW);
    const [a, b] = await Promise.all([store.repoScans.claim('w1', NOW, LEASE), store.repoScans.claim('w2', NOW, LEASE)]);
    expect([a?.scan.id, b?.scan.id].sort()).toEqual(['s1', 's2']);
    expect(await store.repoScans.claim('w3', NOW + 1, LEASE)).toBeUndefined();
    const again = await store.repoScans.claim('w3', NOW + LEASE + 1, LEASE);
    expect(again?.scan.id).toBe('s1');
    expect(again?.scan.attempts).toBe(2);
    expect(again?.lease.epoch).toBe(2);
  });

  it('fences renewals and the end by the lease epoch: a worker that lost its lease changes nothing', async () => {
    await create('s1');
    const first = (await store.repoScans.claim('w1', NOW, LEASE))!;
    expect(await store.repoScans.renew('s1', first.lease, NOW + 10, LEASE)).toBe(true);
    const second = (await store.repoScans.claim('w2', NOW + 10 + LEASE + 1, LEASE))!;
    expect(await store.repoScans.renew('s1', first.lease, NOW + 20, LEASE)).toBe(false);
    expect(await store.repoScans.finish('s1', first.lease, { status: 'completed', errorCode: null, result: '{"stale":true}' }, NOW + 30)).toBe(false);
    expect(await store.repoScans.finish('s1', second.lease, { status: 'failed', errorCode: 'clone_failed', result: null }, NOW + 40)).toBe(true);
    expect(await store.repoScans.get('acc_1', 's1')).toMatchObject({ status: 'failed', errorCode: 'clone_failed', result: null, updatedAt: NOW + 40 });
    expect(await store.repoScans.finish('s1', second.lease, { status: 'completed', errorCode: null, result: '{}' }, NOW + 50)).toBe(false);
    expect(await store.repoScans.claim('w3', NOW + 10 * LEASE, LEASE)).toBeUndefined();
  });

  it('keeps an audit entry\'s label (an exposed-credential scan\'s source)', async () => {
    const entry = { accountId: 'acc_1', at: NOW, action: 'scan.exposed_keys', actorType: 'key', actorId: 'k', actorName: 'ci', targetId: 'scan_1', sourceIp: null, userAgent: null };
    await store.audit.append({ ...entry, label: 'ci: deploy.env' }, { since: 0, max: 100 });
    await store.audit.append({ ...entry, at: NOW + 1 }, { since: 0, max: 100 });
    expect((await store.audit.list('acc_1', { limit: 10 })).map((e) => e.label)).toEqual([null, 'ci: deploy.env']);
  });
});
