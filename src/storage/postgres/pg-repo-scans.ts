import type { RepoScanLease, RepoScanRecord, RepoScansPort } from '../repo-scan-records.js';
import type { PgDatabase } from './pg-database.js';

const COLUMNS =
  'id, account_id AS "accountId", url, type, config, status, error_code AS "errorCode", result, lease_epoch AS "leaseEpoch", attempts, created_at AS "createdAt", updated_at AS "updatedAt"';

/** Code-host leak scans. Claims race with FOR UPDATE SKIP LOCKED; every later write carries the lease epoch. */
export class PgRepoScans implements RepoScansPort {
  constructor(private readonly db: PgDatabase) {}

  async create(input: { id: string; accountId: string; url: string; type: number; config: string; now: number }): Promise<void> {
    await this.db.query("INSERT INTO repo_scans (id, account_id, url, type, config, status, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, 'processing', $6, $6)", [
      input.id,
      input.accountId,
      input.url,
      input.type,
      input.config,
      input.now,
    ]);
  }

  async get(accountId: string, id: string): Promise<RepoScanRecord | undefined> {
    const { rows } = await this.db.query<RepoScanRecord>(`SELECT ${COLUMNS} FROM repo_scans WHERE id = $1 AND account_id = $2`, [id, accountId]);
    return rows[0];
  }

  async claim(owner: string, now: number, leaseMs: number): Promise<{ scan: RepoScanRecord; lease: RepoScanLease } | undefined> {
    const { rows } = await this.db.query<RepoScanRecord>(
      `UPDATE repo_scans SET lease_owner = $1, lease_expires = $2, lease_epoch = lease_epoch + 1, attempts = attempts + 1, updated_at = $3
       WHERE id = (SELECT id FROM repo_scans WHERE status = 'processing' AND (lease_expires IS NULL OR lease_expires < $3) ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
       RETURNING ${COLUMNS}`,
      [owner, now + leaseMs, now],
    );
    const scan = rows[0];
    return scan ? { scan, lease: { owner, epoch: scan.leaseEpoch } } : undefined;
  }

  async renew(id: string, lease: RepoScanLease, now: number, leaseMs: number): Promise<boolean> {
    const { rowCount } = await this.db.query("UPDATE repo_scans SET lease_expires = $1, updated_at = $2 WHERE id = $3 AND lease_epoch = $4 AND status = 'processing'", [
      now + leaseMs,
      now,
      id,
      lease.epoch,
    ]);
    return rowCount === 1;
  }

  async finish(id: string, lease: RepoScanLease, end: { status: 'completed' | 'failed'; errorCode: string | null; result: string | null }, now: number): Promise<boolean> {
    const { rowCount } = await this.db.query(
      "UPDATE repo_scans SET status = $1, error_code = $2, result = $3, lease_owner = NULL, lease_expires = NULL, updated_at = $4 WHERE id = $5 AND lease_epoch = $6 AND status = 'processing'",
      [end.status, end.errorCode, end.result, now, id, lease.epoch],
    );
    return rowCount === 1;
  }
}
