import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { newAccount, NOW, openTestStore, type TestStore } from '../support/test-store.js';

describe.each(TEST_STORES)('Store contract on %s: keys, sessions and idempotency', (kind) => {
  let opened: TestStore;
  let store: Store;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
  });
  afterEach(() => opened.close());

  const key = (id: string, accountId: string, over: { role?: string; sealed?: string | null; revealUntil?: number | null; now?: number } = {}) => ({
    id,
    accountId,
    name: `key ${id}`,
    keyHash: `hash_${id}`,
    keyPrefix: `sk_${id.slice(-2)}`,
    role: over.role ?? 'admin',
    sealed: over.sealed === undefined ? `sealed_${id}` : over.sealed,
    revealUntil: over.revealUntil === undefined ? NOW + 600_000 : over.revealUntil,
    now: over.now ?? NOW,
  });

  describe('API keys', () => {
    it('stores a key and finds it by id and by hash, the latter with its account status', async () => {
      await newAccount(store, 0, 'acc_1');
      await store.keys.insert(key('key_01', 'acc_1', { role: 'tech' }));
      const stored = {
        id: 'key_01',
        accountId: 'acc_1',
        name: 'key key_01',
        keyPrefix: 'sk_01',
        role: 'tech',
        isActive: true,
        revokedAt: null,
        createdAt: NOW,
        keyHash: 'hash_key_01',
        sealed: 'sealed_key_01',
        revealUntil: NOW + 600_000,
        expiresAt: null,
        replacedBy: null,
      };
      expect(await store.keys.byId('key_01')).toEqual(stored);
      expect(await store.keys.byHash('hash_key_01')).toEqual({ ...stored, accountStatus: 'active' });
      await store.billing.setStatus('acc_1', 'suspended');
      expect(await store.keys.byHash('hash_key_01')).toMatchObject({ accountStatus: 'suspended' });
      expect(await store.keys.byHash('hash_missing')).toBeUndefined();
      expect(await store.keys.byId('key_missing')).toBeUndefined();
    });

    it('rolls a key once: the new key and the old one\'s end and replacement in one step; a second roll, or of an ended key, writes nothing', async () => {
      await newAccount(store, 0, 'acc_1');
      await store.keys.insert(key('key_01', 'acc_1'));
      expect(await store.keys.roll('key_01', NOW + 3_600_000, key('key_02', 'acc_1', { now: NOW + 10 }))).toBe(true);
      expect(await store.keys.byId('key_01')).toMatchObject({ expiresAt: NOW + 3_600_000, replacedBy: 'key_02', revokedAt: null });
      expect(await store.keys.byId('key_02')).toMatchObject({ expiresAt: null, replacedBy: null, createdAt: NOW + 10 });
      expect(await store.keys.roll('key_01', NOW + 1, key('key_03', 'acc_1', { now: NOW + 20 }))).toBe(false);
      expect(await store.keys.byId('key_03')).toBeUndefined();
      // An end already earlier than the grace's stays; an ended key is not rolled.
      await store.keys.insert({ ...key('key_04', 'acc_1'), expiresAt: NOW + 1_000 });
      expect(await store.keys.roll('key_04', NOW + 9_000, key('key_05', 'acc_1', { now: NOW + 30 }))).toBe(true);
      expect((await store.keys.byId('key_04'))!.expiresAt).toBe(NOW + 1_000);
      await store.keys.insert({ ...key('key_06', 'acc_1'), expiresAt: NOW + 40 });
      expect(await store.keys.roll('key_06', NOW + 9_000, key('key_07', 'acc_1', { now: NOW + 40 }))).toBe(false);
    });

    it('revokes the keys whose end has come, and only those', async () => {
      await newAccount(store, 0, 'acc_1');
      await store.keys.insert({ ...key('key_01', 'acc_1'), expiresAt: NOW + 100 });
      await store.keys.insert({ ...key('key_02', 'acc_1'), expiresAt: NOW + 200 });
      await store.keys.insert(key('key_03', 'acc_1'));
      expect(await store.keys.revokeExpired(NOW + 100)).toBe(1);
      expect(await store.keys.byId('key_01')).toMatchObject({ revokedAt: NOW + 100, isActive: false, sealed: null });
      expect(await store.keys.byId('key_02')).toMatchObject({ revokedAt: null });
      expect(await store.keys.revokeExpired(NOW + 100)).toBe(0);
    });

    it("lists an account's keys oldest first, ties by id", async () => {
      await newAccount(store, 0, 'acc_1');
      await newAccount(store, 0, 'acc_2');
      await store.keys.insert(key('key_03', 'acc_1', { now: NOW + 1 }));
      await store.keys.insert(key('key_02', 'acc_1', { now: NOW + 2 }));
      await store.keys.insert(key('key_01', 'acc_1', { now: NOW + 2 }));
      await store.keys.insert(key('key_04', 'acc_2', { now: NOW }));
      expect((await store.keys.list('acc_1')).map((k) => k.id)).toEqual(['key_03', 'key_01', 'key_02']);
      expect(await store.keys.list('acc_missing')).toEqual([]);
    });

    it('pauses and resumes a live key, revokes it for good, and forgets its sealed copy', async () => {
      await newAccount(store, 0, 'acc_1');
      await store.keys.insert(key('key_01', 'acc_1'));
      expect(await store.keys.setActive('key_01', false)).toBe(true);
      expect(await store.keys.byId('key_01')).toMatchObject({ isActive: false });
      expect(await store.keys.setActive('key_01', true)).toBe(true);
      expect(await store.keys.byId('key_01')).toMatchObject({ isActive: true });
      await store.keys.forgetSealed('key_01');
      expect(await store.keys.byId('key_01')).toMatchObject({ sealed: null, revealUntil: NOW + 600_000 });

      await store.keys.insert(key('key_02', 'acc_1'));
      expect(await store.keys.revoke('key_02', NOW + 5)).toBe(true);
      expect(await store.keys.byId('key_02')).toMatchObject({ isActive: false, revokedAt: NOW + 5, sealed: null });
      expect(await store.keys.setActive('key_02', true)).toBe(false);
      expect(await store.keys.byId('key_02')).toMatchObject({ isActive: false });
      expect(await store.keys.setActive('key_missing', true)).toBe(false);
      expect(await store.keys.revoke('key_missing', NOW)).toBe(false);
    });

    it('forgets every sealed copy whose reveal window ended before now, and only those, without a reveal', async () => {
      await newAccount(store, 0, 'acc_1');
      await newAccount(store, 0, 'acc_2');
      await store.keys.insert(key('key_01', 'acc_1', { revealUntil: NOW - 1 }));
      await store.keys.insert(key('key_02', 'acc_2', { revealUntil: NOW - 600_000 }));
      // A window ending exactly now is still open: reveal refuses only once revealUntil < now.
      await store.keys.insert(key('key_03', 'acc_1', { revealUntil: NOW }));
      await store.keys.insert(key('key_04', 'acc_1', { revealUntil: NOW + 1 }));
      await store.keys.insert(key('key_05', 'acc_1', { revealUntil: null }));

      expect(await store.keys.forgetExpiredSeals(NOW)).toBe(3);
      const sealed = async (id: string) => (await store.keys.byId(id))!.sealed;
      expect(await sealed('key_01')).toBeNull();
      expect(await sealed('key_02')).toBeNull();
      expect(await sealed('key_05')).toBeNull();
      expect(await sealed('key_03')).toBe('sealed_key_03');
      expect(await sealed('key_04')).toBe('sealed_key_04');
      // The rest of the row is left as it was: the key still works, only its copy is gone.
      expect(await store.keys.byId('key_01')).toMatchObject({ isActive: true, revokedAt: null, revealUntil: NOW - 1, keyHash: 'hash_key_01' });

      expect(await store.keys.forgetExpiredSeals(NOW)).toBe(0);
      expect(await store.keys.forgetExpiredSeals(NOW + 2)).toBe(2);
      expect(await sealed('key_03')).toBeNull();
      expect(await sealed('key_04')).toBeNull();
    });

    it('refuses a second key with the same hash', async () => {
      await newAccount(store, 0, 'acc_1');
      await store.keys.insert(key('key_01', 'acc_1'));
      await expect(() => store.keys.insert({ ...key('key_02', 'acc_1'), keyHash: 'hash_key_01' })).rejects.toThrow();
      expect(await store.keys.byId('key_02')).toBeUndefined();
    });
  });

  describe('sessions', () => {
    it('finds a session by its token hash, and purges expired ones when another is created', async () => {
      await newAccount(store, 0, 'acc_1');
      await store.sessions.create('tok_old', 'acc_1', NOW + 10, NOW);
      await store.sessions.create('tok_live', 'acc_1', NOW + 1_000, NOW);
      expect(await store.sessions.get('tok_old')).toEqual({ accountId: 'acc_1', expiresAt: NOW + 10 });
      await store.sessions.create('tok_new', 'acc_1', NOW + 2_000, NOW + 10);
      expect(await store.sessions.get('tok_old')).toEqual({ accountId: 'acc_1', expiresAt: NOW + 10 });
      await store.sessions.create('tok_newer', 'acc_1', NOW + 2_000, NOW + 11);
      expect(await store.sessions.get('tok_old')).toBeUndefined();
      expect(await store.sessions.get('tok_live')).toEqual({ accountId: 'acc_1', expiresAt: NOW + 1_000 });
      expect(await store.sessions.get('tok_missing')).toBeUndefined();
    });
  });

  describe('idempotency keys', () => {
    const STALE = 60_000;
    const KEEP = 86_400_000;

    it('claims a key once: then in flight, then done with its job, per account', async () => {
      expect(await store.idempotency.claim('acc_1', 'k1', NOW, STALE, KEEP)).toEqual({ state: 'new' });
      expect(await store.idempotency.claim('acc_1', 'k1', NOW + 1, STALE, KEEP)).toEqual({ state: 'in_flight' });
      expect(await store.idempotency.claim('acc_2', 'k1', NOW + 1, STALE, KEEP)).toEqual({ state: 'new' });
      await store.idempotency.finish('acc_1', 'k1', 'sha256:abc', 'job_1');
      expect(await store.idempotency.claim('acc_1', 'k1', NOW + 2, STALE, KEEP)).toEqual({ state: 'done', jobId: 'job_1', fingerprint: 'sha256:abc' });
      // A finished key is not released: the job it made stays the answer.
      await store.idempotency.release('acc_1', 'k1');
      expect(await store.idempotency.claim('acc_1', 'k1', NOW + 3, STALE, KEEP)).toEqual({ state: 'done', jobId: 'job_1', fingerprint: 'sha256:abc' });
    });

    it('frees a released claim, takes over a stale one, and forgets keys older than the keep time', async () => {
      expect(await store.idempotency.claim('acc_1', 'k1', NOW, STALE, KEEP)).toEqual({ state: 'new' });
      await store.idempotency.release('acc_1', 'k1');
      expect(await store.idempotency.claim('acc_1', 'k1', NOW + 1, STALE, KEEP)).toEqual({ state: 'new' });
      expect(await store.idempotency.claim('acc_1', 'k1', NOW + 1 + STALE, STALE, KEEP)).toEqual({ state: 'in_flight' });
      expect(await store.idempotency.claim('acc_1', 'k1', NOW + 2 + STALE, STALE, KEEP)).toEqual({ state: 'new' });
      // Taken over, it is fresh again.
      expect(await store.idempotency.claim('acc_1', 'k1', NOW + 3 + STALE, STALE, KEEP)).toEqual({ state: 'in_flight' });

      expect(await store.idempotency.claim('acc_1', 'k2', NOW, STALE, KEEP)).toEqual({ state: 'new' });
      await store.idempotency.finish('acc_1', 'k2', 'fp', 'job_2');
      expect(await store.idempotency.claim('acc_1', 'k2', NOW + KEEP, STALE, KEEP)).toMatchObject({ state: 'done' });
      expect(await store.idempotency.claim('acc_1', 'k2', NOW + KEEP + 1, STALE, KEEP)).toEqual({ state: 'new' });
    });
  });
});
