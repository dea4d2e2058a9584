import type { RepoScanLease, RepoScanRecord, RepoScansPort } from '../repo-scan-records.js';
import type { Db } from './open-database.js';

const COLUMNS =
  'id, account_id AS accountId, url, type, config, status, error_code AS errorCode, result, lease_epoch AS leaseEpoch, attempts, created_at AS createdAt, updated_at AS updatedAt';

/** Code-host leak scans. A claim is one UPDATE: SQLite's single writer makes it exclusive. */
export class SqliteRepoScans implements RepoScansPort {
  private readonly s;

  constructor(db: Db) {
    this.s = {
      insert: db.prepare("INSERT INTO repo_scans (id, account_id, url, type, config, status, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 'processing', ?, ?)"),
      get: db.prepare(`SELECT ${COLUMNS} FROM repo_scans WHERE id = ? AND account_id = ?`),
      claim: db.prepare(
        `UPDATE repo_scans SET lease_owner = ?, lease_expires = ?, lease_epoch = lease_epoch + 1, attempts = attempts + 1, updated_at = ?
         WHERE id = (SELECT id FROM repo_scans WHERE status = 'processing' AND (lease_expires IS NULL OR lease_expires < ?) ORDER BY created_at, id LIMIT 1)
         RETURNING ${COLUMNS}`,
      ),
      renew: db.prepare("UPDATE repo_scans SET lease_expires = ?, updated_at = ? WHERE id = ? AND lease_epoch = ? AND status = 'processing'"),
      finish: db.prepare(
        "UPDATE repo_scans SET status = ?, error_code = ?, result = ?, lease_owner = NULL, lease_expires = NULL, updated_at = ? WHERE id = ? AND lease_epoch = ? AND status = 'processing'",
      ),
    };
  }

  async create(input: { id: string; accountId: string; url: string; type: number; config: string; now: number }): Promise<void> {
    this.s.insert.run(input.id, input.accountId, input.url, input.type, input.config, input.now, input.now);
  }

  async get(accountId: string, id: string): Promise<RepoScanRecord | undefined> {
    return this.s.get.get(id, accountId) as RepoScanRecord | undefined;
  }

  async claim(owner: string, now: number, leaseMs: number): Promise<{ scan: RepoScanRecord; lease: RepoScanLease } | undefined> {
    const scan = this.s.claim.get(owner, now + leaseMs, now, now) as RepoScanRecord | undefined;
    return scan ? { scan, lease: { owner, epoch: scan.leaseEpoch } } : undefined;
  }

  async renew(id: string, lease: RepoScanLease, now: number, leaseMs: number): Promise<boolean> {
    return this.s.renew.run(now + leaseMs, now, id, lease.epoch).changes === 1;
  }

  async finish(id: string, lease: RepoScanLease, end: { status: 'completed' | 'failed'; errorCode: string | null; result: string | null }, now: number): Promise<boolean> {
    return this.s.finish.run(end.status, end.errorCode, end.result, now, id, lease.epoch).changes === 1;
  }
}
