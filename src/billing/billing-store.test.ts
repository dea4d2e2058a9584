import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../storage/sqlite/open-database.js';
import { BillingStore } from '../storage/records.js';

let dir: string;
let db: Db;
let billing: BillingStore;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-billing-'));
  db = openDatabase(path.join(dir, 'sluice.db'), { synchronous: 'NORMAL', busyTimeoutMs: 1000 });
  billing = new BillingStore(db);
});
afterEach(() => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const KINDS = ['gender', 'company', 'phone_breaches'];
const charge = (accountId: string, items: { kind: number; key: string; row: number }[], batchId = 'b1') =>
  db.transaction(() => billing.chargeRows({ accountId, kinds: KINDS, items, jobId: 'job_1', batchId, now: 1_000, since: 0 })).immediate();

describe('BillingStore.chargeRows', () => {
  it('pays for a row whole or not at all when the balance runs out inside it', () => {
    const account = billing.createAccount({ credits: 3, now: 0 });
    const result = charge(account.id, [
      { kind: 0, key: 'a@x.com', row: 0 },
      { kind: 1, key: 'name:acme', row: 0 },
      { kind: 0, key: 'b@x.com', row: 1 },
      { kind: 1, key: 'name:globex', row: 1 },
      { kind: 2, key: '+4930123', row: 1 },
    ]);
    // Row 0 costs 2; row 1 needs 3 with 1 left: none of row 1 is charged, not even its first item.
    expect(result.unpaidRow).toBe(1);
    expect(result.total).toBe(2);
    expect(result.charged.map((s) => [...s])).toEqual([['a@x.com'], ['name:acme'], []]);
    expect(billing.requireAccount(account.id).credits).toBe(1);
    expect(billing.freshlyBilled(account.id, 'gender', ['a@x.com', 'b@x.com'], 0)).toEqual(new Set(['a@x.com']));
  });

  it('writes one ledger line per kind, each with an id of its own, and a replayed batch is refused', () => {
    const account = billing.createAccount({ credits: 10, now: 0 });
    charge(account.id, [
      { kind: 0, key: 'a@x.com', row: 0 },
      { kind: 2, key: '+4930123', row: 0 },
      { kind: 2, key: '+4930999', row: 1 },
    ]);
    const lines = billing.ledger(account.id).filter((l) => l.reason === 'charge');
    expect(lines.map((l) => [l.kind, l.delta])).toEqual(expect.arrayContaining([['gender', -1], ['phone_breaches', -2]]));
    expect(lines).toHaveLength(2);
    expect(new Set(lines.map((l) => l.id)).size).toBe(2);
    expect(() => charge(account.id, [{ kind: 0, key: 'c@x.com', row: 0 }])).toThrow(/already charged/);
    expect(billing.requireAccount(account.id).credits).toBe(7);
  });

  it('charges a key once per kind: a repeat in the batch or a key paid for in the window is free, per kind', () => {
    const account = billing.createAccount({ credits: 10, now: 0 });
    charge(account.id, [{ kind: 0, key: 'same', row: 0 }]);
    const result = charge(account.id, [
      { kind: 0, key: 'same', row: 0 },
      { kind: 1, key: 'same', row: 0 },
      { kind: 1, key: 'same', row: 1 },
    ], 'b2');
    expect(result.charged.map((s) => [...s])).toEqual([[], ['same'], []]);
    expect(result.total).toBe(1);
  });

  it('takes keys the caller found billed as billed, and still looks up the others in the cache', () => {
    const account = billing.createAccount({ credits: 10, now: 0 });
    charge(account.id, [{ kind: 0, key: 'paid@x.com', row: 0 }]);
    const result = db
      .transaction(() =>
        billing.chargeRows({
          accountId: account.id,
          kinds: KINDS,
          items: [
            { kind: 0, key: 'known@x.com', row: 0 },
            { kind: 0, key: 'paid@x.com', row: 1 },
            { kind: 0, key: 'new@x.com', row: 2 },
          ],
          jobId: 'job_1',
          batchId: 'b2',
          now: 2_000,
          since: 0,
          // As if another transaction had billed known@x.com between the caller's query and this one.
          billed: [new Set(['known@x.com']), new Set(), new Set()],
        }),
      )
      .immediate();
    expect(result.charged.map((s) => [...s])).toEqual([['new@x.com'], [], []]);
    expect(billing.requireAccount(account.id).credits).toBe(8);
  });
});
