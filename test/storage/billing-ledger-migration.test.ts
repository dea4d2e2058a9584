import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BillingStore } from '../../src/billing/billing-store.js';
import { chargeLedgerId } from '../../src/billing/ledger-ids.js';
import { migrate, type Db } from '../../src/storage/sqlite/open-database.js';

const MIGRATIONS = path.resolve('src/storage/sqlite/migrations');

let dir: string;
let db: Db;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-migration-'));
  db = new Database(path.join(dir, 'sluice.db'));
  db.pragma('foreign_keys = ON');
});
afterEach(() => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The schema as it was before migration 009: the same files, up to 008. */
function migrateTo008(): void {
  const before = path.join(dir, 'migrations-008');
  fs.mkdirSync(before);
  for (const file of fs.readdirSync(MIGRATIONS).filter((f) => /^00[1-8]-/.test(f))) fs.copyFileSync(path.join(MIGRATIONS, file), path.join(before, file));
  migrate(db, before);
}

describe('migration 009: billing rows name their ledger line by seq', () => {
  it('keeps every billing row and its ledger line, and a replayed batch is still refused', () => {
    migrateTo008();
    db.prepare("INSERT INTO accounts (seq, id, credits, status, created_at) VALUES (7, 'acc_1', 10, 'active', 0)").run();
    const first = chargeLedgerId('acc_1', 'job_a', '0:0');
    const second = chargeLedgerId('acc_1', 'job_b', '0:0');
    const line = db.prepare("INSERT INTO ledger (id, account_id, delta, reason, kind, job_id, created_at) VALUES (?, 'acc_1', ?, ?, ?, ?, ?)");
    line.run('crd_grant', 12, 'grant', null, null, 1);
    line.run(first, -2, 'charge', 'gender', 'job_a', 2);
    line.run(second, -1, 'charge', 'gender', 'job_b', 3);
    const row = db.prepare("INSERT INTO billing_cache (account_seq, kind, lookup_key, charged_at, ledger_id) VALUES (7, 'gender', ?, ?, ?)");
    row.run('a@x.io', 2, first);
    row.run('b@x.io', 2, first);
    row.run('c@x.io', 3, second);
    // A row whose ledger line is missing must not vanish: its key would be billable again.
    row.run('orphan@x.io', 3, 'chg_missing');

    migrate(db, MIGRATIONS);

    const ledger = db.prepare('SELECT seq, id, delta FROM ledger ORDER BY seq').all() as { seq: number; id: string; delta: number }[];
    expect(ledger.map((l) => [l.id, l.delta])).toEqual([['crd_grant', 12], [first, -2], [second, -1]]);
    const seqOf = new Map(ledger.map((l) => [l.id, l.seq]));
    const rows = db.prepare('SELECT lookup_key AS key, charged_at AS chargedAt, ledger_seq AS ledgerSeq FROM billing_cache ORDER BY lookup_key').all();
    expect(rows).toEqual([
      { key: 'a@x.io', chargedAt: 2, ledgerSeq: seqOf.get(first) },
      { key: 'b@x.io', chargedAt: 2, ledgerSeq: seqOf.get(first) },
      { key: 'c@x.io', chargedAt: 3, ledgerSeq: seqOf.get(second) },
      { key: 'orphan@x.io', chargedAt: 3, ledgerSeq: 0 },
    ]);

    const billing = new BillingStore(db);
    expect(billing.chargedKeys('acc_1', 'job_a')).toEqual(['a@x.io', 'b@x.io']);
    expect(billing.chargedKeys('acc_1', 'job_b')).toEqual(['c@x.io']);
    expect(billing.freshlyBilled('acc_1', 'gender', ['a@x.io', 'orphan@x.io', 'new@x.io'], 0)).toEqual(new Set(['a@x.io', 'orphan@x.io']));
    // job_a's batch 0:0 again: its line's id exists, so the ledger refuses it and nothing is spent.
    const replay = () => db.transaction(() => billing.chargeRows({ accountId: 'acc_1', kinds: ['gender'], items: [{ kind: 0, key: 'new@x.io', row: 0 }], jobId: 'job_a', batchId: '0:0', now: 4, since: 0 })).immediate();
    expect(replay).toThrow(/already charged/);
    expect(billing.requireAccount('acc_1').credits).toBe(10);
    // A new charge gets a line of its own, and its billing row names that line's seq.
    db.transaction(() => billing.chargeRows({ accountId: 'acc_1', kinds: ['gender'], items: [{ kind: 0, key: 'new@x.io', row: 0 }], jobId: 'job_c', batchId: '0:0', now: 5, since: 0 })).immediate();
    expect(billing.chargedKeys('acc_1', 'job_c')).toEqual(['new@x.io']);
    expect(db.prepare("SELECT l.id FROM billing_cache b JOIN ledger l ON l.seq = b.ledger_seq WHERE b.lookup_key = 'new@x.io'").get()).toEqual({ id: chargeLedgerId('acc_1', 'job_c', '0:0') });
  });
});
