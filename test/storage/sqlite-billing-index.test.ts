import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BillingKeys, type BillingHash } from '../../src/storage/billing-key.js';
import { openDatabase, type Db } from '../../src/storage/sqlite/open-database.js';
import { SqliteBillingIndex } from '../../src/storage/sqlite/sqlite-billing-index.js';

/**
 * The billing log and its merges (migration 020), on two connections to one file, as two processes
 * would use it: what one commits the other's next check sees, across merges by either, and what a
 * rolled-back transaction appended is never taken for a charge.
 */
const SEAL_KEY = Buffer.alloc(32, 3);
const NAMES = new BillingKeys(SEAL_KEY);
const ACCOUNT = 1;
const SINCE = 100;

let dir: string;
let a: Db;
let b: Db;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-billing-index-'));
  const file = path.join(dir, 'sluice.db');
  const options = { synchronous: 'NORMAL' as const, busyTimeoutMs: 5_000, sealKey: SEAL_KEY };
  a = openDatabase(file, options);
  b = openDatabase(file, options);
});
afterEach(() => {
  a.close();
  b.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const hashes = (keys: readonly string[], kind = 'gender'): BillingHash[] => keys.map((k) => NAMES.hash(kind, k));
const keysOf = (n: number, prefix: string): string[] => Array.from({ length: n }, (_, i) => `${prefix}${i}@x.io`);

/** Checks then records in one write transaction, as a checkpoint does; answers the keys found billed. */
function charge(db: Db, index: SqliteBillingIndex, keys: readonly string[], now: number, kind = 'gender'): string[] {
  const found = db
    .transaction(() => {
      const billed = index.billedAmong(ACCOUNT, kind, hashes(keys, kind), SINCE);
      if (billed.size === 0) index.record(ACCOUNT, kind, hashes(keys, kind), now, 1);
      return [...billed].map((i) => keys[i]!);
    })
    .immediate();
  index.afterCommit();
  return found;
}

function billed(index: SqliteBillingIndex, keys: readonly string[], since = SINCE, kind = 'gender'): string[] {
  return [...index.billedAmong(ACCOUNT, kind, hashes(keys, kind), since)].sort((x, y) => x - y).map((i) => keys[i]!);
}

const count = (db: Db, table: string): number => (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;

describe('the SQLite billing log', () => {
  it("shows one connection's charges to the other, before and after either merges", () => {
    const onA = new SqliteBillingIndex(a, 5);
    const onB = new SqliteBillingIndex(b, 5);
    const first = keysOf(3, 'first');
    expect(charge(a, onA, first, 200)).toEqual([]);
    expect(count(a, 'billing_log')).toBe(3);
    expect(billed(onB, [...first, 'other@x.io'])).toEqual(first);
    // B's charge takes the log to 6 rows, past 5: B merges, and A's copy predates the merge.
    expect(charge(b, onB, keysOf(3, 'second'), 201)).toEqual([]);
    expect(count(a, 'billing_log')).toBe(0);
    expect(count(a, 'billing_cache')).toBe(6);
    expect(billed(onA, [...first, ...keysOf(3, 'second'), 'other@x.io'])).toEqual([...first, ...keysOf(3, 'second')]);
    // A charge after the merge is in the log again, and both see it; a repeat is refused on both.
    expect(charge(a, onA, ['third@x.io'], 202)).toEqual([]);
    expect(count(a, 'billing_log')).toBe(1);
    expect(billed(onB, ['third@x.io', 'first0@x.io'])).toEqual(['third@x.io', 'first0@x.io']);
    expect(charge(b, onB, ['third@x.io', 'fourth@x.io'], 203)).toEqual(['third@x.io']);
    expect(charge(a, onA, ['second1@x.io'], 203)).toEqual(['second1@x.io']);
  });

  it('keys the kind and the window: another kind is unbilled, a charge before `since` has run out', () => {
    const index = new SqliteBillingIndex(a, 1_000);
    charge(a, index, ['old@x.io'], 50);
    charge(a, index, ['new@x.io'], 150);
    expect(billed(index, ['old@x.io', 'new@x.io'])).toEqual(['new@x.io']);
    expect(billed(index, ['old@x.io', 'new@x.io'], 10)).toEqual(['old@x.io', 'new@x.io']);
    expect(billed(index, ['new@x.io'], SINCE, 'company')).toEqual([]);
    // Charged again once its window ran out: after a merge the latest charge is the one kept.
    expect(charge(a, index, ['old@x.io'], 300)).toEqual([]);
    a.transaction(() => index.mergeAll()).immediate();
    expect(count(a, 'billing_cache')).toBe(2);
    expect(billed(index, ['old@x.io'], 250)).toEqual(['old@x.io']);
  });

  it('never takes what a rolled-back transaction appended, even when its seqs go to another charge', () => {
    const onA = new SqliteBillingIndex(a, 1_000);
    const onB = new SqliteBillingIndex(b, 1_000);
    charge(a, onA, ['seen@x.io'], 200);
    expect(billed(onA, ['seen@x.io'])).toEqual(['seen@x.io']);
    const rolledBack = a.transaction(() => {
      expect(onA.billedAmong(ACCOUNT, 'gender', hashes(['ghost@x.io']), SINCE).size).toBe(0);
      onA.record(ACCOUNT, 'gender', hashes(['ghost@x.io']), 201, 1);
      throw new Error('the checkpoint failed after its charges');
    });
    expect(() => rolledBack.immediate()).toThrow(/checkpoint failed/);
    // Told of a commit that did not happen, the index finds the rows missing and takes nothing.
    onA.afterCommit();
    // B's charge gets the seq the rolled-back row had; A must read it, and must not see the ghost.
    charge(b, onB, ['real@x.io'], 202);
    expect(billed(onA, ['ghost@x.io', 'real@x.io', 'seen@x.io'])).toEqual(['real@x.io', 'seen@x.io']);
    expect(charge(a, onA, ['ghost@x.io'], 203)).toEqual([]);
  });

  it('a key found unpaid by a plan, then charged by another connection, is billed at the checkpoint, before and after a merge', () => {
    const onA = new SqliteBillingIndex(a, 4);
    const onB = new SqliteBillingIndex(b, 4);
    // A's plan finds both unpaid (and remembers it); B charges one of them meanwhile.
    expect(billed(onA, ['k1@x.io', 'k2@x.io'])).toEqual([]);
    expect(charge(b, onB, ['k1@x.io'], 200)).toEqual([]);
    expect(charge(a, onA, ['k1@x.io', 'k2@x.io'], 201)).toEqual(['k1@x.io']);
    // Again with a merge between the plan and the checkpoint: B's charge is in billing_cache only.
    expect(billed(onA, ['k3@x.io', 'k4@x.io'])).toEqual([]);
    expect(charge(b, onB, ['k3@x.io', 'k5@x.io', 'k6@x.io', 'k7@x.io'], 202)).toEqual([]);
    expect(count(a, 'billing_log')).toBe(0);
    expect(charge(a, onA, ['k3@x.io', 'k4@x.io'], 203)).toEqual(['k3@x.io']);
    // A check with an older `since` than the one remembered cannot lean on it.
    expect(charge(a, onA, ['k4@x.io'], 204)).toEqual([]);
    expect(charge(b, onB, ['k8@x.io', 'k9@x.io', 'k10@x.io'], 205)).toEqual([]);
    expect(count(a, 'billing_log')).toBe(0);
    expect(billed(onA, ['k4@x.io'], 300)).toEqual([]);
    expect(billed(onA, ['k4@x.io'], 100)).toEqual(['k4@x.io']);
  });

  it('merges 10,000 charges in order, and every one stays billed', () => {
    const index = new SqliteBillingIndex(a, 4_000);
    const keys = keysOf(10_000, 'bulk');
    for (let at = 0; at < keys.length; at += 1_000) expect(charge(a, index, keys.slice(at, at + 1_000), 200)).toEqual([]);
    expect(count(a, 'billing_cache') + count(a, 'billing_log')).toBe(10_000);
    expect(count(a, 'billing_log')).toBeLessThan(4_000);
    expect(billed(new SqliteBillingIndex(b), keys)).toHaveLength(10_000);
  });
});
