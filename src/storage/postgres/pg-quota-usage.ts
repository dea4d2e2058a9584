import type { QuotaUsage, QuotaUsagePort } from '../quota-usage.js';
import type { PgDatabase } from './pg-database.js';

/** As SQLite's: one statement, so one snapshot. Sums come back as float8, not numeric strings. */
const USAGE = `
  SELECT
    (SELECT count(*)::float8 FROM target_lists WHERE account_id = $1) AS lists,
    (SELECT count(*)::float8 FROM monitors WHERE account_id = $1) AS monitors,
    (SELECT coalesce(sum(target_count), 0)::float8 FROM target_lists WHERE account_id = $1)
      + (SELECT coalesce(sum(target_count), 0)::float8 FROM monitors WHERE account_id = $1) AS targets,
    greatest((SELECT coalesce(max(target_count), 0)::float8 FROM target_lists WHERE account_id = $1),
             (SELECT coalesce(max(target_count), 0)::float8 FROM monitors WHERE account_id = $1)) AS "largestList",
    (SELECT coalesce(sum(input_bytes), 0)::float8 FROM jobs WHERE account_id = $1 AND deleted_at IS NULL) AS "storedBytes",
    (SELECT count(*)::float8 FROM api_keys WHERE account_id = $1 AND revoked_at IS NULL) AS "apiKeys"`;

export class PgQuotaUsage implements QuotaUsagePort {
  constructor(private readonly db: PgDatabase) {}

  async usage(accountId: string): Promise<QuotaUsage> {
    const { rows } = await this.db.query<QuotaUsage>(USAGE, [accountId]);
    return rows[0]!;
  }
}
