import type { AuditPort, AuditRecord, AuditRetention } from '../store.js';
import type { PgDatabase } from './pg-database.js';

const COLUMNS =
  'id, account_id AS "accountId", at, action, actor_type AS "actorType", actor_id AS "actorId", actor_name AS "actorName", target_id AS "targetId", source_ip AS "sourceIp", user_agent AS "userAgent", label';

/**
 * Accounts' audit logs, cut to their retention on every write so no sweeper is needed. Two writers
 * of one account may both cut it; each deletes only rows outside its own view of the retention, so
 * at worst an account keeps a few entries past `max` until its next write.
 */
export class PgAudit implements AuditPort {
  constructor(private readonly db: PgDatabase) {}

  async append(entry: Omit<AuditRecord, 'id'>, keep: AuditRetention): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query(
        'INSERT INTO audit_log (account_id, at, action, actor_type, actor_id, actor_name, target_id, source_ip, user_agent, label) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)',
        [entry.accountId, entry.at, entry.action, entry.actorType, entry.actorId, entry.actorName, entry.targetId, entry.sourceIp, entry.userAgent, entry.label ?? null],
      );
      await tx.query('DELETE FROM audit_log WHERE account_id = $1 AND at < $2', [entry.accountId, keep.since]);
      await tx.query(
        'DELETE FROM audit_log WHERE account_id = $1 AND id <= (SELECT id FROM audit_log WHERE account_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)',
        [entry.accountId, keep.max],
      );
    });
  }

  async list(accountId: string, page: { limit: number; before?: number }): Promise<AuditRecord[]> {
    const { rows } = await this.db.query<AuditRecord>(`SELECT ${COLUMNS} FROM audit_log WHERE account_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3`, [
      accountId,
      page.before ?? Number.MAX_SAFE_INTEGER,
      page.limit,
    ]);
    return rows;
  }
}
