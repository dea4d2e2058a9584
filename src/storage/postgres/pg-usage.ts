import type { NewUsageRecord, UsagePage, UsagePort, UsageRecord } from '../usage-records.js';
import type { PgDatabase } from './pg-database.js';

const COLUMNS =
  'id, account_id AS "accountId", at, key_id AS "keyId", method, route, status, credits, duration_ms AS "durationMs", source_ip AS "sourceIp"';

/** The usage log: appended in batches by the API's writer (one statement a batch), cut by its purge. */
export class PgUsage implements UsagePort {
  constructor(private readonly db: PgDatabase) {}

  async append(entries: readonly NewUsageRecord[]): Promise<void> {
    if (entries.length === 0) return;
    const column = <K extends keyof NewUsageRecord>(k: K) => entries.map((e) => e[k]);
    await this.db.query(
      `INSERT INTO usage_log (account_id, at, key_id, method, route, status, credits, duration_ms, source_ip)
       SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::int[], $7::int[], $8::float8[], $9::text[])`,
      [column('accountId'), column('at'), column('keyId'), column('method'), column('route'), column('status'), column('credits'), column('durationMs'), column('sourceIp')],
    );
  }

  async list(accountId: string, page: UsagePage): Promise<UsageRecord[]> {
    const { rows } = await this.db.query<UsageRecord>(
      `SELECT ${COLUMNS} FROM usage_log WHERE account_id = $1 AND id < $2 AND at >= $3 ORDER BY id DESC LIMIT $4`,
      [accountId, page.before ?? Number.MAX_SAFE_INTEGER, page.since ?? 0, page.limit],
    );
    return rows;
  }

  async purge(before: number, accounts: readonly string[], keep: number): Promise<number> {
    let n = (await this.db.query('DELETE FROM usage_log WHERE at < $1', [before])).rowCount;
    for (const a of accounts) {
      n += (
        await this.db.query('DELETE FROM usage_log WHERE account_id = $1 AND id <= (SELECT id FROM usage_log WHERE account_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)', [a, keep])
      ).rowCount;
    }
    return n;
  }
}
