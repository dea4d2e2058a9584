import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BillingKeys } from '../../src/storage/billing-key.js';
import { migrationFiles } from '../../src/storage/migration-files.js';
import { migrate, registerBillingHash, type Db } from '../../src/storage/sqlite/open-database.js';

const MIGRATIONS = migrationFiles(new URL('../../src/storage/sqlite/migrations/', import.meta.url));

let dir: string;
let db: Db;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-migration-'));
  db = new Database(path.join(dir, 'sluice.db'));
  db.pragma('foreign_keys = ON');
  registerBillingHash(db, new BillingKeys(Buffer.alloc(32, 7)));
});
afterEach(() => {
  db.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('SQLite migration 035: monitors of every spec type', () => {
  it('widens the type CHECK of lists and monitors in place: existing monitors keep their targets, runs and snapshots, other connections see the new rule, and unknown types are still refused', () => {
    migrate(db, MIGRATIONS.filter((f) => f.version < 35));
    db.prepare("INSERT INTO accounts (seq, id, credits, status, created_at) VALUES (1, 'acc_1', 10, 'active', 0)").run();
    const monitor = db.prepare(
      "INSERT INTO monitors (id, account_id, name, type, frequency, tracked_fields, change_detection, status, schedule_anchor, next_run_at, created_at, updated_at) VALUES (?, 'acc_1', 'm', ?, 'weekly', '[]', 'any_change', 'active', 0, 0, 0, 0)",
    );
    monitor.run('mon_email', 'email');
    db.prepare("INSERT INTO monitor_targets (monitor_id, target, added_at) VALUES ('mon_email', 'a@example.com', 0)").run();
    db.prepare("INSERT INTO monitor_runs (id, monitor_id, account_id, triggered_by, status, created_at) VALUES ('run_1', 'mon_email', 'acc_1', 'manual', 'completed', 0)").run();
    expect(() => monitor.run('mon_ip', 'ip')).toThrow(/CHECK constraint failed/);
    const other = new Database(path.join(dir, 'sluice.db'));
    other.prepare('SELECT count(*) FROM monitors').get();

    migrate(db, MIGRATIONS);

    monitor.run('mon_ip', 'ip');
    other.prepare(
      "INSERT INTO target_lists (id, account_id, name, type, status, created_at) VALUES ('lst_1', 'acc_1', 'l', 'ip', 'ready', 0)",
    ).run();
    expect(() => monitor.run('mon_x', 'telepathy')).toThrow(/CHECK constraint failed/);
    expect(() => other.prepare("INSERT INTO target_lists (id, account_id, name, type, status, created_at) VALUES ('lst_2', 'acc_1', 'l', 'fax', 'ready', 0)").run()).toThrow(/CHECK constraint failed/);
    expect(db.prepare('SELECT count(*) AS n FROM monitor_targets').get()).toEqual({ n: 1 });
    expect(db.prepare('SELECT count(*) AS n FROM monitor_runs').get()).toEqual({ n: 1 });
    expect(db.pragma('integrity_check')).toEqual([{ integrity_check: 'ok' }]);
    expect(db.pragma('foreign_key_check')).toEqual([]);
    other.close();
  });
});
