import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BillingKeys } from '../../src/storage/billing-key.js';
import { chargeLedgerId } from '../../src/storage/ledger-ids.js';
import { migrationFiles } from '../../src/storage/migration-files.js';
import { migrate, registerBillingHash, type Db } from '../../src/storage/sqlite/open-database.js';
import { SqliteBilling } from '../../src/storage/sqlite/sqlite-billing.js';
import { SqliteOutbox } from '../../src/storage/sqlite/sqlite-outbox.js';
import { SqliteResults } from '../../src/storage/sqlite/sqlite-results.js';

const MIGRATIONS = migrationFiles(new URL('../../src/storage/sqlite/migrations/', import.meta.url));
const NAMES = new BillingKeys(Buffer.alloc(32, 7));

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
  expect(MIGRATIONS.map((f) => f.version)).toContain(9);
  migrate(db, MIGRATIONS.filter((f) => f.version <= 8));
}

describe('migration 009: billing rows name their ledger line by seq', () => {
  it('keeps every billing row and its ledger line, and a replayed batch is still refused', async () => {
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

    // Up to 016: the rows as 009 left them, before 017 hashed their keys.
    migrate(db, MIGRATIONS.filter((f) => f.version < 17));

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

    registerBillingHash(db, NAMES);
    migrate(db, MIGRATIONS);
    const billing = new SqliteBilling(db, new SqliteResults(db), new SqliteOutbox(db), NAMES);
    const names = (keys: string[]) => keys.map((k) => NAMES.name('gender', k)).sort();
    expect(await billing.chargedKeys('acc_1', 'job_a')).toEqual(names(['a@x.io', 'b@x.io']));
    expect(await billing.chargedKeys('acc_1', 'job_b')).toEqual(names(['c@x.io']));
    expect(await billing.freshlyBilled('acc_1', 'gender', ['a@x.io', 'orphan@x.io', 'new@x.io'], 0)).toEqual(new Set(['a@x.io', 'orphan@x.io']));
    // job_a's batch 0:0 again: its line's id exists, so the ledger refuses it and nothing is spent.
    const charge = (jobId: string, now: number) => () =>
      db.transaction(() => billing.chargeKeysSync({ accountId: 'acc_1', jobId, kinds: ['gender'], keys: [['new@x.io']], batchId: '0:0', since: 0, now }, { jobId, chunkIndex: 0 })).immediate();
    expect(charge('job_a', 4)).toThrow(/already charged/);
    expect((await billing.requireAccount('acc_1')).credits).toBe(10);
    expect((await billing.ledger('acc_1')).map((l) => l.id)).toEqual(['crd_grant', first, second]);
    expect(await billing.freshlyBilled('acc_1', 'gender', ['new@x.io'], 0)).toEqual(new Set());
    // A new charge gets a line of its own, and its billing row names that line's seq.
    expect(charge('job_c', 5)()).toEqual({ ok: true });
    expect((await billing.requireAccount('acc_1')).credits).toBe(9);
    expect(await billing.chargedKeys('acc_1', 'job_c')).toEqual(names(['new@x.io']));
    expect(db.prepare('SELECT l.id FROM billing_cache b JOIN ledger l ON l.seq = b.ledger_seq WHERE b.key_hash = ?').get(NAMES.hash('gender', 'new@x.io'))).toEqual({ id: chargeLedgerId('acc_1', 'job_c', '0:0') });
  });
});
