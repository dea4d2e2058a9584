import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AuditRecord, Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { DAY_MS, newAccount, NOW, openTestStore, type TestStore } from '../support/test-store.js';

const KEEP_ALL = { since: 0, max: 1_000 };

function entry(accountId: string, action: string, at = NOW, over: Partial<Omit<AuditRecord, 'id'>> = {}): Omit<AuditRecord, 'id'> {
  return {
    accountId,
    at,
    action,
    actorType: 'key',
    actorId: 'key_01',
    actorName: 'deploy',
    targetId: 'key_02',
    sourceIp: '127.0.0.1',
    userAgent: 'curl/8',
    label: null,
    ...over,
  };
}

describe.each(TEST_STORES)('Store contract on %s: audit log and session ends', (kind) => {
  let opened: TestStore;
  let store: Store;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
  });
  afterEach(() => opened.close());

  describe('audit log', () => {
    it('lists an account’s entries newest first with every field as written, and never another account’s', async () => {
      await store.audit.append(entry('acc_1', 'key.created'), KEEP_ALL);
      await store.audit.append(entry('acc_2', 'key.created'), KEEP_ALL);
      await store.audit.append(entry('acc_1', 'login.failed', NOW + 1, { actorType: 'login', actorId: null, actorName: null, targetId: null, userAgent: null }), KEEP_ALL);

      const list = await store.audit.list('acc_1', { limit: 10 });
      expect(list.map((e) => e.action)).toEqual(['login.failed', 'key.created']);
      expect(list[0]!.id).toBeGreaterThan(list[1]!.id);
      expect(list[1]).toEqual({ id: list[1]!.id, ...entry('acc_1', 'key.created') });
      expect(list[0]).toMatchObject({ actorType: 'login', actorId: null, actorName: null, targetId: null, userAgent: null, at: NOW + 1 });
      expect((await store.audit.list('acc_2', { limit: 10 })).map((e) => e.accountId)).toEqual(['acc_2']);
      expect(await store.audit.list('acc_missing', { limit: 10 })).toEqual([]);
    });

    it('pages back with `before`, an id never coming twice nor being skipped', async () => {
      for (let i = 0; i < 7; i++) await store.audit.append(entry('acc_1', `a.${i}`, NOW + i), KEEP_ALL);
      const seen: string[] = [];
      let before: number | undefined;
      for (;;) {
        const page = await store.audit.list('acc_1', { limit: 3, ...(before === undefined ? {} : { before }) });
        seen.push(...page.map((e) => e.action));
        if (page.length < 3) break;
        before = page[page.length - 1]!.id;
      }
      expect(seen).toEqual(['a.6', 'a.5', 'a.4', 'a.3', 'a.2', 'a.1', 'a.0']);
    });

    it('drops the account’s entries older than the retention when one is written, and only the account’s', async () => {
      await store.audit.append(entry('acc_1', 'old', NOW - 91 * DAY_MS), KEEP_ALL);
      await store.audit.append(entry('acc_1', 'recent', NOW - 89 * DAY_MS), KEEP_ALL);
      await store.audit.append(entry('acc_2', 'old elsewhere', NOW - 91 * DAY_MS), KEEP_ALL);
      await store.audit.append(entry('acc_1', 'new', NOW), { since: NOW - 90 * DAY_MS, max: 1_000 });
      expect((await store.audit.list('acc_1', { limit: 10 })).map((e) => e.action)).toEqual(['new', 'recent']);
      expect((await store.audit.list('acc_2', { limit: 10 })).map((e) => e.action)).toEqual(['old elsewhere']);
    });

    it('keeps only the newest `max` entries of the account, and ids stay increasing after the purge', async () => {
      for (let i = 0; i < 5; i++) await store.audit.append(entry('acc_1', `a.${i}`), { since: 0, max: 3 });
      await store.audit.append(entry('acc_2', 'b.0'), { since: 0, max: 3 });
      const kept = await store.audit.list('acc_1', { limit: 10 });
      expect(kept.map((e) => e.action)).toEqual(['a.4', 'a.3', 'a.2']);
      await store.audit.append(entry('acc_1', 'a.5'), { since: 0, max: 3 });
      const after = await store.audit.list('acc_1', { limit: 10 });
      expect(after.map((e) => e.action)).toEqual(['a.5', 'a.4', 'a.3']);
      expect(after[0]!.id).toBeGreaterThan(kept[0]!.id);
      expect((await store.audit.list('acc_2', { limit: 10 })).map((e) => e.action)).toEqual(['b.0']);
    });
  });

  describe('sessions', () => {
    it('a live session names its account until it expires; an ended one is gone and ending it again finds nothing', async () => {
      await newAccount(store, 0, 'acc_1');
      expect(await store.sessions.create('tok_1', 'acc_1', NOW + 1_000, NOW)).toBe(true);
      expect(await store.sessions.live('tok_1', NOW + 999)).toBe('acc_1');
      expect(await store.sessions.live('tok_1', NOW + 1_000)).toBeUndefined();
      expect(await store.sessions.live('tok_missing', NOW)).toBeUndefined();

      expect(await store.sessions.end('tok_1')).toBe('acc_1');
      expect(await store.sessions.live('tok_1', NOW)).toBeUndefined();
      expect(await store.sessions.get('tok_1')).toBeUndefined();
      expect(await store.sessions.end('tok_1')).toBeUndefined();
    });

    it('suspension deletes every session of the account, and only its; reinstatement brings none back', async () => {
      await newAccount(store, 0, 'acc_1');
      await newAccount(store, 0, 'acc_2');
      await store.sessions.create('tok_1', 'acc_1', NOW + 1_000, NOW);
      await store.sessions.create('tok_2', 'acc_1', NOW + 1_000, NOW);
      await store.sessions.create('tok_3', 'acc_2', NOW + 1_000, NOW);

      await store.billing.setStatus('acc_1', 'suspended');
      expect(await store.sessions.get('tok_1')).toBeUndefined();
      expect(await store.sessions.get('tok_2')).toBeUndefined();
      await store.billing.setStatus('acc_1', 'active');
      expect(await store.sessions.live('tok_1', NOW)).toBeUndefined();
      expect(await store.sessions.live('tok_2', NOW)).toBeUndefined();
      expect(await store.sessions.live('tok_3', NOW)).toBe('acc_2');
    });

    it('refuses to create a session for a suspended or unknown account', async () => {
      await newAccount(store, 0, 'acc_1');
      await store.billing.setStatus('acc_1', 'suspended');
      expect(await store.sessions.create('tok_1', 'acc_1', NOW + 1_000, NOW)).toBe(false);
      expect(await store.sessions.get('tok_1')).toBeUndefined();
      expect(await store.sessions.create('tok_2', 'acc_missing', NOW + 1_000, NOW)).toBe(false);
    });

    it('a session created by another process while the account is being suspended never outlives the suspension', async () => {
      await newAccount(store, 0, 'acc_1');
      const peer = await opened.openPeer();
      // Logins (on the peer) and a suspension (here) race; whatever the order, no session is left.
      const logins = Array.from({ length: 20 }, (_, i) => peer.sessions.create(`tok_${i}`, 'acc_1', NOW + 1_000, NOW));
      await store.billing.setStatus('acc_1', 'suspended');
      await Promise.all(logins);
      await store.billing.setStatus('acc_1', 'active');
      // Those after the suspension were refused; those before were deleted by it.
      for (let i = 0; i < 20; i++) expect(await store.sessions.get(`tok_${i}`)).toBeUndefined();
    });
  });
});
