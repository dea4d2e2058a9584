import type { QuotaUsage, QuotaUsagePort } from '../quota-usage.js';
import type { Db } from './open-database.js';

/** An account's use in one statement: one read transaction, so the counts are of one moment. */
export class SqliteQuotaUsage implements QuotaUsagePort {
  private readonly usageQuery;

  constructor(db: Db) {
    this.usageQuery = db.prepare(`
      SELECT
        (SELECT count(*) FROM target_lists WHERE account_id = @a) AS lists,
        (SELECT count(*) FROM monitors WHERE account_id = @a) AS monitors,
        (SELECT coalesce(sum(target_count), 0) FROM target_lists WHERE account_id = @a)
          + (SELECT coalesce(sum(target_count), 0) FROM monitors WHERE account_id = @a) AS targets,
        max((SELECT coalesce(max(target_count), 0) FROM target_lists WHERE account_id = @a),
            (SELECT coalesce(max(target_count), 0) FROM monitors WHERE account_id = @a)) AS largestList,
        (SELECT coalesce(sum(input_bytes), 0) FROM jobs WHERE account_id = @a AND deleted_at IS NULL) AS storedBytes,
        (SELECT count(*) FROM api_keys WHERE account_id = @a AND revoked_at IS NULL) AS apiKeys`);
  }

  async usage(accountId: string): Promise<QuotaUsage> {
    return this.usageQuery.get({ a: accountId }) as QuotaUsage;
  }
}
