import type { NewUsageRecord, UsagePage, UsagePort, UsageRecord } from '../usage-records.js';
import type { Db } from './open-database.js';

const COLUMNS =
  'id, account_id AS accountId, at, key_id AS keyId, method, route, status, credits, duration_ms AS durationMs, source_ip AS sourceIp';

/** The usage log: appended in batches by the API's writer, cut by its purge. */
export class SqliteUsage implements UsagePort {
  private readonly s;

  constructor(private readonly db: Db) {
    this.s = {
      insert: db.prepare(
        'INSERT INTO usage_log (account_id, at, key_id, method, route, status, credits, duration_ms, source_ip) VALUES (@accountId, @at, @keyId, @method, @route, @status, @credits, @durationMs, @sourceIp)',
      ),
      page: db.prepare(`SELECT ${COLUMNS} FROM usage_log WHERE account_id = ? AND id < ? AND at >= ? ORDER BY id DESC LIMIT ?`),
      dropOld: db.prepare('DELETE FROM usage_log WHERE at < ?'),
      dropBeyond: db.prepare(
        'DELETE FROM usage_log WHERE account_id = ? AND id <= (SELECT id FROM usage_log WHERE account_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)',
      ),
    };
  }

  async append(entries: readonly NewUsageRecord[]): Promise<void> {
    this.db.transaction(() => {
      for (const e of entries) this.s.insert.run(e);
    })();
  }

  async list(accountId: string, page: UsagePage): Promise<UsageRecord[]> {
    return this.s.page.all(accountId, page.before ?? Number.MAX_SAFE_INTEGER, page.since ?? 0, page.limit) as UsageRecord[];
  }

  async purge(before: number, accounts: readonly string[], keep: number): Promise<number> {
    return this.db.transaction(() => {
      let n = this.s.dropOld.run(before).changes;
      for (const a of accounts) n += this.s.dropBeyond.run(a, a, keep).changes;
      return n;
    })();
  }
}
