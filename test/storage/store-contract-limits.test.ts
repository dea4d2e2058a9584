import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { NOW, openTestStore, type TestStore } from '../support/test-store.js';

/** Rounds per race: each is one chance for a missing lock to show; the assertions hold in every one. */
const ROUNDS = 20;

/*
 * The changes below are written so that they can cross to a SQLite peer as their source: they use
 * nothing from this file. Each first works for a millisecond, as a change that does real work
 * would, so that a change running beside it without the lock would read the same value: SQLite's
 * synchronous transactions are otherwise so short that two of them seldom overlap.
 */

/** Adds one to the counter and returns the count it made. */
const increment = (value: string | undefined) => {
  for (const until = Date.now() + 1; Date.now() < until; );
  const count = Number(value ?? '0') + 1;
  return { value: String(count), result: count };
};

/** Stores a record where there is none and deletes the one there is; says which it found. */
const toggle = (value: string | undefined) => {
  for (const until = Date.now() + 1; Date.now() < until; );
  return { value: value === undefined ? 'on' : undefined, result: value === undefined ? 'absent' : 'present' };
};

describe.each(TEST_STORES)('Store contract on %s: limits every process counts together', (kind) => {
  let opened: TestStore;
  let store: Store;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
  });
  afterEach(() => opened.close());

  const take = (holder: string, want: number, over: { name?: string; size?: number; now?: number; expiresAt?: number } = {}, on: Store = store) =>
    on.limits.takeSlots({ name: over.name ?? 'lookups', size: over.size ?? 3, want, holder, now: over.now ?? NOW, expiresAt: over.expiresAt ?? NOW + 1_000 });

  describe('slots', () => {
    it('gives distinct slots up to the size, then none; a want larger than what is free gets what is free', async () => {
      expect(await take('a', 2)).toEqual([0, 1]);
      expect(await take('b', 5)).toEqual([2]);
      expect(await take('c', 1)).toEqual([]);
      expect(await take('a', 1)).toEqual([]);
      expect(await store.limits.heldSlots('lookups', NOW)).toBe(3);
    });

    it('takes nothing when nothing is wanted or the size is 0', async () => {
      expect(await take('a', 0)).toEqual([]);
      expect(await take('a', -1)).toEqual([]);
      expect(await take('a', 2, { size: 0 })).toEqual([]);
      expect(await store.limits.heldSlots('lookups', NOW)).toBe(0);
    });

    it('a slot is held up to its expiry, then another holder takes it', async () => {
      expect(await take('a', 2, { size: 2, expiresAt: NOW + 1_000 })).toEqual([0, 1]);
      expect(await take('b', 2, { size: 2, now: NOW + 1_000 })).toEqual([]);
      expect(await take('b', 2, { size: 2, now: NOW + 1_001, expiresAt: NOW + 5_000 })).toEqual([0, 1]);
      expect(await take('a', 1, { size: 2, now: NOW + 1_001 })).toEqual([]);
      expect(await store.limits.heldSlots('lookups', NOW + 1_001)).toBe(2);
    });

    it('a release frees only the slots the holder still holds, not one another holder took after it expired', async () => {
      expect(await take('a', 2, { size: 2, expiresAt: NOW + 1_000 })).toEqual([0, 1]);
      expect(await take('c', 1, { size: 2, now: NOW + 2_000, expiresAt: NOW + 9_000 })).toEqual([0]);
      await store.limits.releaseSlots('lookups', 'a', [0, 1]);
      expect(await store.limits.heldSlots('lookups', NOW + 2_000)).toBe(1);
      expect(await take('d', 2, { size: 2, now: NOW + 2_000, expiresAt: NOW + 9_000 })).toEqual([1]);

      await store.limits.releaseSlots('lookups', 'c', [0]);
      await store.limits.releaseSlots('lookups', 'd', []);
      expect(await store.limits.heldSlots('lookups', NOW + 2_000)).toBe(1);
      expect(await take('e', 2, { size: 2, now: NOW + 2_000 })).toEqual([0]);
    });

    it('a release frees the slots of its name only', async () => {
      expect(await take('a', 1, { name: 'x' })).toEqual([0]);
      expect(await take('a', 1, { name: 'y' })).toEqual([0]);
      await store.limits.releaseSlots('x', 'a', [0]);
      expect(await store.limits.heldSlots('x', NOW)).toBe(0);
      expect(await store.limits.heldSlots('y', NOW)).toBe(1);
    });

    it('renewing keeps every slot of the holder from expiring and does not take back one another holder took', async () => {
      expect(await take('a', 2, { name: 'x', expiresAt: NOW + 1_000 })).toEqual([0, 1]);
      expect(await take('a', 1, { name: 'y', size: 1, expiresAt: NOW + 1_000 })).toEqual([0]);
      expect(await store.limits.renewSlots('a', NOW + 5_000)).toBe(3);
      expect(await take('b', 3, { name: 'x', now: NOW + 2_000, expiresAt: NOW + 3_000 })).toEqual([2]);
      expect(await take('b', 1, { name: 'y', size: 1, now: NOW + 2_000 })).toEqual([]);
      expect(await store.limits.heldSlots('x', NOW + 2_000)).toBe(3);

      // a stops renewing; once its slots have run out, c takes slot 0 of x.
      expect(await take('c', 1, { name: 'x', now: NOW + 6_000, expiresAt: NOW + 9_000 })).toEqual([0]);
      expect(await store.limits.renewSlots('a', NOW + 20_000)).toBe(2);
      // Slot 0 kept c's expiry (free after NOW + 9000); a's slot 1 of x was renewed (still held).
      expect(await take('d', 3, { name: 'x', now: NOW + 9_001 })).toEqual([0, 2]);
      expect(await store.limits.renewSlots('nobody', NOW + 20_000)).toBe(0);
    });

    it('counts only the slots that are held and not expired', async () => {
      await take('a', 2, { size: 5, expiresAt: NOW + 1_000 });
      await take('b', 1, { size: 5, expiresAt: NOW + 3_000 });
      expect(await store.limits.heldSlots('lookups', NOW)).toBe(3);
      expect(await store.limits.heldSlots('lookups', NOW + 1_000)).toBe(3);
      expect(await store.limits.heldSlots('lookups', NOW + 1_001)).toBe(1);
      expect(await store.limits.heldSlots('lookups', NOW + 3_001)).toBe(0);
      expect(await store.limits.heldSlots('other', NOW)).toBe(0);
    });

    it('each name has its own slots and size', async () => {
      expect(await take('a', 5, { name: 'x', size: 2 })).toEqual([0, 1]);
      expect(await take('a', 5, { name: 'y', size: 3 })).toEqual([0, 1, 2]);
      expect(await take('b', 5, { name: 'x', size: 2 })).toEqual([]);
      expect(await store.limits.heldSlots('x', NOW)).toBe(2);
      expect(await store.limits.heldSlots('y', NOW)).toBe(3);
    });
  });

  describe('shared records', () => {
    it('stores what the change returns, empty text included, and deletes the record when it returns undefined', async () => {
      expect(await store.limits.readShared('breaker')).toBeUndefined();
      const seen: (string | undefined)[] = [];
      const set = (next: string | undefined) => (value: string | undefined) => {
        seen.push(value);
        return { value: next, result: seen.length };
      };
      expect(await store.limits.updateShared('breaker', set(''))).toBe(1);
      expect(await store.limits.readShared('breaker')).toBe('');
      expect(await store.limits.updateShared('breaker', set('open'))).toBe(2);
      expect(await store.limits.readShared('breaker')).toBe('open');
      expect(await store.limits.updateShared('breaker', set(undefined))).toBe(3);
      expect(await store.limits.readShared('breaker')).toBeUndefined();
      expect(await store.limits.updateShared('breaker', set(undefined))).toBe(4);
      expect(await store.limits.readShared('breaker')).toBeUndefined();
      expect(seen).toEqual([undefined, '', 'open', undefined]);
    });

    it('a change that throws stores nothing', async () => {
      await store.limits.updateShared('window', () => ({ value: '1', result: undefined }));
      await expect(
        store.limits.updateShared('window', () => {
          throw new Error('bad state');
        }),
      ).rejects.toThrow('bad state');
      expect(await store.limits.readShared('window')).toBe('1');
      await expect(
        store.limits.updateShared('fresh', () => {
          throw new Error('bad state');
        }),
      ).rejects.toThrow('bad state');
      expect(await store.limits.readShared('fresh')).toBeUndefined();
    });

    it('records of different names are apart', async () => {
      await store.limits.updateShared('a', increment);
      await store.limits.updateShared('a', increment);
      await store.limits.updateShared('b', increment);
      expect(await store.limits.readShared('a')).toBe('2');
      expect(await store.limits.readShared('b')).toBe('1');
    });
  });

  /*
   * Another process on the same database races this one (on SQLite a worker thread with its own
   * connection, so their operations overlap). Without the lock, two changes read the same value
   * and one increment is lost; on PostgreSQL a first change that locks nothing (a SELECT ... FOR
   * UPDATE of a row that does not exist yet) lets two start from undefined. Without the re-check
   * of the expiry in the slot statement's conflict clause, two takers hold one slot.
   */
  describe('two processes', () => {
    let peer: Store;
    beforeEach(async () => {
      peer = await opened.openPeer();
    });

    it('concurrent changes from both processes are applied one after the other, none lost', async () => {
      const each = 25;
      for (let round = 0; round < 4; round++) {
        const name = `counter_${round}`;
        const counts = await Promise.all(
          Array.from({ length: each * 2 }, (_, i) => (i % 2 === 0 ? store : peer).limits.updateShared(name, increment)),
        );
        expect(counts.sort((x, y) => x - y)).toEqual(Array.from({ length: each * 2 }, (_, i) => i + 1));
        expect(await store.limits.readShared(name)).toBe(String(each * 2));
      }
    });

    it('concurrent changes that delete and recreate the record see it one at a time', async () => {
      const changes = 41;
      for (let round = 0; round < 4; round++) {
        const name = `toggle_${round}`;
        const found = await Promise.all(Array.from({ length: changes }, (_, i) => (i % 2 === 0 ? store : peer).limits.updateShared(name, toggle)));
        expect(found.filter((f) => f === 'absent')).toHaveLength((changes + 1) / 2);
        expect(await store.limits.readShared(name)).toBe('on');
      }
    });

    it('two processes taking slots never both hold one, and between them take them all', async () => {
      const size = 5;
      const wantEach = 4;
      for (let round = 0; round < ROUNDS; round++) {
        // Every round's slots have expired by the next one: round 0 inserts, the others take over rows.
        const now = NOW + round * 10_000;
        const taker = async (on: Store, holder: string) => {
          const got: number[] = [];
          while (got.length < wantEach) {
            const slots = await take(holder, Math.min(2, wantEach - got.length), { size, now, expiresAt: now + 5_000 }, on);
            got.push(...slots);
            // A loser of a race for a slot gets fewer than it asked for: it stops once all are held.
            if (slots.length === 0 && (await on.limits.heldSlots('lookups', now)) === size) break;
          }
          return got;
        };
        const got = await Promise.all([taker(store, `here_1_${round}`), taker(peer, `peer_1_${round}`), taker(store, `here_2_${round}`), taker(peer, `peer_2_${round}`)]);
        expect(got.flat().sort()).toEqual([0, 1, 2, 3, 4]);
        expect(await store.limits.heldSlots('lookups', now)).toBe(size);
      }
    });
  });
});
